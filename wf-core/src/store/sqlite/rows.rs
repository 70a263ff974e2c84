//! Rows as SQLite returns them and their decoding, blobs, and SQLite's errors as store errors.

use crate::data::activity::ActivityFailure;
use crate::data::payload::Payload;
use crate::data::run::{RunStatus, TaskFailure};
use crate::data::versioning::VersioningBehavior;
use crate::error::{BackendError, BackendErrorKind, StoreError};
use crate::store::records::{ActivityTask, RunRecord, ScheduleRow};
use crate::store::rules::tx::RunRow;
use rusqlite::Row;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Maps a SQLite error to `Backend`, saying what was being done and whether a retry can help.
pub(super) fn db(what: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| sqlite_error(what, e)
}

/// A SQLite error as a backend failure of the matching kind.
pub(super) fn sqlite_error(what: &str, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    let kind = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => BackendErrorKind::Busy,
        Some(ErrorCode::DiskFull) => BackendErrorKind::Full,
        Some(ErrorCode::SystemIoFailure | ErrorCode::CannotOpen) => BackendErrorKind::Io,
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => BackendErrorKind::Corrupt,
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => BackendErrorKind::Invalid,
        _ => BackendErrorKind::Bug,
    };
    StoreError::Backend(BackendError::new(kind, format!("SQLite: {what}: {e}")).with_source(e))
}

pub(super) fn to_blob<T: Serialize>(what: &str, value: &T) -> Result<Vec<u8>, StoreError> {
    rmp_serde::to_vec_named(value)
        .map_err(|e| StoreError::bug(format!("could not encode {what}: {e}")))
}

pub(super) fn from_blob<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    rmp_serde::from_slice(bytes)
        .map_err(|e| StoreError::corrupt(format!("corrupt {what} in the database: {e}")))
}

