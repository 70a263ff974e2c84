//! The `task_queue_builds` table of the SQLite store, and the counts of running runs by build.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::store::rules::tx::BuildTable;

impl BuildTable for SqliteTx {
    async fn put_current_build(&mut self, task_queue: &str, build_id: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO task_queue_builds (task_queue, build_id) VALUES (?1, ?2) \
                 ON CONFLICT (task_queue) DO UPDATE SET build_id = excluded.build_id",
            )
            .and_then(|mut s| s.execute([task_queue, build_id]))
            .map_err(db("set a task queue's current build"))?;
        Ok(())
    }

    async fn route_to_build(&mut self, task_queue: &str, build_id: &str) -> Result<()> {
        // The terms of `runs_following_current`'s WHERE, as written there: SQLite uses a
        // partial index only for a query that repeats them.
        self.conn
            .prepare_cached(
                "UPDATE runs SET build_id = ?2 WHERE task_queue = ?1 \
                 AND status = 'running' AND (versioning IS NULL OR versioning = 'auto_upgrade')",
            )
            .and_then(|mut s| s.execute([task_queue, build_id]))
            .map_err(db("move runs to the current build"))?;
        Ok(())
    }

    async fn current_builds(&mut self, task_queue: Option<&str>) -> Result<Vec<(String, String)>> {
        self.conn
            .prepare_cached(
                "SELECT task_queue, build_id FROM task_queue_builds \
                 WHERE (?1 IS NULL OR task_queue = ?1) ORDER BY task_queue",
            )
            .and_then(|mut s| {
                s.query_map([task_queue], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(db("read the current builds"))
    }

    async fn count_by_build(
        &mut self,
        task_queue: Option<&str>,
    ) -> Result<Vec<(String, Option<String>, u64)>> {
        self.conn
            .prepare_cached(
                "SELECT build_id, versioning, COUNT(*) FROM runs \
                 WHERE build_id IS NOT NULL AND status = 'running' \
                 AND (?1 IS NULL OR task_queue = ?1) \
                 GROUP BY build_id, versioning ORDER BY build_id",
            )
            .and_then(|mut s| {
                s.query_map([task_queue], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
                })?
                .collect()
            })
            .map_err(db("count runs by build"))
    }
}
