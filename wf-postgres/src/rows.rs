//! Rows as PostgreSQL returns them and their decoding, blobs, and PostgreSQL's errors as store
//! errors.

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;
use wf_core::store::{
    ActivityFailure, ActivityTask, BackendError, BackendErrorKind, Payload, RunRecord, RunRow,
    RunStatus, ScheduleRow, StoreError, TaskFailure, VersioningBehavior,
};

/// A parameter a queued statement owns (it is sent after the primitive returned).
pub(crate) type Owned = Box<dyn tokio_postgres::types::ToSql + Send + Sync>;

/// The owned parameters of a queued statement: `owned![a, b]`.
macro_rules! owned {
    ($($p:expr),* $(,)?) => {
        vec![$(Box::new($p) as $crate::rows::Owned),*]
    };
}
pub(crate) use owned;

/// The SQLSTATE of `wf_conflict` (see `activities::SCHEMA_V6`).
const CONFLICT: &str = "WF409";
/// The SQLSTATE of `wf_stale` (see `activities::SCHEMA_V6`).
const STALE: &str = "WF412";

/// Maps a PostgreSQL error to `Backend`, saying what was being done and whether a retry can
/// help (or, for `wf_conflict`'s, to the `Conflict` it reports).
pub(crate) fn db(what: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| pg_error(what, e)
}

/// What kind of store failure a PostgreSQL error is.
pub(crate) fn error_kind(e: &tokio_postgres::Error) -> BackendErrorKind {
    let Some(code) = e.code() else {
        // No SQLSTATE: the connection failed (closed, reset, timed out).
        return BackendErrorKind::Unavailable;
    };
    if *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::LOCK_NOT_AVAILABLE
        || *code == SqlState::QUERY_CANCELED
    {
        return BackendErrorKind::Busy;
    }
    if *code == SqlState::DISK_FULL || *code == SqlState::OUT_OF_MEMORY {
        return BackendErrorKind::Full;
    }
    if *code == SqlState::DATA_CORRUPTED || *code == SqlState::INDEX_CORRUPTED {
        return BackendErrorKind::Corrupt;
    }
    match &code.code()[..2] {
        // Connection exceptions, a server shutting down or starting, too many connections.
        "08" | "57" | "53" => BackendErrorKind::Unavailable,
        "42" | "28" | "3D" | "3F" => BackendErrorKind::Invalid,
        _ => BackendErrorKind::Bug,
    }
}

/// A PostgreSQL error as a backend failure of the matching kind.
pub(crate) fn pg_error(what: &str, e: tokio_postgres::Error) -> StoreError {
    if let Some(d) = e.as_db_error() {
        // A check made in a statement failed (see `activities::SCHEMA_V6`).
        match d.code().code() {
            CONFLICT => return StoreError::conflict(d.detail().unwrap_or_default(), d.message()),
            STALE => {
                return StoreError::backend(
                    BackendErrorKind::Busy,
                    format!(
                        "PostgreSQL: {what}: run {}: {}",
                        d.detail().unwrap_or_default(),
                        d.message()
                    ),
                )
            }
            _ => {}
        }
    }
    let kind = error_kind(&e);
    let detail = match e.as_db_error() {
        Some(d) => format!("{} ({})", d.message(), d.code().code()),
        None => e.to_string(),
    };
    StoreError::Backend(
        BackendError::new(kind, format!("PostgreSQL: {what}: {detail}")).with_source(e),
    )
}

pub(crate) fn to_blob<T: Serialize>(what: &str, value: &T) -> Result<Vec<u8>, StoreError> {
    rmp_serde::to_vec_named(value)
        .map_err(|e| StoreError::bug(format!("could not encode {what}: {e}")))
}

pub(crate) fn from_blob<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    rmp_serde::from_slice(bytes)
        .map_err(|e| StoreError::corrupt(format!("corrupt {what} in the database: {e}")))
}

/// A column of a row, or a `Corrupt` error naming it.
pub(crate) fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    idx: usize,
) -> Result<T, StoreError> {
    row.try_get(idx).map_err(|e| {
        StoreError::corrupt(format!(
            "PostgreSQL: column {} does not decode: {e}",
            row.columns().get(idx).map(|c| c.name()).unwrap_or("?")
        ))
    })
}