/// A JSON array of names for `json_each`, or `None` for "any".
pub(super) fn name_filter(names: Option<&[String]>) -> Option<String> {
    names.map(|names| {
        let quoted: Vec<String> = names.iter().map(|s| json_string(s)).collect();
        format!("[{}]", quoted.join(","))
    })
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The columns `RawRun::from_row` reads, in order (a macro, so that the statements that use it
/// are literals: the run lookups are on every commit's path and cost no formatting).
macro_rules! run_columns {
    () => {
        "workflow_id, run_id, chain_id, workflow_type, status, next_event_id, history_bytes, \
         created_ms, closed_ms, result, failure, task_failure, summary, ready_at, lease_owner, \
         lease_until, task_queue, build_id, versioning, start_at"
    };
}
pub(super) use run_columns;

/// A run row as read, before its blobs are decoded.
pub(super) struct RawRun {
    workflow_id: String,
    run_id: String,
    chain_id: String,
    workflow_type: String,
    status: String,
    next_event_id: i64,
    history_bytes: i64,
    created_ms: i64,
    closed_ms: Option<i64>,
    result: Option<Vec<u8>>,
    failure: Option<String>,
    task_failure: Option<Vec<u8>>,
    summary: Vec<u8>,
    lease_owner: Option<String>,
    lease_until: Option<i64>,
    task_queue: String,
    build_id: Option<String>,
    versioning: Option<String>,
    start_at: Option<i64>,
}

impl RawRun {
    pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<RawRun> {
        Ok(RawRun {
            workflow_id: r.get(0)?,
            run_id: r.get(1)?,
            chain_id: r.get(2)?,
            workflow_type: r.get(3)?,
            status: r.get(4)?,
            next_event_id: r.get(5)?,
            history_bytes: r.get(6)?,
            created_ms: r.get(7)?,
            closed_ms: r.get(8)?,
            result: r.get(9)?,
            failure: r.get(10)?,
            task_failure: r.get(11)?,
            summary: r.get(12)?,
            lease_owner: r.get(14)?,
            lease_until: r.get(15)?,
            task_queue: r.get(16)?,
            build_id: r.get(17)?,
            versioning: r.get(18)?,
            start_at: r.get(19)?,
        })
    }

    pub(super) fn decode(self) -> Result<RunRow, StoreError> {
        let status = RunStatus::parse(&self.status).ok_or_else(|| {
            StoreError::corrupt(format!(
                "run {}: unknown status {:?}",
                self.run_id, self.status
            ))
        })?;
        let task_failure = match &self.task_failure {
            Some(b) => Some(from_blob::<TaskFailure>("task failure", b)?),
            None => None,
        };
        Ok(RunRow {
            record: RunRecord {
                workflow_id: self.workflow_id,
                run_id: self.run_id,
                chain_id: self.chain_id,
                workflow_type: self.workflow_type,
                task_queue: self.task_queue,
                status,
                next_event_id: self.next_event_id as u64,
                history_bytes: self.history_bytes as u64,
                created_ms: self.created_ms,
                closed_ms: self.closed_ms,
                result: self.result.map(Payload::unchecked),
                failure: self.failure,
                task_failure,
                summary: Payload::unchecked(self.summary),
                build_id: self.build_id,
                versioning: self
                    .versioning
                    .as_deref()
                    .and_then(VersioningBehavior::parse),
                start_at_ms: self.start_at,
            },
            lease_owner: self.lease_owner,
            lease_until: self.lease_until,
        })
    }
}

/// The columns `RawActivity::from_row` reads, in order (a macro for literal statements).
macro_rules! activity_columns {
    () => {
        "run_id, seq, workflow_id, name, input, options, attempt, scheduled_ms, started_ms, \
         attempt_deadline, lease_until, heartbeat, last_failure, task_queue"
    };
}
pub(super) use activity_columns;

/// An activity row as read, before its blobs are decoded.
pub(super) struct RawActivity {
    run_id: String,
    seq: u32,
    workflow_id: String,
    name: String,
    input: Vec<u8>,
    options: Vec<u8>,
    attempt: u32,
    scheduled_ms: i64,
    started_ms: Option<i64>,
    attempt_deadline: Option<i64>,
    lease_until: Option<i64>,
    heartbeat: Option<Vec<u8>>,
    last_failure: Option<Vec<u8>>,
    task_queue: String,
}

impl RawActivity {
    pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<RawActivity> {
        Ok(RawActivity {
            run_id: r.get(0)?,
            seq: r.get(1)?,
            workflow_id: r.get(2)?,
            name: r.get(3)?,
            input: r.get(4)?,
            options: r.get(5)?,
            attempt: r.get(6)?,
            scheduled_ms: r.get(7)?,
            started_ms: r.get(8)?,
            attempt_deadline: r.get(9)?,
            lease_until: r.get(10)?,
            heartbeat: r.get(11)?,
            last_failure: r.get(12)?,
            task_queue: r.get(13)?,
        })
    }

    pub(super) fn decode(self) -> Result<ActivityTask, StoreError> {
        let last_failure = match &self.last_failure {
            Some(b) => Some(from_blob::<ActivityFailure>("activity failure", b)?),
            None => None,
        };
        Ok(ActivityTask {
            options: from_blob("activity options", &self.options)?,
            run_id: self.run_id,
            workflow_id: self.workflow_id,
            seq: self.seq,
            name: self.name,
            input: Payload::unchecked(self.input),
            attempt: self.attempt,
            scheduled_ms: self.scheduled_ms,
            started_ms: self.started_ms,
            attempt_deadline_ms: self.attempt_deadline,
            lease_until_ms: self.lease_until,
            heartbeat: self.heartbeat.map(Payload::unchecked),
            last_failure,
            task_queue: self.task_queue,
        })
    }
}

/// A `schedules` row (schedule_id, data, version, next_check_ms).
pub(super) fn schedule_row(r: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    Ok(ScheduleRow {
        schedule_id: r.get(0)?,
        data: Payload::unchecked(r.get(1)?),
        version: r.get::<_, i64>(2)? as u64,
        next_check_ms: r.get(3)?,
    })
}
