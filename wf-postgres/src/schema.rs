//! The PostgreSQL schema: one script per version, applied on open under a session advisory
//! lock, so that processes opening the same schema at once migrate it once, one after the
//! other. The applied versions are rows of `wf_migrations`.

use crate::rows::{db, get};
use tokio_postgres::Client;
use wf_core::store::{BackendErrorKind, StoreError};

/// The schema, one script per version (index 0 makes version 1). Never edit a released script:
/// append the next one.
pub(crate) const MIGRATIONS: &[&str] = &[
    SCHEMA_V1,
    crate::purge::SCHEMA_V2,
    crate::starts::SCHEMA_V3,
    crate::search::SCHEMA_V4,
    crate::builds::SCHEMA_V5,
    crate::activities::SCHEMA_V6,
    crate::commits::SCHEMA_V7,
    crate::marks::SCHEMA_V8,
    crate::flow::SCHEMA_V9,
    crate::runs::SCHEMA_V10,
    crate::runs::SCHEMA_V11,
    crate::activities::SCHEMA_V12,
    crate::activities::SCHEMA_V13,
    crate::queues::SCHEMA_V14,
    crate::queues::SCHEMA_V15,
    crate::streams::SCHEMA_V16,
    crate::feed::SCHEMA_V17,
];

// Ids compare byte by byte (`COLLATE "C"`), as the other stores order them, whatever the
// database's collation.
const SCHEMA_V1: &str = r#"
CREATE TABLE runs (
    seq            BIGSERIAL PRIMARY KEY, -- creation order
    run_id         TEXT COLLATE "C" NOT NULL UNIQUE,
    workflow_id    TEXT COLLATE "C" NOT NULL,
    chain_id       TEXT COLLATE "C" NOT NULL,
    workflow_type  TEXT COLLATE "C" NOT NULL,
    task_queue     TEXT COLLATE "C" NOT NULL DEFAULT 'default',
    status         TEXT NOT NULL,
    next_event_id  BIGINT NOT NULL,
    history_bytes  BIGINT NOT NULL,
    created_ms     BIGINT NOT NULL,
    closed_ms      BIGINT,
    result         BYTEA,
    failure        TEXT,
    task_failure   BYTEA,
    summary        BYTEA NOT NULL,
    ready_at       BIGINT,
    lease_owner    TEXT COLLATE "C",
    lease_until    BIGINT
);
CREATE INDEX runs_by_workflow ON runs (workflow_id, seq);
CREATE INDEX runs_ready ON runs (ready_at, seq) WHERE status = 'running' AND ready_at IS NOT NULL;
CREATE INDEX runs_by_lease ON runs (lease_until) WHERE lease_until IS NOT NULL;
CREATE INDEX runs_by_type ON runs (workflow_type, seq);

CREATE TABLE events (
    run_id    TEXT COLLATE "C" NOT NULL,
    event_id  BIGINT NOT NULL,
    data      BYTEA NOT NULL,
    PRIMARY KEY (run_id, event_id)
);

CREATE TABLE inbox (
    seq     BIGSERIAL PRIMARY KEY, -- arrival order, never reused
    run_id  TEXT COLLATE "C" NOT NULL,
    data    BYTEA NOT NULL
);
CREATE INDEX inbox_by_run ON inbox (run_id, seq);

