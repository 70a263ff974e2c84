//! Commit marks: how a writer learns whether a transaction whose `COMMIT` was cut off went
//! through, on whatever server now accepts writes — the same one come back, or a standby
//! promoted in its place.
//!
//! Each writer connection task owns a row of `wf_commit_marks` (its `slot`, a random number
//! chosen when the task starts). The commit round trip of every transaction that wrote
//! something also adds one to the row's `token`, in the same transaction. After a lost
//! connection the writer reads its row on a new connection: the token it expected means the
//! transaction committed there; anything less means it did not. That holds across a failover,
//! where the transaction's id (`txid_status`) does not: a promoted standby that never saw the
//! id hands it out again to new transactions, so its status may be another transaction's.
//! The id's status still tells whether the old server may yet commit it (`in progress`: its
//! backend has not noticed the lost connection), which the writer waits out.

use crate::rows::db;
use tokio_postgres::Client;
use wf_core::store::StoreError;

/// Version 8: the marks.
pub(crate) const SCHEMA_V8: &str = r#"
CREATE TABLE wf_commit_marks (
    slot   BIGINT PRIMARY KEY,
    token  BIGINT NOT NULL,
    at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
"#;

/// The statement the commit round trip sends before `COMMIT`: the transaction's id (none if it
/// wrote nothing), and for a transaction with one, its writer's token after this commit (none
/// if the writer's row is missing).
pub(crate) const MARK: &str = "WITH x AS (SELECT txid_current_if_assigned() AS id), \
     m AS (UPDATE wf_commit_marks SET token = token + 1, at = now() \
           WHERE slot = $1 AND (SELECT id FROM x) IS NOT NULL RETURNING token) \
     SELECT (SELECT id FROM x), (SELECT token FROM m)";

/// Marks older than this belong to writers that are gone: removed when a writer starts. A live
/// writer refreshes its own at each commit and each connection.
const STALE: &str = "7 days";

/// A writer's row of marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The row's key.
    pub(crate) slot: i64,
    /// The token the row holds as of the writer's last known commit.
    pub(crate) token: i64,
}

impl Mark {
    /// A new writer's row (not yet written: see [`register`](Self::register)).
    pub(crate) fn new() -> Mark {
        // Random enough to keep writers of all processes apart; zero is never chosen.
        let slot = uuid::Uuid::new_v4().as_u64_pair().0 as i64 | 1;
        Mark { slot, token: 0 }
    }

    /// Writes the row on `client`'s server, or reads it if it is there already (a connection
    /// made again, perhaps to a promoted standby that holds the last token replicated to it):
    /// its token becomes the one this writer knows. Removes the marks of writers long gone.
    pub(crate) async fn register(&mut self, client: &Client) -> Result<(), StoreError> {
        client
            .execute(
                &format!("DELETE FROM wf_commit_marks WHERE at < now() - interval '{STALE}'"),
                &[],
            )
            .await
            .map_err(db("remove stale commit marks"))?;
        // The row is locked while a transaction of this writer that lost its connection is
        // still committing on this server: wait for it, a while.
        client
            .batch_execute("BEGIN; SET LOCAL lock_timeout = '5s'")
            .await
            .map_err(db("write the writer's commit mark"))?;
        let row = client
            .query_one(
                "INSERT INTO wf_commit_marks (slot, token) VALUES ($1, $2) \
                 ON CONFLICT (slot) DO UPDATE SET at = now() RETURNING token",
                &[&self.slot, &self.token],
            )
            .await;
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                let _ = client.batch_execute("ROLLBACK").await;
                return Err(db("write the writer's commit mark")(e));
            }
        };
        client
            .batch_execute("COMMIT")
            .await
            .map_err(db("write the writer's commit mark"))?;
        self.token = crate::rows::get(&row, 0)?;
        Ok(())
    }

    /// The token the writer's row holds on `client`'s server (`None`: no row there).
    pub(crate) async fn read(&self, client: &Client) -> Result<Option<i64>, tokio_postgres::Error> {
        let row = client
            .query_opt(
                "SELECT token FROM wf_commit_marks WHERE slot = $1",
                &[&self.slot],
            )
            .await?;
        Ok(row.map(|r| r.get(0)))
    }
}
