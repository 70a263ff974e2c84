//! The `task_queue_builds` table of the PostgreSQL store (each task queue's current build),
//! the counts of running runs by build, and the migration that adds worker versioning.

use crate::rows::{get, get_u64};
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::BuildTable;

/// v5: worker versioning. A run's build (which engines take its workflow tasks; NULL: any) and
/// its behaviour (`pinned`, `auto_upgrade`, `unversioned`; NULL before its first task); each
/// task queue's current build. Running runs by build, for the counts operators drain builds
/// by, and the runs that follow their queue's current build, for making a build current.
pub(crate) const SCHEMA_V5: &str = r#"
ALTER TABLE runs ADD COLUMN build_id TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN versioning TEXT;
CREATE TABLE task_queue_builds (
    task_queue  TEXT COLLATE "C" PRIMARY KEY,
    build_id    TEXT COLLATE "C" NOT NULL
);
CREATE INDEX runs_by_build ON runs (build_id, versioning, task_queue)
    WHERE build_id IS NOT NULL AND status = 'running';
CREATE INDEX runs_following_current ON runs (task_queue)
    WHERE status = 'running' AND (versioning IS NULL OR versioning = 'auto_upgrade');
"#;

impl BuildTable for PostgresTx {
    async fn put_current_build(&mut self, task_queue: &str, build_id: &str) -> Result<()> {
        self.later(
            "INSERT INTO task_queue_builds (task_queue, build_id) VALUES ($1, $2) \
             ON CONFLICT (task_queue) DO UPDATE SET build_id = EXCLUDED.build_id",
            owned![task_queue.to_string(), build_id.to_string()],
            "set a task queue's current build",
        )
        .await
    }

    async fn route_to_build(&mut self, task_queue: &str, build_id: &str) -> Result<()> {
        // Row locks only (no advisory lock per workflow id): a commit that holds one of these
        // runs makes this wait, and a deadlock with a group commit fails one statement, which
        // its writer runs again.
        self.later(
            "UPDATE runs SET build_id = $2 WHERE task_queue = $1 \
             AND status = 'running' AND (versioning IS NULL OR versioning = 'auto_upgrade')",
            owned![task_queue.to_string(), build_id.to_string()],
            "move runs to the current build",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn current_builds(&mut self, task_queue: Option<&str>) -> Result<Vec<(String, String)>> {
        let rows = self
            .query(
                "SELECT task_queue, build_id FROM task_queue_builds \
                 WHERE ($1::text IS NULL OR task_queue = $1) ORDER BY task_queue",
                &[&task_queue],
                "read the current builds",
            )
            .await?;
        rows.iter().map(|r| Ok((get(r, 0)?, get(r, 1)?))).collect()
    }

    async fn count_by_build(
        &mut self,
        task_queue: Option<&str>,
    ) -> Result<Vec<(String, Option<String>, u64)>> {
        let rows = self
            .query(
                "SELECT build_id, versioning, COUNT(*) FROM runs \
                 WHERE build_id IS NOT NULL AND status = 'running' \
                 AND ($1::text IS NULL OR task_queue = $1) \
                 GROUP BY build_id, versioning ORDER BY build_id",
                &[&task_queue],
                "count runs by build",
            )
            .await?;
        rows.iter()
            .map(|r| Ok((get(r, 0)?, get(r, 1)?, get_u64(r, 2)?)))
            .collect()
    }
}
