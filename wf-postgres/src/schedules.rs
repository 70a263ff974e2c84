//! The `schedules` table of the PostgreSQL store.

use crate::rows::schedule_row;
use crate::tx::{PostgresTx, Result};
use wf_core::store::{ScheduleRow, ScheduleTable};

impl ScheduleTable for PostgresTx {
    async fn insert_schedule(&mut self, row: &ScheduleRow) -> Result<bool> {
        let inserted = self
            .execute(
                "INSERT INTO schedules (schedule_id, data, version, next_check_ms) \
                 VALUES ($1, $2, 1, $3) ON CONFLICT DO NOTHING",
                &[&row.schedule_id, &row.data.as_bytes(), &row.next_check_ms],
                "create a schedule",
            )
            .await?;
        self.notes.work |= inserted > 0;
        Ok(inserted > 0)
    }

    async fn update_schedule(&mut self, row: &ScheduleRow) -> Result<bool> {
        let n = self
            .execute(
                "UPDATE schedules SET data = $3, next_check_ms = $4, version = version + 1 \
                 WHERE schedule_id = $1 AND version = $2",
                &[
                    &row.schedule_id,
                    &(row.version.min(i64::MAX as u64) as i64),
                    &row.data.as_bytes(),
                    &row.next_check_ms,
                ],
                "update a schedule",
            )
            .await?;
        self.notes.work |= n == 1;
        Ok(n == 1)
    }

    async fn get_schedule(&mut self, schedule_id: &str) -> Result<Option<ScheduleRow>> {
        let row = self
            .query_opt(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules \
                 WHERE schedule_id = $1",
                &[&schedule_id],
                "read a schedule",
            )
            .await?;
        row.as_ref().map(schedule_row).transpose()
    }

    async fn list_schedules(&mut self) -> Result<Vec<ScheduleRow>> {
        let rows = self
            .query(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules \
                 ORDER BY schedule_id",
                &[],
                "list schedules",
            )
            .await?;
        rows.iter().map(schedule_row).collect()
    }

    async fn delete_schedule(&mut self, schedule_id: &str) -> Result<bool> {
        let n = self
            .execute(
                "DELETE FROM schedules WHERE schedule_id = $1",
                &[&schedule_id],
                "delete a schedule",
            )
            .await?;
        Ok(n == 1)
    }

    async fn due_schedules(&mut self, now_ms: i64, max: usize) -> Result<Vec<ScheduleRow>> {
        let max = max.min(i64::MAX as usize) as i64;
        let rows = self
            .query(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules \
                 WHERE next_check_ms IS NOT NULL AND next_check_ms <= $1 \
                 ORDER BY next_check_ms LIMIT $2",
                &[&now_ms, &max],
                "find due schedules",
            )
            .await?;
        rows.iter().map(schedule_row).collect()
    }
}
