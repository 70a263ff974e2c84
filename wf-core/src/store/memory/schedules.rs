//! The `schedules` table of the memory store.

use super::tables::{MemoryTx, Result};
use crate::store::records::ScheduleRow;
use crate::store::rules::tx::ScheduleTable;

impl ScheduleTable for MemoryTx {
    async fn insert_schedule(&mut self, row: &ScheduleRow) -> Result<bool> {
        if self.schedules.contains_key(&row.schedule_id) {
            return Ok(false);
        }
        let first = ScheduleRow {
            version: 1,
            ..row.clone()
        };
        self.schedules.insert(row.schedule_id.clone(), first);
        Ok(true)
    }

    async fn update_schedule(&mut self, row: &ScheduleRow) -> Result<bool> {
        Ok(self.schedules.update(&row.schedule_id, |stored| {
            if stored.version != row.version {
                return false;
            }
            stored.data = row.data.clone();
            stored.next_check_ms = row.next_check_ms;
            stored.version += 1;
            true
        }))
    }

    async fn get_schedule(&mut self, schedule_id: &str) -> Result<Option<ScheduleRow>> {
        Ok(self.schedules.get(&schedule_id.to_string()).cloned())
    }

    async fn list_schedules(&mut self) -> Result<Vec<ScheduleRow>> {
        Ok(self.schedules.values().cloned().collect())
    }

    async fn delete_schedule(&mut self, schedule_id: &str) -> Result<bool> {
        Ok(self.schedules.remove(&schedule_id.to_string()))
    }

    async fn due_schedules(&mut self, now_ms: i64, max: usize) -> Result<Vec<ScheduleRow>> {
        let mut due: Vec<&ScheduleRow> = self
            .schedules
            .values()
            .filter(|r| r.next_check_ms.is_some_and(|t| t <= now_ms))
            .collect();
        due.sort_by_key(|r| r.next_check_ms);
        Ok(due.into_iter().take(max).cloned().collect())
    }
}