CREATE TABLE activities (
    run_id             TEXT COLLATE "C" NOT NULL,
    seq                BIGINT NOT NULL,
    workflow_id        TEXT COLLATE "C" NOT NULL,
    name               TEXT COLLATE "C" NOT NULL,
    input              BYTEA NOT NULL,
    options            BYTEA NOT NULL,
    attempt            BIGINT NOT NULL,
    scheduled_ms       BIGINT NOT NULL,
    schedule_deadline  BIGINT,
    visible_at         BIGINT NOT NULL,
    started_ms         BIGINT,
    attempt_deadline   BIGINT,
    lease_until        BIGINT,
    lease_owner        TEXT COLLATE "C",
    heartbeat          BYTEA,
    last_failure       BYTEA,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX activities_by_visible_at ON activities (visible_at) WHERE lease_owner IS NULL;
CREATE INDEX activities_by_lease ON activities (lease_until) WHERE lease_owner IS NOT NULL;
CREATE INDEX activities_by_deadline ON activities (schedule_deadline)
    WHERE schedule_deadline IS NOT NULL;

CREATE TABLE timers (
    run_id   TEXT COLLATE "C" NOT NULL,
    seq      BIGINT NOT NULL,
    fire_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX timers_by_fire_at ON timers (fire_at, run_id, seq);

CREATE TABLE updates (
    chain_id   TEXT COLLATE "C" NOT NULL,
    update_id  TEXT COLLATE "C" NOT NULL,
    seq        BIGSERIAL, -- order of first write
    run_id     TEXT COLLATE "C" NOT NULL,
    name       TEXT NOT NULL,
    state      BYTEA NOT NULL,
    final      BOOLEAN NOT NULL,
    PRIMARY KEY (chain_id, update_id)
);
CREATE INDEX updates_pending ON updates (run_id, seq) WHERE NOT final;

CREATE TABLE signal_ids (
    chain_id   TEXT COLLATE "C" NOT NULL,
    signal_id  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (chain_id, signal_id)
);

CREATE TABLE schedules (
    schedule_id    TEXT COLLATE "C" PRIMARY KEY,
    data           BYTEA NOT NULL,
    version        BIGINT NOT NULL,
    next_check_ms  BIGINT
);
CREATE INDEX schedules_by_next_check ON schedules (next_check_ms) WHERE next_check_ms IS NOT NULL;

CREATE TABLE engines (
    engine_id     TEXT COLLATE "C" PRIMARY KEY,
    wake_address  TEXT,
    task_queue    TEXT NOT NULL,
    started_ms    BIGINT NOT NULL,
    lease_until   BIGINT NOT NULL
);
"#;

/// Creates the schema `schema` if missing and brings it to the last version of
/// [`MIGRATIONS`], on a connection whose `search_path` is `schema`. Holds a session advisory
/// lock (keyed by the schema's name) throughout, so that processes opening it at once take
/// turns; each script runs in its own transaction with its version row.
pub(crate) async fn migrate(client: &Client, schema: &str) -> Result<(), StoreError> {
    let key = format!("wf-postgres schema {schema}");
    client
        .execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", &[&key])
        .await
        .map_err(db("lock the schema to migrate it"))?;
    let result = migrate_locked(client, schema).await;
    let unlocked = client
        .execute(
            "SELECT pg_advisory_unlock(hashtextextended($1, 0))",
            &[&key],
        )
        .await
        .map_err(db("unlock the schema after migrating it"));
    result.and(unlocked.map(|_| ()))
}

async fn migrate_locked(client: &Client, schema: &str) -> Result<(), StoreError> {
    // `schema` passed `valid_schema`: a plain identifier, safe to put in the statement.
    client
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {schema};
             CREATE TABLE IF NOT EXISTS {schema}.wf_migrations (
                 version     INTEGER PRIMARY KEY,
                 applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
             );"
        ))
        .await
        .map_err(db("create the schema"))?;
    let row = client
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0) FROM {schema}.wf_migrations"),
            &[],
        )
        .await
        .map_err(db("read the schema version"))?;
    let version: i32 = get(&row, 0)?;
    let latest = MIGRATIONS.len() as i32;
    if version > latest {
        return Err(StoreError::backend(
            BackendErrorKind::Invalid,
            format!(
                "PostgreSQL schema {schema:?} has wf schema version {version}, newer than the \
                 {latest} this wf knows; upgrade wf to open it"
            ),
        ));
    }
    for (i, script) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let next = i as i32 + 1;
        let sql = format!(
            "BEGIN; SET LOCAL search_path TO {schema}; {script}
             INSERT INTO {schema}.wf_migrations (version) VALUES ({next}); COMMIT;"
        );
        if let Err(e) = client.batch_execute(&sql).await {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(db("migrate the schema")(e));
        }
        tracing::info!(schema, version = next, "wf-postgres: migrated the schema");
    }
    Ok(())
}
