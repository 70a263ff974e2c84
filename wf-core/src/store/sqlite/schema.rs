//! The SQLite schema: one script per `user_version`, applied on open to a file that is wf's
//! (see `identity.rs`), which it marks as wf's.

use super::identity::{classify, Identity, APPLICATION_ID};
use super::opening::Opening;
use crate::error::{BackendErrorKind, StoreError};
use rusqlite::Connection;

/// The schema, one script per `user_version` (index 0 brings version 0 to 1). Never edit a
/// released script: append the next one.
pub(super) const MIGRATIONS: &[&str] = &[
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8,
    SCHEMA_V9, SCHEMA_V10, SCHEMA_V11, SCHEMA_V12, SCHEMA_V13, SCHEMA_V14, SCHEMA_V15, SCHEMA_V16,
    SCHEMA_V17, SCHEMA_V18,
];

/// v18: the feed of what runs do (see `rules/feed.rs`): one row per lifecycle fact of a run,
/// numbered in commit order (one writer at a time: `seq` order is commit order, and
/// `AUTOINCREMENT` never gives a number twice, even after the last rows are purged), with the
/// history event it reports, if any, and its details as JSON. Purged with its run.
const SCHEMA_V18: &str = "
CREATE TABLE workflow_feed (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_type  TEXT NOT NULL,
    workflow_id    TEXT NOT NULL,
    run_id         TEXT NOT NULL,
    kind           TEXT NOT NULL,
    event_id       INTEGER,
    at_ms          INTEGER NOT NULL,
    detail         TEXT NOT NULL
);
CREATE INDEX workflow_feed_by_run ON workflow_feed (run_id);
CREATE INDEX workflow_feed_by_workflow ON workflow_feed (workflow_id, seq);
CREATE INDEX workflow_feed_by_type ON workflow_feed (workflow_type, seq);
";

/// v16: fairness keys of queued starts (see `rules/queues.rs`). Each queued run's fairness
/// key and virtual start; the pass of each key on each queue and each queue's clock; the held
/// runs in the order an admission takes them. Runs already held are of key `""`, start 0.
const SCHEMA_V16: &str = "
ALTER TABLE queued_runs ADD COLUMN fair_key TEXT NOT NULL DEFAULT '';
ALTER TABLE queued_runs ADD COLUMN vstart REAL NOT NULL DEFAULT 0;
DROP INDEX queued_runs_held;
CREATE INDEX queued_runs_held ON queued_runs (queue_name, priority, vstart, seq)
    WHERE admitted = 0;
CREATE TABLE queue_fair_passes (
    queue_name  TEXT NOT NULL,
    fair_key    TEXT NOT NULL,
    pass        REAL NOT NULL,
    PRIMARY KEY (queue_name, fair_key)
) WITHOUT ROWID;
CREATE TABLE queue_fair_clocks (
    queue_name  TEXT PRIMARY KEY,
    vclock      REAL NOT NULL
) WITHOUT ROWID;
";

/// v17: durable streams and published events (see `rules/streams.rs`): one row per entry of
/// a run's stream, by offset (`data` is NULL for the close; `entry_id` is an activity's
/// idempotent write id); the latest value of each event key of a workflow id, and the run that
/// set it.
const SCHEMA_V17: &str = "
CREATE TABLE stream_entries (
    run_id    TEXT NOT NULL,
    stream    TEXT NOT NULL,
    offset    INTEGER NOT NULL,
    data      BLOB,
    entry_id  TEXT,
    PRIMARY KEY (run_id, stream, offset)
) WITHOUT ROWID;
CREATE UNIQUE INDEX stream_entries_by_id ON stream_entries (run_id, stream, entry_id)
    WHERE entry_id IS NOT NULL;
CREATE TABLE workflow_events (
    workflow_id  TEXT NOT NULL,
    key          TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    data         BLOB NOT NULL,
    PRIMARY KEY (workflow_id, key)
);
CREATE INDEX workflow_events_by_run ON workflow_events (run_id);
";

