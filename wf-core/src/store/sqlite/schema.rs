//! The SQLite schema: one script per `user_version`, applied on open.

use super::rows::{db, sqlite_error};
use crate::error::{BackendErrorKind, StoreError};
use rusqlite::Connection;

/// The schema, one script per `user_version` (index 0 brings version 0 to 1). Never edit a
/// released script: append the next one.
pub(super) const MIGRATIONS: &[&str] = &[SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5];

/// v5: the engines working on the file, with their liveness leases.
const SCHEMA_V5: &str = "
CREATE TABLE engines (
    engine_id     TEXT PRIMARY KEY,
    wake_address  TEXT,
    task_queue    TEXT NOT NULL,
    started_ms    INTEGER NOT NULL,
    lease_until   INTEGER NOT NULL
) WITHOUT ROWID;
";

/// v4: a row of `events` may hold several consecutive events (one commit's, each encoded as
/// before), keyed by the first one's id. Rows written before are single-event rows, which
/// read the same. Nothing to change in the tables: the version keeps older engines, which
/// read one event per row, from opening the file.
const SCHEMA_V4: &str = "-- events rows may hold consecutive events";

/// v3: task queues.
const SCHEMA_V3: &str = "
ALTER TABLE runs ADD COLUMN task_queue TEXT NOT NULL DEFAULT 'default';
";

/// v2: schedules.
const SCHEMA_V2: &str = "
CREATE TABLE schedules (
    schedule_id    TEXT PRIMARY KEY,
    data           BLOB NOT NULL,
    version        INTEGER NOT NULL,
    next_check_ms  INTEGER
);
CREATE INDEX schedules_by_next_check ON schedules(next_check_ms) WHERE next_check_ms IS NOT NULL;
";

const SCHEMA_V1: &str = "
CREATE TABLE runs (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT, -- creation order
    run_id         TEXT NOT NULL UNIQUE,
    workflow_id    TEXT NOT NULL,
    chain_id       TEXT NOT NULL,
    workflow_type  TEXT NOT NULL,
    status         TEXT NOT NULL,
    next_event_id  INTEGER NOT NULL,
    history_bytes  INTEGER NOT NULL,
    created_ms     INTEGER NOT NULL,
    closed_ms      INTEGER,
    result         BLOB,
    failure        TEXT,
    task_failure   BLOB,
    summary        BLOB NOT NULL,
    ready_at       INTEGER,
    lease_owner    TEXT,
    lease_until    INTEGER
);
CREATE INDEX runs_by_workflow ON runs(workflow_id, seq);
CREATE INDEX runs_by_ready_at ON runs(ready_at) WHERE ready_at IS NOT NULL;
CREATE INDEX runs_by_lease ON runs(lease_until) WHERE lease_until IS NOT NULL;

CREATE TABLE events (
    run_id    TEXT NOT NULL,
    event_id  INTEGER NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY (run_id, event_id)
) WITHOUT ROWID;

CREATE TABLE inbox (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT, -- arrival order, never reused
    run_id  TEXT NOT NULL,
    data    BLOB NOT NULL
);
CREATE INDEX inbox_by_run ON inbox(run_id, seq);

CREATE TABLE activities (
    run_id             TEXT NOT NULL,
    seq                INTEGER NOT NULL,
    workflow_id        TEXT NOT NULL,
    name               TEXT NOT NULL,
    input              BLOB NOT NULL,
    options            BLOB NOT NULL,
    attempt            INTEGER NOT NULL,
    scheduled_ms       INTEGER NOT NULL,
    schedule_deadline  INTEGER,
    visible_at         INTEGER NOT NULL,
    started_ms         INTEGER,
    attempt_deadline   INTEGER,
    lease_until        INTEGER,
    lease_owner        TEXT,
    heartbeat          BLOB,
    last_failure       BLOB,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX activities_by_visible_at ON activities(visible_at) WHERE lease_owner IS NULL;
CREATE INDEX activities_by_lease ON activities(lease_until) WHERE lease_owner IS NOT NULL;
CREATE INDEX activities_by_deadline ON activities(schedule_deadline)
    WHERE schedule_deadline IS NOT NULL;

CREATE TABLE timers (
    run_id   TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    fire_at  INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX timers_by_fire_at ON timers(fire_at, run_id, seq);

CREATE TABLE updates (
    chain_id   TEXT NOT NULL,
    update_id  TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    name       TEXT NOT NULL,
    state      BLOB NOT NULL,
    final      INTEGER NOT NULL,
    PRIMARY KEY (chain_id, update_id)
);
CREATE INDEX updates_pending ON updates(run_id) WHERE final = 0;

CREATE TABLE signal_ids (
    chain_id   TEXT NOT NULL,
    signal_id  TEXT NOT NULL,
    PRIMARY KEY (chain_id, signal_id)
) WITHOUT ROWID;
";

/// Brings the schema to the last version of [`MIGRATIONS`], in one transaction.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db("begin the schema migration"))?;
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db("read user_version"))?;
    let latest = MIGRATIONS.len() as i64;
    if version > latest {
        return Err(StoreError::backend(
            BackendErrorKind::Invalid,
            format!(
            "the database has schema version {version}, newer than the {latest} this wf knows; \
             upgrade wf to open it"
        ),
        ));
    }
    for (i, script) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(script)
            .map_err(|e| sqlite_error(&format!("schema migration to v{}", i + 1), e))?;
    }
    if version < latest {
        tx.pragma_update(None, "user_version", latest)
            .map_err(db("write user_version"))?;
    }
    tx.commit().map_err(db("commit the schema migration"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().expect("open an in-memory database");
        migrate(&mut conn).unwrap();
        migrate(&mut conn).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
    }
}
