//! A SQLite connection inside a transaction, as the rules see it: the [`Tx`] of
//! [`SqliteStore`](super::SqliteStore), and what spans its tables (wake-ups, savepoints).

use super::rows::db;
use super::writer::exec_cached;
use crate::error::StoreError;
use crate::store::rules::tx::Tx;
use rusqlite::Connection;

/// The result of a primitive.
pub(super) type Result<T> = std::result::Result<T, StoreError>;

/// The transaction a SQLite store's thread has open on its connection (the writer's inside its
/// group commit, a reader's for one read). Every primitive is one statement, through the
/// connection's statement cache; none waits, so a rule runs to its end on its first poll.
pub struct SqliteTx {
    pub(super) conn: Connection,
}

impl Tx for SqliteTx {
    async fn next_wakeup(&mut self, now_ms: i64) -> Result<Option<i64>> {
        self.conn
            .prepare_cached(
                "SELECT MIN(t) FROM (
                    SELECT MIN(fire_at) AS t FROM timers WHERE fire_at > ?1
                    UNION ALL SELECT MIN(ready_at) FROM runs
                        WHERE status = 'running' AND ready_at > ?1
                    UNION ALL SELECT MIN(lease_until) FROM runs
                        WHERE status = 'running' AND lease_until > ?1
                    UNION ALL SELECT MIN(visible_at) FROM activities
                        WHERE lease_owner IS NULL AND visible_at > ?1
                    UNION ALL SELECT MIN(lease_until) FROM activities
                        WHERE lease_owner IS NOT NULL AND lease_until > ?1
                    UNION ALL SELECT MIN(schedule_deadline) FROM activities
                        WHERE schedule_deadline > ?1
                    UNION ALL SELECT MIN(next_check_ms) FROM schedules
                        WHERE next_check_ms > ?1
                    UNION ALL SELECT MIN(lease_until) FROM engines
                        WHERE lease_until > ?1
                )",
            )
            .and_then(|mut s| s.query_row([now_ms], |r| r.get(0)))
            .map_err(db("compute the next wake-up"))
    }

    // The writer's own savepoint per request is named `request`: this one nests inside it.
    async fn savepoint(&mut self) -> Result<()> {
        exec_cached(&self.conn, "SAVEPOINT nested", "open a savepoint")
    }

    async fn rollback_to_savepoint(&mut self) -> Result<()> {
        exec_cached(&self.conn, "ROLLBACK TO nested", "roll back a savepoint")
    }

    async fn release_savepoint(&mut self) -> Result<()> {
        exec_cached(&self.conn, "RELEASE nested", "close a savepoint")
    }
}