/// A non-negative count or id stored as BIGINT.
pub(crate) fn get_u64(row: &Row, idx: usize) -> Result<u64, StoreError> {
    let v: i64 = get(row, idx)?;
    u64::try_from(v).map_err(|_| StoreError::corrupt(format!("PostgreSQL: negative value {v}")))
}

/// A u32 stored as BIGINT.
pub(crate) fn get_u32(row: &Row, idx: usize) -> Result<u32, StoreError> {
    let v: i64 = get(row, idx)?;
    u32::try_from(v).map_err(|_| StoreError::corrupt(format!("PostgreSQL: {v} is out of range")))
}

/// The columns [`run_row`] reads, in order (a macro, so that the statements that use it are
/// literals).
macro_rules! run_columns {
    () => {
        "workflow_id, run_id, chain_id, workflow_type, status, next_event_id, history_bytes, \
         created_ms, closed_ms, result, failure, task_failure, summary, lease_owner, \
         lease_until, task_queue, build_id, versioning, start_at"
    };
}
pub(crate) use run_columns;

/// A run's row, from the columns of `run_columns!()`.
pub(crate) fn run_row(r: &Row) -> Result<RunRow, StoreError> {
    let run_id: String = get(r, 1)?;
    let status: String = get(r, 4)?;
    let status = RunStatus::parse(&status)
        .ok_or_else(|| StoreError::corrupt(format!("run {run_id}: unknown status {status:?}")))?;
    let task_failure = match get::<Option<&[u8]>>(r, 11)? {
        Some(b) => Some(from_blob::<TaskFailure>("task failure", b)?),
        None => None,
    };
    Ok(RunRow {
        record: RunRecord {
            workflow_id: get(r, 0)?,
            run_id,
            chain_id: get(r, 2)?,
            workflow_type: get(r, 3)?,
            task_queue: get(r, 15)?,
            status,
            next_event_id: get_u64(r, 5)?,
            history_bytes: get_u64(r, 6)?,
            created_ms: get(r, 7)?,
            closed_ms: get(r, 8)?,
            result: get::<Option<Vec<u8>>>(r, 9)?.map(Payload::unchecked),
            failure: get(r, 10)?,
            task_failure,
            summary: Payload::unchecked(get(r, 12)?),
            build_id: get(r, 16)?,
            versioning: get::<Option<&str>>(r, 17)?.and_then(VersioningBehavior::parse),
            start_at_ms: get(r, 18)?,
        },
        lease_owner: get(r, 13)?,
        lease_until: get(r, 14)?,
    })
}

/// The columns [`activity_row`] reads, in order.
macro_rules! activity_columns {
    () => {
        "run_id, seq, workflow_id, name, input, options, attempt, scheduled_ms, started_ms, \
         attempt_deadline, lease_until, heartbeat, last_failure, task_queue"
    };
}
pub(crate) use activity_columns;

/// An activity, from the columns of `activity_columns!()`.
pub(crate) fn activity_row(r: &Row) -> Result<ActivityTask, StoreError> {
    let last_failure = match get::<Option<&[u8]>>(r, 12)? {
        Some(b) => Some(from_blob::<ActivityFailure>("activity failure", b)?),
        None => None,
    };
    Ok(ActivityTask {
        options: from_blob("activity options", get::<&[u8]>(r, 5)?)?,
        run_id: get(r, 0)?,
        workflow_id: get(r, 2)?,
        seq: get_u32(r, 1)?,
        name: get(r, 3)?,
        input: Payload::unchecked(get(r, 4)?),
        attempt: get_u32(r, 6)?,
        scheduled_ms: get(r, 7)?,
        started_ms: get(r, 8)?,
        attempt_deadline_ms: get(r, 9)?,
        lease_until_ms: get(r, 10)?,
        heartbeat: get::<Option<Vec<u8>>>(r, 11)?.map(Payload::unchecked),
        last_failure,
        task_queue: get(r, 13)?,
    })
}

/// A `schedules` row (schedule_id, data, version, next_check_ms).
pub(crate) fn schedule_row(r: &Row) -> Result<ScheduleRow, StoreError> {
    Ok(ScheduleRow {
        schedule_id: get(r, 0)?,
        data: Payload::unchecked(get(r, 1)?),
        version: get_u64(r, 2)?,
        next_check_ms: get(r, 3)?,
    })
}
