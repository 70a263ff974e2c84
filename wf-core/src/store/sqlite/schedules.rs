//! The `schedules` table of the SQLite store.

use super::rows::{db, schedule_row};
use super::tx::{Result, SqliteTx};
use crate::store::records::ScheduleRow;
use crate::store::rules::tx::ScheduleTable;
use rusqlite::{params, OptionalExtension};

impl ScheduleTable for SqliteTx {
    async fn insert_schedule(&mut self, row: &ScheduleRow) -> Result<bool> {
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO schedules (schedule_id, data, version, next_check_ms) \
                 VALUES (?1, ?2, 1, ?3)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    row.schedule_id,
                    row.data.as_bytes(),
                    row.next_check_ms
                ])
            })
            .map_err(db("create a schedule"))?;
        Ok(inserted > 0)
    }

    async fn update_schedule(&mut self, row: &ScheduleRow) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE schedules SET data = ?3, next_check_ms = ?4, version = version + 1 \
                 WHERE schedule_id = ?1 AND version = ?2",
            )
            .and_then(|mut s| {
                s.execute(params![
                    row.schedule_id,
                    row.version as i64,
                    row.data.as_bytes(),
                    row.next_check_ms
                ])
            })
            .map_err(db("update a schedule"))?;
        Ok(n == 1)
    }

    async fn get_schedule(&mut self, schedule_id: &str) -> Result<Option<ScheduleRow>> {
        self.conn
            .prepare_cached(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules \
                 WHERE schedule_id = ?1",
            )
            .and_then(|mut s| s.query_row([schedule_id], schedule_row).optional())
            .map_err(db("read a schedule"))
    }

    async fn list_schedules(&mut self) -> Result<Vec<ScheduleRow>> {
        self.conn
            .prepare_cached(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules \
                 ORDER BY schedule_id",
            )
            .and_then(|mut s| s.query_map([], schedule_row)?.collect())
            .map_err(db("list schedules"))
    }

    async fn delete_schedule(&mut self, schedule_id: &str) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM schedules WHERE schedule_id = ?1")
            .and_then(|mut s| s.execute([schedule_id]))
            .map_err(db("delete a schedule"))?;
        Ok(n == 1)
    }

    async fn due_schedules(&mut self, now_ms: i64, max: usize) -> Result<Vec<ScheduleRow>> {
        self.conn
            .prepare_cached(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules \
                 WHERE next_check_ms IS NOT NULL AND next_check_ms <= ?1 \
                 ORDER BY next_check_ms LIMIT ?2",
            )
            .and_then(|mut s| {
                s.query_map(params![now_ms, max as i64], schedule_row)?
                    .collect()
            })
            .map_err(db("find due schedules"))
    }
}