/// v15: queues of workflow starts (see `rules/queues.rs`). The settings of each queue (with
/// its rate's token bucket); the
/// runs started on a queue, in the order they were recorded, with their priority and
/// deduplication id and whether their queue admitted them (0 held, 1 admitted, 2 closed: no
/// longer counted).
const SCHEMA_V15: &str = "
CREATE TABLE workflow_queues (
    name            TEXT PRIMARY KEY,
    concurrency     INTEGER,
    rate_limit      INTEGER,
    rate_period_ms  INTEGER,
    tokens          REAL NOT NULL,
    refilled_ms     INTEGER NOT NULL
);
CREATE TABLE queued_runs (
    seq          INTEGER PRIMARY KEY,
    run_id       TEXT NOT NULL UNIQUE,
    queue_name   TEXT NOT NULL,
    priority     INTEGER NOT NULL,
    dedupe_id    TEXT,
    admitted     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX queued_runs_held ON queued_runs (queue_name, priority, seq) WHERE admitted = 0;
CREATE INDEX queued_runs_admitted ON queued_runs (queue_name) WHERE admitted = 1;
CREATE INDEX queued_runs_dedupe ON queued_runs (queue_name, dedupe_id)
    WHERE dedupe_id IS NOT NULL AND admitted < 2;
";

/// v14: priority and fairness of activity attempts (see `rules/fairness.rs`). Each activity's
/// priority level, fairness key and cost (1 / weight), and its current attempt's virtual
/// start; the pass of each fairness key and the virtual clock; the waiting attempts in the
/// order a poll leases them. Activities already pending are of level 3, key `""`, start 0.
const SCHEMA_V14: &str = "
CREATE TABLE fair_passes (
    fair_key  TEXT PRIMARY KEY,
    pass      REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE fair_clock (
    id      INTEGER PRIMARY KEY CHECK (id = 0),
    vclock  REAL NOT NULL
);
INSERT INTO fair_clock (id, vclock) VALUES (0, 0);
ALTER TABLE activities ADD COLUMN priority INTEGER NOT NULL DEFAULT 3;
ALTER TABLE activities ADD COLUMN fair_key TEXT NOT NULL DEFAULT '';
ALTER TABLE activities ADD COLUMN fair_cost REAL NOT NULL DEFAULT 1;
ALTER TABLE activities ADD COLUMN vstart REAL NOT NULL DEFAULT 0;
CREATE INDEX activities_by_turn ON activities(priority, vstart, visible_at, run_id, seq)
    WHERE lease_owner IS NULL;
";

/// v13: activity task queues. Whether an activity was sent to a task queue of its own
/// (`ctx.activity(..).task_queue(q)`, then in `task_queue`): only engines that serve that
/// queue lease it. The activities already pending were not.
const SCHEMA_V13: &str = "
ALTER TABLE activities ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
";

/// v12: debounce. A debounced run's key (per workflow type), by which later starts find it.
const SCHEMA_V12: &str = "
ALTER TABLE runs ADD COLUMN debounce_key TEXT;
CREATE INDEX runs_by_debounce ON runs(workflow_type, debounce_key, seq)
    WHERE debounce_key IS NOT NULL AND status = 'running';
";

/// v11: start delay. When a run's first workflow task is due, for a run whose start was
/// delayed (NULL: at once); no lease is given before then.
const SCHEMA_V11: &str = "
ALTER TABLE runs ADD COLUMN start_at INTEGER;
";

/// v10: flow limits. The limits on activity attempts (one row per scope and rule kind, with a
/// rate limit's token bucket); each activity's task queue (its run's; filled in for the
/// activities already pending) and flow key, which limits count attempts by; the leased
/// attempts by name, task queue and flow key, for those counts.
const SCHEMA_V10: &str = "
CREATE TABLE flow_limits (
    scope_kind   TEXT NOT NULL,
    scope_name   TEXT NOT NULL,
    kind         TEXT NOT NULL,
    number       INTEGER NOT NULL,
    period_ms    INTEGER,
    burst        INTEGER,
    tokens       REAL NOT NULL,
    refilled_ms  INTEGER NOT NULL,
    PRIMARY KEY (scope_kind, scope_name, kind)
) WITHOUT ROWID;
ALTER TABLE activities ADD COLUMN task_queue TEXT NOT NULL DEFAULT '';
ALTER TABLE activities ADD COLUMN flow_key TEXT;
UPDATE activities SET task_queue = COALESCE(
    (SELECT task_queue FROM runs WHERE runs.run_id = activities.run_id), '');
CREATE INDEX activities_leased_by_name ON activities(name) WHERE lease_owner IS NOT NULL;
CREATE INDEX activities_leased_by_queue ON activities(task_queue) WHERE lease_owner IS NOT NULL;
CREATE INDEX activities_leased_by_key ON activities(flow_key)
    WHERE lease_owner IS NOT NULL AND flow_key IS NOT NULL;
";

/// v9: worker versioning. A run's build (which engines take its workflow tasks; NULL: any) and
/// its behaviour (`pinned`, `auto_upgrade`, `unversioned`; NULL before its first task); each
/// task queue's current build. Running runs by build, for the counts operators drain builds
/// by, and the runs that follow their queue's current build, for making a build current.
const SCHEMA_V9: &str = "
ALTER TABLE runs ADD COLUMN build_id TEXT;
ALTER TABLE runs ADD COLUMN versioning TEXT;
CREATE TABLE task_queue_builds (
    task_queue  TEXT PRIMARY KEY,
    build_id    TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX runs_by_build ON runs(build_id, versioning, task_queue)
    WHERE build_id IS NOT NULL AND status = 'running';
CREATE INDEX runs_following_current ON runs(task_queue)
    WHERE status = 'running' AND (versioning IS NULL OR versioning = 'auto_upgrade');
";

/// v7: start request ids per workflow id, with the run each start addressed and its chain
/// (retention's purge deletes a chain's ids with its last run).
const SCHEMA_V7: &str = "
CREATE TABLE start_requests (
    workflow_id  TEXT NOT NULL,
    request_id   TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    chain_id     TEXT NOT NULL,
    PRIMARY KEY (workflow_id, request_id)
) WITHOUT ROWID;
CREATE INDEX start_requests_by_chain ON start_requests(chain_id);
";

/// v8: search attributes (one row per run and key: its kind and the canonical text of its
/// value, found by key and value) and memos.
const SCHEMA_V8: &str = "
CREATE TABLE search_attributes (
    run_id  TEXT NOT NULL,
    key     TEXT NOT NULL,
    kind    TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX search_attributes_by_value ON search_attributes(key, kind, value, run_id);
CREATE TABLE memos (
    run_id  TEXT PRIMARY KEY,
    data    BLOB NOT NULL
) WITHOUT ROWID;
";

/// v6: closed runs by close time, for retention's purge (oldest close first; `seq`, the
/// rowid, breaks ties).
const SCHEMA_V6: &str = "
CREATE INDEX runs_by_closed ON runs(closed_ms) WHERE closed_ms IS NOT NULL;
";

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

/// What opening a file does to its schema.
pub(super) struct Plan {
    /// The schema version to migrate from (0: create the tables).
    pub(super) version: i64,
    /// Whether the file carries wf's mark already.
    pub(super) marked: bool,
}

/// What to do with a database that holds `identity`, or why wf refuses it.
pub(super) fn plan(identity: Identity, opening: Opening<'_>) -> Result<Plan, StoreError> {
    let (version, marked) = match identity {
        Identity::Foreign(foreign) => return Err(foreign.refusal(opening)),
        Identity::Empty => (0, false),
        Identity::Wf { version } => (version, true),
        Identity::Unmarked { version } => (version, false),
    };
    let latest = MIGRATIONS.len() as i64;
    if version > latest {
        return Err(opening.fail(
            BackendErrorKind::Invalid,
            format!(
                "it has wf schema version {version}, newer than the {latest} this wf knows; \
                 upgrade wf to open it"
            ),
        ));
    }
    Ok(Plan { version, marked })
}

/// Makes the database wf's at the last version of [`MIGRATIONS`], in one transaction: judges
/// what it holds under the write lock (a foreign file is refused untouched), creates or
/// migrates the schema and marks the file with wf's `application_id`.
pub(super) fn migrate(conn: &mut Connection, opening: Opening<'_>) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| opening.sqlite_doing("locking it to check its schema", e))?;
    let identity = classify(&tx).map_err(|e| opening.sqlite_doing("reading its schema", e))?;
    let Plan { version, marked } = plan(identity, opening)?;
    let latest = MIGRATIONS.len() as i64;
    for (i, script) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let doing = if i == 0 {
            "creating wf's tables".to_string()
        } else {
            format!("migrating its schema from version {i} to {}", i + 1)
        };
        tx.execute_batch(script)
            .map_err(|e| opening.sqlite_doing(&doing, e))?;
    }
    let writing = "writing its schema version";
    if version < latest {
        tx.pragma_update(None, "user_version", latest)
            .map_err(|e| opening.sqlite_doing(writing, e))?;
    }
    if !marked {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(|e| opening.sqlite_doing(writing, e))?;
    }
    tx.commit()
        .map_err(|e| opening.sqlite_doing("committing its schema", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().expect("open an in-memory database");
        let opening = Opening::new(std::path::Path::new(":memory:"));
        migrate(&mut conn, opening).unwrap();
        migrate(&mut conn, opening).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let mark: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mark, APPLICATION_ID);
    }
}
