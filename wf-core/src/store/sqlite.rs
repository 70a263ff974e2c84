//! The embedded store: one SQLite file in WAL mode, durable by default (`synchronous=FULL`).
//!
//! # Group commit
//!
//! One writer thread owns the write connection. Every changing method sends its work (a
//! closure over the connection) to that thread and awaits the answer. The writer blocks for a
//! first request, then takes every request already queued (up to
//! [`SqliteOptions::max_batch`]) and runs them all in ONE transaction, each inside its own
//! `SAVEPOINT`, so that one request's failure (`Conflict`, `AlreadyStarted`...) rolls back only
//! that request. It then commits once (one fsync) and only then answers every caller: a caller
//! is answered when its change is durable. If the commit fails, every caller of the batch gets
//! [`StoreError::Backend`].
//!
//! A request is queued when the method is called, not when its future is first polled, and
//! dropping the future does not withdraw it: like [`MemoryStore`](super::MemoryStore), whose
//! methods do their work at once, a call that was made happens.
//!
//! # Reads
//!
//! Reads never wait behind writes: a small pool of reader threads, each with its own connection,
//! runs each read in its own read transaction (a consistent snapshot). WAL lets them run while
//! the writer commits, and since a writer answers only after its commit, a read sent after a
//! write was answered sees that write.
//!
//! # Schema
//!
//! Created on open and migrated by `PRAGMA user_version`: `MIGRATIONS` lists one SQL script per
//! version, and a newer engine appends a script instead of editing one.

use super::{
    check_running, parent_in, ActivityTask, DeliverOutcome, Fallout, NewRun, RunClose, RunRecord,
    ScheduleRow, StartOutcome, StartRequest, Store, StoreError, StoreFuture, TaskCommit,
    WorkflowTask,
};
use crate::data::activity::ActivityFailure;
use crate::data::activity::{activity_lease, heartbeat_lease, ActivityResolution};
use crate::data::codec::{decode_event, decode_events, encode_event, encode_event_into};
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::message::{InboxMessage, Message};
use crate::data::payload::Payload;
use crate::data::run::{ChildOutcome, ParentInfo};
use crate::data::run::{IdConflictPolicy, ListFilter, RunStatus, TaskFailure};
use crate::data::update::{UpdateRecord, UpdateState};
use crate::error::{BackendError, BackendErrorKind};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// How [`SqliteStore::open_with`] sets up the database.
///
/// ```
/// use wf_core::store::SqliteOptions;
/// let fast_but_not_crash_safe = SqliteOptions { synchronous_full: false, ..Default::default() };
/// # let _ = fast_but_not_crash_safe;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// `synchronous=FULL` (the default): a commit survives power loss. `false` gives
    /// `synchronous=NORMAL`: in WAL mode the database stays consistent, but the last commits
    /// may be lost on power loss (not on a process crash).
    pub synchronous_full: bool,
    /// How long a connection waits for a lock held by another process before failing.
    pub busy_timeout: Duration,
    /// Most requests folded into one write transaction.
    pub max_batch: usize,
    /// Reader threads (each with its own connection); at least one is started.
    pub readers: usize,
    /// Whether the writer looks for the next request for up to 200 µs after a lone one before
    /// it parks (default `true`): requests that come one at a time then find it awake, which
    /// saves a thread wake-up each (tens of microseconds on a virtual machine) for that much
    /// busy CPU. An engine built with `poll_when_quiet(false)` turns it off.
    pub poll_when_quiet: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous_full: true,
            busy_timeout: Duration::from_secs(5),
            max_batch: 512,
            readers: 2,
            poll_when_quiet: true,
        }
    }
}

/// The SQLite [`Store`]: one file, WAL, group commit. Several processes may share the file.
///
/// Dropping the store stops its threads; the writer first finishes (commits and answers) the
/// batch it is running.
///
/// ```no_run
/// # async fn demo() -> Result<(), wf_core::store::StoreError> {
/// use wf_core::store::{SqliteStore, Store};
/// let store = SqliteStore::open("wf.db")?;
/// let run = store.get_run("order-42", None).await?;
/// # let _ = run; Ok(()) }
/// ```
pub struct SqliteStore {
    writes: Option<mpsc::Sender<Box<dyn Request>>>,
    reads: Option<mpsc::Sender<Box<dyn Request>>>,
    writer: Option<JoinHandle<()>>,
    readers: Vec<JoinHandle<()>>,
}

/// The schema, one script per `user_version` (index 0 brings version 0 to 1). Never edit a
/// released script: append the next one.
const MIGRATIONS: &[&str] = &[SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4];

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

impl SqliteStore {
    /// Opens (or creates) the database file at `path` with the default options.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, SqliteOptions::default())
    }

    /// Opens (or creates) the database file at `path`: sets WAL and the sync level, creates or
    /// migrates the schema, and starts the writer and reader threads.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let mut writer = open_connection(path, &options)?;
        let mode: String = writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(db("set journal_mode=WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::backend(
                BackendErrorKind::Invalid,
                format!(
                "{}: SQLite refused WAL journal mode (got {mode}); is the file on a network share?",
                path.display()
            ),
            ));
        }
        migrate(&mut writer)?;
        writer
            .pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)
            .map_err(db("set wal_autocheckpoint"))?;

        let mut readers = Vec::new();
        for _ in 0..options.readers.max(1) {
            let conn = open_connection(path, &options)?;
            conn.pragma_update(None, "query_only", true)
                .map_err(db("set query_only"))?;
            readers.push(conn);
        }

        let (write_tx, write_rx) = mpsc::channel::<Box<dyn Request>>();
        let max_batch = options.max_batch.max(1);
        let full = options.synchronous_full;
        let poll = options.poll_when_quiet;
        let writer = spawn("wf-sqlite-writer", move || {
            writer_loop(writer, write_rx, max_batch, full, poll)
        })?;
        let (read_tx, read_rx) = mpsc::channel::<Box<dyn Request>>();
        let read_rx = Arc::new(Mutex::new(read_rx));
        let readers = readers
            .into_iter()
            .map(|conn| {
                let rx = Arc::clone(&read_rx);
                spawn("wf-sqlite-reader", move || reader_loop(conn, rx))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SqliteStore {
            writes: Some(write_tx),
            reads: Some(read_tx),
            writer: Some(writer),
            readers,
        })
    }

    /// Runs `work` on the writer thread inside the next group commit, durable before the
    /// caller is answered.
    fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        submit(self.writes.as_ref(), true, work)
    }

    /// Like [`write`](Self::write) for a soft change (see `Request::durable`).
    fn write_soft<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        submit(self.writes.as_ref(), false, work)
    }

    /// Runs `work` on a reader thread inside a read transaction.
    fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        submit(self.reads.as_ref(), false, work)
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing a channel ends its loop once the queued requests are done, and the loop's
        // connection closes. The readers close first, the writer last: the last connection to
        // the file checkpoints the WAL into the database and deletes it, so that after a clean
        // close the database is one self-contained file. Connections closing at the same time
        // each see the others still open, and none does it. (A thread that panicked has
        // already failed its callers: its join error needs nothing more.)
        self.reads.take();
        for t in self.readers.drain(..) {
            let _ = t.join();
        }
        self.writes.take();
        if let Some(t) = self.writer.take() {
            let _ = t.join();
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StoreError> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|e| {
            StoreError::backend(
                BackendErrorKind::Io,
                format!("could not start thread {name}: {e}"),
            )
        })
}

fn open_connection(path: &Path, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| sqlite_error(&format!("could not open {}", path.display()), e))?;
    conn.busy_timeout(options.busy_timeout)
        .map_err(db("set busy_timeout"))?;
    let sync = if options.synchronous_full {
        "FULL"
    } else {
        "NORMAL"
    };
    conn.pragma_update(None, "synchronous", sync)
        .map_err(db("set synchronous"))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Brings the schema to the last version of [`MIGRATIONS`], in one transaction.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
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

/// WAL pages between automatic checkpoints (SQLite's default is 1,000). A checkpoint copies
/// each page once however often the WAL holds it, and hot pages (a busy run's history and
/// row) are rewritten by nearly every commit: checkpointing four times less often copies far
/// fewer pages, for a WAL file of up to ~16 MB beside the database (10,000 pages measured no
/// faster).
const WAL_CHECKPOINT_PAGES: i64 = 4_000;

// ---------------------------------------------------------------------------------------------
// Requests, the writer (group commit) and the readers
// ---------------------------------------------------------------------------------------------

/// One caller's work, run on a store thread; answered after its transaction ends.
trait Request: Send {
    /// Runs the work; true if it succeeded (its changes are to be kept).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Sends the caller its result, or `failure` if the transaction around it failed.
    fn answer(self: Box<Self>, failure: Option<StoreError>);
    /// Whether the change must reach the disk before the caller is answered. Soft changes
    /// (leases, heartbeats, retry bookkeeping) survive a process crash without an fsync, and
    /// losing one to an OS crash only reverts to a state the engine redoes.
    fn durable(&self) -> bool;
}

struct Pending<T, F> {
    durable: bool,
    work: Option<F>,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Request for Pending<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| work(conn))).unwrap_or_else(|_| {
            Err(StoreError::bug(
                "a store request panicked; its changes were rolled back",
            ))
        });
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn durable(&self) -> bool {
        self.durable
    }

    fn answer(self: Box<Self>, failure: Option<StoreError>) {
        let result = match (failure, self.outcome) {
            (Some(e), _) => Err(e),
            (None, Some(outcome)) => outcome,
            (None, None) => Err(StoreError::bug("a store request was never run")),
        };
        // The caller may have given up waiting (its future dropped); that is fine.
        let _ = self.reply.send(result);
    }
}

fn submit<T: Send + 'static>(
    queue: Option<&mpsc::Sender<Box<dyn Request>>>,
    durable: bool,
    work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
) -> StoreFuture<'static, T> {
    let (reply, answer) = oneshot::channel();
    let request = Box::new(Pending {
        durable,
        work: Some(work),
        outcome: None,
        reply,
    });
    let sent = queue.map(|q| q.send(request).is_ok()).unwrap_or(false);
    Box::pin(async move {
        if !sent {
            return Err(StoreError::closed("the SQLite store is shut down"));
        }
        answer
            .await
            .map_err(|_| StoreError::bug("the SQLite store thread stopped before answering"))?
    })
}

/// How long the writer looks for the next request after a batch of one before it blocks.
const SOLO_BATCH_SPIN: std::time::Duration = std::time::Duration::from_micros(200);

fn writer_loop(
    conn: Connection,
    queue: mpsc::Receiver<Box<dyn Request>>,
    max_batch: usize,
    full: bool,
    poll_when_quiet: bool,
) {
    let mut solo = false;
    loop {
        // After a batch of one request (a quiet engine), look for the next request for a
        // while before blocking: it often comes within tens of microseconds, and waking a
        // blocked thread costs about as much.
        let mut next = None;
        if solo {
            let until = std::time::Instant::now() + SOLO_BATCH_SPIN;
            while next.is_none() && std::time::Instant::now() < until {
                match queue.try_recv() {
                    Ok(request) => next = Some(request),
                    Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
                    Err(mpsc::TryRecvError::Disconnected) => return,
                }
            }
        }
        let first = match next {
            Some(request) => request,
            None => match queue.recv() {
                Ok(request) => request,
                Err(_) => return,
            },
        };
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match queue.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        // A batch of soft changes only commits without an fsync (WAL + NORMAL: never corrupt,
        // durable at the next synced commit). Any durable request makes the batch synced.
        let soft = full && batch.iter().all(|r| !r.durable());
        if soft {
            let _ = conn.execute_batch("PRAGMA synchronous = NORMAL");
        }
        let failure = run_batch(&conn, &mut batch).err();
        if soft {
            let _ = conn.execute_batch("PRAGMA synchronous = FULL");
        }
        if let Some(e) = &failure {
            tracing::error!(requests = batch.len(), error = %e, "SQLite group commit failed");
        }
        solo = poll_when_quiet && batch.len() == 1;
        for request in batch {
            request.answer(failure.clone());
        }
    }
}

/// Runs a batch in one transaction, each request in its own savepoint (a batch of one needs
/// none); commits once.
fn run_batch(conn: &Connection, batch: &mut [Box<dyn Request>]) -> Result<(), StoreError> {
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(db("begin a write transaction"))?;
    // A request alone needs no savepoint: if it fails, the transaction is rolled back whole.
    if let [request] = batch {
        let ok = request.run(conn);
        if conn.is_autocommit() {
            // SQLite already rolled back (disk full, I/O error): a failed request answers its
            // own error; a "successful" one lost its changes.
            if !ok {
                return Ok(());
            }
            return Err(StoreError::backend(
                BackendErrorKind::Io,
                "SQLite rolled back the write transaction after an error",
            ));
        }
        let end = if ok { "COMMIT" } else { "ROLLBACK" };
        let result = conn
            .execute_batch(end)
            .map_err(db("end a write transaction"));
        if result.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        return result;
    }
    let result = batch
        .iter_mut()
        .try_for_each(|request| run_in_savepoint(conn, request.as_mut()));
    let result = result.and_then(|()| conn.execute_batch("COMMIT").map_err(db("commit")));
    if result.is_err() && !conn.is_autocommit() {
        // Best effort: if even the rollback fails, the connection reports it on the next BEGIN.
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

/// Runs a parameterless statement through the statement cache: a batch runs thousands of
/// savepoints, parsing each would cost more than many of the requests themselves.
fn exec_cached(conn: &Connection, sql: &str, what: &'static str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .map_err(db(what))
}

fn run_in_savepoint(conn: &Connection, request: &mut dyn Request) -> Result<(), StoreError> {
    let exec = |sql: &str, what: &'static str| exec_cached(conn, sql, what);
    exec("SAVEPOINT request", "open a savepoint")?;
    let ok = request.run(conn);
    if conn.is_autocommit() {
        // SQLite rolled the whole transaction back (disk full, I/O error): the batch is lost.
        return Err(StoreError::backend(
            BackendErrorKind::Io,
            "SQLite rolled back the write transaction after an error",
        ));
    }
    if !ok {
        exec("ROLLBACK TO request", "roll back a savepoint")?;
    }
    exec("RELEASE request", "close a savepoint")
}

fn reader_loop(conn: Connection, queue: Arc<Mutex<mpsc::Receiver<Box<dyn Request>>>>) {
    loop {
        let next = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        let Ok(mut request) = next else { return };
        // A read transaction gives the request one consistent snapshot across its statements.
        let failure = match conn.execute_batch("BEGIN") {
            Ok(()) => {
                request.run(&conn);
                conn.execute_batch("COMMIT")
                    .map_err(db("end a read transaction"))
                    .err()
            }
            Err(e) => Some(db("begin a read transaction")(e)),
        };
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        request.answer(failure);
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding helpers
// ---------------------------------------------------------------------------------------------

/// Maps a SQLite error to `Backend`, saying what was being done and whether a retry can help.
fn db(what: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| sqlite_error(what, e)
}

/// A SQLite error as a backend failure of the matching kind.
fn sqlite_error(what: &str, e: rusqlite::Error) -> StoreError {
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

fn to_blob<T: Serialize>(what: &str, value: &T) -> Result<Vec<u8>, StoreError> {
    rmp_serde::to_vec_named(value)
        .map_err(|e| StoreError::bug(format!("could not encode {what}: {e}")))
}

fn from_blob<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    rmp_serde::from_slice(bytes)
        .map_err(|e| StoreError::corrupt(format!("corrupt {what} in the database: {e}")))
}

fn event_blob(time_ms: i64, kind: &EventKind) -> Result<Vec<u8>, StoreError> {
    encode_event(time_ms, kind).map_err(encode_failed)
}

fn encode_failed(e: crate::data::payload::PayloadError) -> StoreError {
    StoreError::backend(
        BackendErrorKind::Invalid,
        format!("could not encode a history event: {e}"),
    )
}

fn conflict(run_id: &str, reason: impl Into<String>) -> StoreError {
    StoreError::Conflict {
        run_id: run_id.to_string(),
        reason: reason.into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

/// The columns `RawRun::from_row` reads, in order (a macro, so that the statements that use it
/// are literals: the run lookups are on every commit's path and cost no formatting).
macro_rules! run_columns {
    () => {
        "workflow_id, run_id, chain_id, workflow_type, status, next_event_id, history_bytes, \
         created_ms, closed_ms, result, failure, task_failure, summary, ready_at, lease_owner, \
         lease_until, task_queue"
    };
}

/// A run row with its task-queue state.
struct RunRow {
    record: RunRecord,
    lease_owner: Option<String>,
    lease_until: Option<i64>,
}

/// A run row as read, before its blobs are decoded.
struct RawRun {
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
}

impl RawRun {
    fn from_row(r: &Row<'_>) -> rusqlite::Result<RawRun> {
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
        })
    }

    fn decode(self) -> Result<RunRow, StoreError> {
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
            },
            lease_owner: self.lease_owner,
            lease_until: self.lease_until,
        })
    }
}

fn load_run(conn: &Connection, run_id: &str) -> Result<Option<RunRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE run_id = ?1"
        ))
        .map_err(db("prepare run lookup"))?;
    let raw = stmt
        .query_row([run_id], RawRun::from_row)
        .optional()
        .map_err(db("read a run"))?;
    raw.map(RawRun::decode).transpose()
}

fn latest_run(conn: &Connection, workflow_id: &str) -> Result<Option<RunRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached(concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE workflow_id = ?1 ORDER BY seq DESC LIMIT 1"
        ))
        .map_err(db("prepare latest run lookup"))?;
    let raw = stmt
        .query_row([workflow_id], RawRun::from_row)
        .optional()
        .map_err(db("read the latest run"))?;
    raw.map(RawRun::decode).transpose()
}

/// The run `run_id` of `workflow_id`, or its latest run.
fn find_run(
    conn: &Connection,
    workflow_id: &str,
    run_id: Option<&str>,
) -> Result<Option<RunRow>, StoreError> {
    match run_id {
        Some(id) => Ok(load_run(conn, id)?.filter(|r| r.record.workflow_id == workflow_id)),
        None => latest_run(conn, workflow_id),
    }
}

fn must_load_run(conn: &Connection, run_id: &str) -> Result<RunRecord, StoreError> {
    load_run(conn, run_id)?
        .map(|r| r.record)
        .ok_or_else(|| StoreError::bug(format!("run {run_id} vanished mid-transaction")))
}

const ACTIVITY_COLUMNS: &str = "run_id, seq, workflow_id, name, input, options, attempt, \
     scheduled_ms, started_ms, attempt_deadline, lease_until, heartbeat, last_failure";

struct RawActivity {
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
}

impl RawActivity {
    fn from_row(r: &Row<'_>) -> rusqlite::Result<RawActivity> {
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
        })
    }

    fn decode(self) -> Result<ActivityTask, StoreError> {
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
        })
    }
}

fn query_activities(
    conn: &Connection,
    where_clause: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<ActivityTask>, StoreError> {
    let sql = format!("SELECT {ACTIVITY_COLUMNS} FROM activities WHERE {where_clause}");
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(db("prepare activity query"))?;
    let raws = stmt
        .query_map(params, RawActivity::from_row)
        .map_err(db("query activities"))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db("read activities"))?;
    raws.into_iter().map(RawActivity::decode).collect()
}

fn read_update(
    conn: &Connection,
    chain_id: &str,
    update_id: &str,
) -> Result<Option<UpdateRecord>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT run_id, name, state FROM updates WHERE chain_id = ?1 AND update_id = ?2",
        )
        .map_err(db("prepare update lookup"))?;
    let row = stmt
        .query_row([chain_id, update_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })
        .optional()
        .map_err(db("read an update"))?;
    row.map(|(run_id, name, state)| {
        Ok(UpdateRecord {
            update_id: update_id.to_string(),
            run_id,
            name,
            state: from_blob("update state", &state)?,
        })
    })
    .transpose()
}

// ---------------------------------------------------------------------------------------------
// Write operations (run on the writer thread, inside a savepoint)
// ---------------------------------------------------------------------------------------------

/// Marks a run's workflow task ready at `now_ms` unless it is ready earlier already.
fn make_ready(conn: &Connection, run_id: &str, now_ms: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE runs SET ready_at = MIN(COALESCE(ready_at, ?2), ?2) WHERE run_id = ?1",
    )
    .and_then(|mut s| s.execute(params![run_id, now_ms]))
    .map_err(db("mark a run ready"))?;
    Ok(())
}

fn push_inbox(conn: &Connection, run_id: &str, kind: &Message) -> Result<(), StoreError> {
    let data = to_blob("inbox message", kind)?;
    conn.prepare_cached("INSERT INTO inbox (run_id, data) VALUES (?1, ?2)")
        .and_then(|mut s| s.execute(params![run_id, data]))
        .map_err(db("insert an inbox message"))?;
    Ok(())
}

fn append_event(
    conn: &Connection,
    run_id: &str,
    event_id: u64,
    time_ms: i64,
    kind: &EventKind,
) -> Result<u64, StoreError> {
    let data = event_blob(time_ms, kind)?;
    insert_events(conn, run_id, event_id, &data)?;
    Ok(data.len() as u64)
}

/// Stores consecutive encoded events, the first with id `first_event_id`, as one row.
fn insert_events(
    conn: &Connection,
    run_id: &str,
    first_event_id: u64,
    data: &[u8],
) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT INTO events (run_id, event_id, data) VALUES (?1, ?2, ?3)")
        .and_then(|mut s| s.execute(params![run_id, first_event_id as i64, data]))
        .map_err(db("append history events"))?;
    Ok(())
}

/// Creates a run with its `WorkflowStarted` event, ready at `now_ms`; returns its row.
fn create_run(
    conn: &Connection,
    new: &NewRun,
    chain_id: &str,
    now_ms: i64,
) -> Result<RunRecord, StoreError> {
    let data = event_blob(now_ms, &new.started_event())?;
    conn.prepare_cached(
        "INSERT INTO runs (run_id, workflow_id, chain_id, workflow_type, status, next_event_id, \
         history_bytes, created_ms, summary, ready_at, task_queue) \
         VALUES (?1, ?2, ?3, ?4, 'running', 2, ?5, ?6, x'', ?6, ?7)",
    )
    .and_then(|mut s| {
        s.execute(params![
            new.run_id,
            new.workflow_id,
            chain_id,
            new.workflow_type,
            data.len() as i64,
            now_ms,
            new.task_queue
        ])
    })
    .map_err(db("insert a run"))?;
    insert_events(conn, &new.run_id, 1, &data)?;
    Ok(new.created_record(chain_id, data.len() as u64, now_ms))
}

/// Drops a closed run's inbox, activities and timers, and abandons its unfinished updates (the
/// caller closes the run's row, its ready and lease marks cleared in the same statement).
fn clear_closed_run(conn: &Connection, run_id: &str) -> Result<(), StoreError> {
    for sql in [
        "DELETE FROM inbox WHERE run_id = ?1",
        "DELETE FROM activities WHERE run_id = ?1",
        "DELETE FROM timers WHERE run_id = ?1",
    ] {
        conn.prepare_cached(sql)
            .and_then(|mut s| s.execute([run_id]))
            .map_err(db("clear a closed run"))?;
    }
    let abandoned = to_blob("update state", &UpdateState::Abandoned)?;
    conn.prepare_cached("UPDATE updates SET state = ?2, final = 1 WHERE run_id = ?1 AND final = 0")
        .and_then(|mut s| s.execute(params![run_id, abandoned]))
        .map_err(db("abandon the updates of a closed run"))?;
    Ok(())
}

/// Terminates `run` and applies its [`Fallout`] (recursively for children it terminates), in
/// the caller's transaction.
fn terminate_run(
    conn: &Connection,
    run: &RunRecord,
    reason: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let mut work = vec![(run.clone(), reason.to_string())];
    while let Some((run, reason)) = work.pop() {
        close_terminated(conn, &run, &reason, now_ms)?;
        let fallout = Fallout::of(&run, first_parent(conn, &run.run_id)?, &reason);
        if let Some((parent, kind)) = fallout.parent {
            notify_run(conn, &parent, &kind, now_ms)?;
        }
        for (child, why) in fallout.terminate {
            if let Some(child) = child_run(conn, &child, &run.run_id)? {
                work.push((child, why));
            }
        }
        for (child, message) in fallout.cancel {
            if let Some(child) = child_run(conn, &child, &run.run_id)? {
                deliver_to(conn, &child, message, now_ms)?;
            }
        }
    }
    Ok(())
}

/// The running latest run of `workflow_id`, if it is a child of run `parent_run_id`.
fn child_run(
    conn: &Connection,
    workflow_id: &str,
    parent_run_id: &str,
) -> Result<Option<RunRecord>, StoreError> {
    let Some(run) = latest_run(conn, workflow_id)? else {
        return Ok(None);
    };
    if run.record.status != RunStatus::Running {
        return Ok(None);
    }
    let parent = first_parent(conn, &run.record.run_id)?;
    Ok(parent
        .filter(|p| p.run_id == parent_run_id)
        .map(|_| run.record))
}

/// The parent named by a run's `WorkflowStarted` event, if the run is a child.
fn first_parent(conn: &Connection, run_id: &str) -> Result<Option<ParentInfo>, StoreError> {
    let data: Option<Vec<u8>> = conn
        .prepare_cached("SELECT data FROM events WHERE run_id = ?1 AND event_id = 1")
        .and_then(|mut s| s.query_row([run_id], |r| r.get(0)).optional())
        .map_err(db("read a run's first event"))?;
    let Some(data) = data else {
        return Ok(None);
    };
    let first =
        decode_event(1, &data).map_err(|e| StoreError::corrupt(format!("run {run_id}: {e}")))?;
    Ok(parent_in(Some(&first.kind)))
}

/// Appends `WorkflowTerminated` and closes the run.
fn close_terminated(
    conn: &Connection,
    run: &RunRecord,
    reason: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let kind = EventKind::WorkflowTerminated {
        reason: reason.to_string(),
    };
    let size = append_event(conn, &run.run_id, run.next_event_id, now_ms, &kind)?;
    conn.prepare_cached(
        "UPDATE runs SET status = 'terminated', closed_ms = ?2, failure = ?3, \
         next_event_id = next_event_id + 1, history_bytes = history_bytes + ?4, \
         ready_at = NULL, lease_owner = NULL, lease_until = NULL WHERE run_id = ?1",
    )
    .and_then(|mut s| s.execute(params![run.run_id, now_ms, reason, size as i64]))
    .map_err(db("terminate a run"))?;
    clear_closed_run(conn, &run.run_id)
}

/// Delivers a message to a run: dedupe, closed check, inbox insert, run made ready.
fn deliver_to(
    conn: &Connection,
    run: &RunRecord,
    message: Message,
    now_ms: i64,
) -> Result<DeliverOutcome, StoreError> {
    if let Message::Update { update_id, .. } = &message {
        if let Some(existing) = read_update(conn, &run.chain_id, update_id)? {
            return Ok(DeliverOutcome::DuplicateUpdate(existing));
        }
    }
    if run.status != RunStatus::Running {
        return Err(StoreError::RunFinished {
            workflow_id: run.workflow_id.clone(),
            run_id: run.run_id.clone(),
            status: run.status,
        });
    }
    let kind = match message {
        Message::Signal {
            name,
            args,
            signal_id,
        } => {
            if let Some(id) = &signal_id {
                let inserted = conn
                    .prepare_cached(
                        "INSERT OR IGNORE INTO signal_ids (chain_id, signal_id) VALUES (?1, ?2)",
                    )
                    .and_then(|mut s| s.execute([&run.chain_id, id]))
                    .map_err(db("record a signal id"))?;
                if inserted == 0 {
                    return Ok(DeliverOutcome::DuplicateSignal {
                        run_id: run.run_id.clone(),
                    });
                }
            }
            Message::Signal {
                name,
                args,
                signal_id,
            }
        }
        Message::Update {
            update_id,
            name,
            args,
        } => {
            let state = to_blob("update state", &UpdateState::Requested)?;
            conn.prepare_cached(
                "INSERT INTO updates (chain_id, update_id, run_id, name, state, final) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 0)",
            )
            .and_then(|mut s| s.execute(params![run.chain_id, update_id, run.run_id, name, state]))
            .map_err(db("record an update"))?;
            Message::Update {
                update_id,
                name,
                args,
            }
        }
        other => other,
    };
    push_inbox(conn, &run.run_id, &kind)?;
    make_ready(conn, &run.run_id, now_ms)?;
    Ok(DeliverOutcome::Enqueued {
        run_id: run.run_id.clone(),
    })
}

fn start_run(conn: &Connection, req: StartRequest) -> Result<StartOutcome, StoreError> {
    start_run_returning(conn, req).map(|(outcome, _)| outcome)
}

/// [`start_run`], also returning the created run's row.
fn start_run_returning(
    conn: &Connection,
    req: StartRequest,
) -> Result<(StartOutcome, Option<RunRecord>), StoreError> {
    let StartRequest {
        run,
        policy,
        messages,
        now_ms,
    } = req;
    let running =
        latest_run(conn, &run.workflow_id)?.filter(|r| r.record.status == RunStatus::Running);
    if let Some(existing) = running {
        let existing = existing.record;
        match policy {
            IdConflictPolicy::Fail => {
                return Err(StoreError::AlreadyStarted {
                    workflow_id: run.workflow_id,
                    run_id: existing.run_id,
                })
            }
            IdConflictPolicy::UseExisting => {
                let mut outcomes = Vec::with_capacity(messages.len());
                for m in messages {
                    outcomes.push(deliver_to(conn, &existing, m, now_ms)?);
                }
                let outcome = StartOutcome {
                    run_id: existing.run_id,
                    started: false,
                    messages: outcomes,
                };
                return Ok((outcome, None));
            }
            IdConflictPolicy::TerminateExisting => {
                terminate_run(conn, &existing, "terminated by a new start", now_ms)?;
            }
        }
    }
    let created = create_run(conn, &run, &run.run_id, now_ms)?;
    let mut outcomes = Vec::with_capacity(messages.len());
    for m in messages {
        outcomes.push(deliver_to(conn, &created, m, now_ms)?);
    }
    let outcome = StartOutcome {
        run_id: run.run_id,
        started: true,
        messages: outcomes,
    };
    Ok((outcome, Some(created)))
}

/// Checks that `worker_id` holds the workflow task lease of a running run.
fn check_task_owner(run: &RunRow, worker_id: &str) -> Result<(), StoreError> {
    let run_id = &run.record.run_id;
    check_running(&run.record)?;
    match &run.lease_owner {
        Some(owner) if owner == worker_id => Ok(()),
        Some(owner) => Err(conflict(
            run_id,
            format!(
                "worker {worker_id:?} lost the workflow task lease to {owner:?}; drop the task"
            ),
        )),
        None => Err(conflict(
            run_id,
            format!("worker {worker_id:?} holds no workflow task lease on this run; drop the task"),
        )),
    }
}

/// Checks that a running run is free of leases (or its lease expired), for a commit without one.
fn check_unleased(run: &RunRow, now_ms: i64) -> Result<(), StoreError> {
    let run_id = &run.record.run_id;
    check_running(&run.record)?;
    match (&run.lease_owner, run.lease_until) {
        (Some(owner), Some(until)) if until > now_ms => Err(conflict(
            run_id,
            format!("worker {owner:?} holds the workflow task lease; drop the task"),
        )),
        _ => Ok(()),
    }
}

fn inbox_has_after(
    conn: &Connection,
    run_id: &str,
    after: Option<u64>,
) -> Result<bool, StoreError> {
    let after = after.map_or(-1, |s| s as i64);
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM inbox WHERE run_id = ?1 AND seq > ?2)")
        .and_then(|mut s| s.query_row(params![run_id, after], |r| r.get(0)))
        .map_err(db("look at a run's inbox"))
}

/// Commits a workflow task. Returns the committed run and the spent commit, so that the caller
/// frees the commit's events and messages on its own thread: freeing another thread's memory
/// makes glibc's allocator lock that thread's arena, and the writer would contend with the
/// workflow worker on every commit of a busy engine.
fn commit(conn: &Connection, mut c: TaskCommit) -> Result<(RunRecord, TaskCommit), StoreError> {
    let run_id = c.run_id.as_str();
    let now = c.now_ms;
    let run = load_run(conn, run_id)?.ok_or_else(|| conflict(run_id, "no such run"))?;
    if c.without_lease {
        check_unleased(&run, now)?;
        if inbox_has_after(conn, run_id, None)? {
            return Err(StoreError::NewMessages {
                run_id: run_id.to_string(),
            });
        }
    } else {
        check_task_owner(&run, &c.worker_id)?;
    }
    let run = run.record;
    if run.next_event_id != c.expected_next_event_id {
        return Err(conflict(
            run_id,
            format!(
                "the workflow task expected next event id {}, but the history is at {}",
                c.expected_next_event_id, run.next_event_id
            ),
        ));
    }
    // (A lease-free commit found the inbox empty above.)
    if c.close.is_some() && !c.without_lease && inbox_has_after(conn, run_id, c.consumed_through)? {
        return Err(StoreError::NewMessages {
            run_id: run_id.to_string(),
        });
    }

    // The task's events as one record: one row insert, and no per-event key repeated.
    let mut chunk = Vec::new();
    for (time_ms, kind) in &c.events {
        encode_event_into(&mut chunk, *time_ms, kind).map_err(encode_failed)?;
    }
    let next_event_id = run.next_event_id + c.events.len() as u64;
    let added_bytes = chunk.len() as u64;
    if !chunk.is_empty() {
        insert_events(conn, run_id, run.next_event_id, &chunk)?;
    }
    if let Some(through) = c.consumed_through {
        conn.prepare_cached("DELETE FROM inbox WHERE run_id = ?1 AND seq <= ?2")
            .and_then(|mut s| s.execute(params![run_id, through as i64]))
            .map_err(db("consume inbox messages"))?;
    }
    for a in &c.new_activities {
        let options = to_blob("activity options", &a.options)?;
        let deadline = a
            .options
            .schedule_to_close
            .map(|d| now + d.as_millis() as i64);
        if let Some(owner) = &c.lease_activities_to {
            let (attempt_deadline, lease_until) = activity_lease(&a.options, now, now);
            conn.prepare_cached(
                "INSERT INTO activities (run_id, seq, workflow_id, name, input, options, attempt, \
                 scheduled_ms, schedule_deadline, visible_at, started_ms, attempt_deadline, \
                 lease_until, lease_owner) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?7, ?7, ?9, ?10, ?11)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id,
                    a.seq,
                    run.workflow_id,
                    a.name,
                    a.input.as_bytes(),
                    options,
                    now,
                    deadline,
                    attempt_deadline,
                    lease_until,
                    owner
                ])
            })
            .map_err(db("schedule and lease an activity"))?;
            continue;
        }
        conn.prepare_cached(
            "INSERT INTO activities (run_id, seq, workflow_id, name, input, options, attempt, \
             scheduled_ms, schedule_deadline, visible_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?7)",
        )
        .and_then(|mut s| {
            s.execute(params![
                run_id,
                a.seq,
                run.workflow_id,
                a.name,
                a.input.as_bytes(),
                options,
                now,
                deadline
            ])
        })
        .map_err(db("schedule an activity"))?;
    }
    for (seq, fire_at) in &c.new_timers {
        conn.prepare_cached("INSERT INTO timers (run_id, seq, fire_at) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![run_id, seq, fire_at]))
            .map_err(db("start a timer"))?;
    }
    for (seq, attempt) in &c.resolve_activities {
        let n = conn
            .prepare_cached(
                "DELETE FROM activities WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| s.execute(params![run_id, seq, attempt]))
            .map_err(db("resolve an activity"))?;
        if n == 0 {
            return Err(conflict(
                run_id,
                format!("activity #{seq} attempt {attempt} is no longer pending"),
            ));
        }
    }
    for seq in &c.cancel_activities {
        conn.prepare_cached("DELETE FROM activities WHERE run_id = ?1 AND seq = ?2")
            .and_then(|mut s| s.execute(params![run_id, seq]))
            .map_err(db("cancel an activity"))?;
    }
    for seq in &c.cancel_timers {
        conn.prepare_cached("DELETE FROM timers WHERE run_id = ?1 AND seq = ?2")
            .and_then(|mut s| s.execute(params![run_id, seq]))
            .map_err(db("cancel a timer"))?;
    }
    // Each update once, in its last state: an update accepted and completed in one task would
    // otherwise enter and leave the pending index within the transaction (one more page).
    let mut written = std::collections::HashSet::new();
    for (update_id, name, state) in c.updates.iter().rev() {
        if !written.insert(update_id.as_str()) {
            continue;
        }
        let blob = to_blob("update state", state)?;
        conn.prepare_cached(
            "INSERT INTO updates (chain_id, update_id, run_id, name, state, final) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT (chain_id, update_id) \
             DO UPDATE SET name = excluded.name, state = excluded.state, final = excluded.final",
        )
        .and_then(|mut s| {
            s.execute(params![
                run.chain_id,
                update_id,
                run_id,
                name,
                blob,
                state.is_final()
            ])
        })
        .map_err(db("record an update state"))?;
    }
    // The run row in one statement, closed at once if the task closes it.
    let close = c.close.take();
    let closing = close.as_ref().map(|close| match close {
        RunClose::Completed(result) => (RunStatus::Completed, Some(result.as_bytes()), None),
        RunClose::Failed(message) => (RunStatus::Failed, None, Some(message.as_str())),
        RunClose::Cancelled(message) => (RunStatus::Cancelled, None, Some(message.as_str())),
        RunClose::ContinuedAsNew(_) => (RunStatus::ContinuedAsNew, None, None),
    });
    // Ready again if messages wait (a closing task found none after those it consumed).
    let ready_at = if closing.is_none() && !c.without_lease && inbox_has_after(conn, run_id, None)?
    {
        Some(now)
    } else {
        None
    };
    let (status, result, failure) = match closing {
        Some((status, result, failure)) => (Some(status.as_str()), result, failure),
        None => (None, None, None),
    };
    conn.prepare_cached(
        "UPDATE runs SET next_event_id = ?2, history_bytes = history_bytes + ?3, summary = ?4, \
         task_failure = NULL, lease_owner = NULL, lease_until = NULL, ready_at = ?5, \
         status = COALESCE(?6, status), closed_ms = COALESCE(?7, closed_ms), \
         result = COALESCE(?8, result), failure = COALESCE(?9, failure) \
         WHERE run_id = ?1",
    )
    .and_then(|mut s| {
        s.execute(params![
            run_id,
            next_event_id as i64,
            added_bytes as i64,
            c.summary.as_bytes(),
            ready_at,
            status,
            status.map(|_| now),
            result,
            failure
        ])
    })
    .map_err(db("update the committed run"))?;

    // The committed row, as just written (no re-read on the writer thread).
    let mut record = RunRecord {
        next_event_id,
        history_bytes: run.history_bytes + added_bytes,
        task_failure: None,
        summary: std::mem::take(&mut c.summary),
        ..run
    };
    if let Some((status, result, failure)) = closing {
        record.status = status;
        record.closed_ms = Some(now);
        record.result = result.map(|r| Payload::unchecked(r.to_vec()));
        record.failure = failure.map(str::to_string);
        clear_closed_run(conn, run_id)?;
    }
    if let Some(RunClose::ContinuedAsNew(new)) = close {
        if new.workflow_id != record.workflow_id {
            return Err(conflict(
                run_id,
                format!(
                    "continue-as-new must keep workflow id {:?}, got {:?}",
                    record.workflow_id, new.workflow_id
                ),
            ));
        }
        let new = NewRun {
            continued_from: Some(run_id.to_string()),
            ..new
        };
        create_run(conn, &new, &record.chain_id, now)?;
    }
    apply_side_effects(
        conn,
        run_id,
        SideEffects {
            start_children: std::mem::take(&mut c.start_children),
            deliver: std::mem::take(&mut c.deliver),
            terminate: std::mem::take(&mut c.terminate),
            notify: std::mem::take(&mut c.notify),
        },
        now,
    )?;
    Ok((record, c))
}

fn schedule_row(r: &Row<'_>) -> rusqlite::Result<ScheduleRow> {
    Ok(ScheduleRow {
        schedule_id: r.get(0)?,
        data: Payload::unchecked(r.get(1)?),
        version: r.get::<_, i64>(2)? as u64,
        next_check_ms: r.get(3)?,
    })
}

/// What a workflow task does to other runs, in its own transaction.
struct SideEffects {
    start_children: Vec<(u32, NewRun)>,
    deliver: Vec<(String, Message)>,
    terminate: Vec<(String, String)>,
    notify: Vec<(String, Message)>,
}

fn apply_side_effects(
    conn: &Connection,
    run_id: &str,
    fx: SideEffects,
    now: i64,
) -> Result<(), StoreError> {
    for (seq, child) in fx.start_children {
        let running =
            latest_run(conn, &child.workflow_id)?.filter(|r| r.record.status == RunStatus::Running);
        if let Some(existing) = running {
            let outcome = ChildOutcome::StartFailed(format!(
                "workflow {:?} is already running (run {})",
                child.workflow_id, existing.record.run_id
            ));
            push_inbox(conn, run_id, &Message::ChildClosed { seq, outcome })?;
            make_ready(conn, run_id, now)?;
        } else {
            create_run(conn, &child, &child.run_id, now)?;
        }
    }
    for (workflow_id, message) in fx.deliver {
        if let Some(target) = latest_run(conn, &workflow_id)? {
            match deliver_to(conn, &target.record, message, now) {
                Ok(_) | Err(StoreError::RunFinished { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    for (workflow_id, reason) in fx.terminate {
        if let Some(target) =
            latest_run(conn, &workflow_id)?.filter(|r| r.record.status == RunStatus::Running)
        {
            terminate_run(conn, &target.record, &reason, now)?;
        }
    }
    for (target, kind) in fx.notify {
        notify_run(conn, &target, &kind, now)?;
    }
    Ok(())
}

/// Puts a message in a running run's inbox; false if the run is closed or unknown.
fn notify_run(
    conn: &Connection,
    run_id: &str,
    kind: &Message,
    now: i64,
) -> Result<bool, StoreError> {
    match load_run(conn, run_id)? {
        Some(run) if run.record.status == RunStatus::Running => {
            push_inbox(conn, run_id, kind)?;
            make_ready(conn, run_id, now)?;
            Ok(true)
        }
        _ => Ok(false),
    }
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

/// A JSON array of names for `json_each`, or `None` for "any".
fn name_filter(names: Option<Vec<String>>) -> Result<Option<String>, StoreError> {
    names
        .map(|n| {
            let quoted: Vec<String> = n.iter().map(|s| json_string(s)).collect();
            Ok(format!("[{}]", quoted.join(",")))
        })
        .transpose()
}

fn poll_workflow_tasks(
    conn: &Connection,
    worker_id: &str,
    now_ms: i64,
    lease_ms: i64,
    max: usize,
    types: Option<Vec<String>>,
    queues: Option<Vec<String>>,
) -> Result<Vec<WorkflowTask>, StoreError> {
    let types = name_filter(types)?;
    let queues = name_filter(queues)?;
    let ids: Vec<String> = conn
        .prepare_cached(
            "SELECT run_id FROM runs WHERE status = 'running' AND ready_at <= ?1 \
             AND (lease_owner IS NULL OR lease_until <= ?1) \
             AND (?3 IS NULL OR workflow_type IN (SELECT value FROM json_each(?3))) \
             AND (?4 IS NULL OR task_queue IN (SELECT value FROM json_each(?4))) \
             ORDER BY ready_at, seq LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(params![now_ms, max as i64, types, queues], |r| r.get(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(db("find ready workflow tasks"))?;
    let mut tasks = Vec::with_capacity(ids.len());
    for run_id in ids {
        conn.prepare_cached("UPDATE runs SET lease_owner = ?2, lease_until = ?3 WHERE run_id = ?1")
            .and_then(|mut s| s.execute(params![run_id, worker_id, now_ms + lease_ms]))
            .map_err(db("lease a workflow task"))?;
        tasks.push(leased_task(conn, &run_id)?);
    }
    Ok(tasks)
}

/// Leases one running run (free, expired, or already ours) and reads its inbox.
fn lease_run(
    conn: &Connection,
    run_id: &str,
    worker_id: &str,
    now_ms: i64,
    lease_ms: i64,
) -> Result<Option<WorkflowTask>, StoreError> {
    let n = conn
        .prepare_cached(
            "UPDATE runs SET lease_owner = ?2, lease_until = ?3 WHERE run_id = ?1 \
             AND status = 'running' AND (lease_owner IS NULL OR lease_until <= ?4)",
        )
        .and_then(|mut s| s.execute(params![run_id, worker_id, now_ms + lease_ms, now_ms]))
        .map_err(db("lease a run"))?;
    if n == 0 {
        return Ok(None);
    }
    Ok(Some(leased_task(conn, run_id)?))
}

/// A leased run with its inbox.
fn leased_task(conn: &Connection, run_id: &str) -> Result<WorkflowTask, StoreError> {
    {
        let run = must_load_run(conn, run_id)?;
        let rows: Vec<(i64, Vec<u8>)> = conn
            .prepare_cached("SELECT seq, data FROM inbox WHERE run_id = ?1 ORDER BY seq")
            .and_then(|mut s| {
                s.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<_, _>>()
            })
            .map_err(db("read a run's inbox"))?;
        let messages = rows
            .into_iter()
            .map(|(seq, data)| {
                Ok(InboxMessage {
                    seq: seq as u64,
                    message: from_blob("inbox message", &data)?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(WorkflowTask { run, messages })
    }
}

fn poll_activity_tasks(
    conn: &Connection,
    worker_id: &str,
    now_ms: i64,
    max: usize,
    names: Option<Vec<String>>,
) -> Result<Vec<ActivityTask>, StoreError> {
    let names = name_filter(names)?;
    let due = query_activities(
        conn,
        "lease_owner IS NULL AND visible_at <= ?1 \
         AND (schedule_deadline IS NULL OR schedule_deadline > ?1) \
         AND (?3 IS NULL OR name IN (SELECT value FROM json_each(?3))) \
         ORDER BY visible_at, run_id, seq LIMIT ?2",
        params![now_ms, max as i64, names],
    )?;
    let mut out = Vec::with_capacity(due.len());
    for mut task in due {
        let (deadline, lease) = activity_lease(&task.options, task.scheduled_ms, now_ms);
        conn.prepare_cached(
            "UPDATE activities SET lease_owner = ?3, started_ms = ?4, attempt_deadline = ?5, \
             lease_until = ?6 WHERE run_id = ?1 AND seq = ?2",
        )
        .and_then(|mut s| {
            s.execute(params![
                task.run_id,
                task.seq,
                worker_id,
                now_ms,
                deadline,
                lease
            ])
        })
        .map_err(db("lease an activity task"))?;
        task.started_ms = Some(now_ms);
        task.attempt_deadline_ms = Some(deadline);
        task.lease_until_ms = Some(lease);
        out.push(task);
    }
    Ok(out)
}

fn heartbeat_activity(
    conn: &Connection,
    run_id: &str,
    seq: u32,
    attempt: u32,
    details: Option<Payload>,
    now_ms: i64,
) -> Result<bool, StoreError> {
    /// Options, attempt deadline, lease expiry and lease owner of the attempt.
    type LeaseRow = (Vec<u8>, Option<i64>, Option<i64>, Option<String>);
    let row: Option<LeaseRow> = conn
        .prepare_cached(
            "SELECT options, attempt_deadline, lease_until, lease_owner FROM activities \
             WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
        )
        .and_then(|mut s| {
            s.query_row(params![run_id, seq, attempt], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })
        .map_err(db("read an activity"))?;
    let Some((options, Some(deadline), Some(lease), Some(_owner))) = row else {
        return Ok(false);
    };
    if lease <= now_ms {
        return Ok(false);
    }
    let options = from_blob("activity options", &options)?;
    let lease = heartbeat_lease(&options, deadline, now_ms);
    conn.prepare_cached(
        "UPDATE activities SET heartbeat = COALESCE(?4, heartbeat), lease_until = ?5 \
         WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
    )
    .and_then(|mut s| {
        s.execute(params![
            run_id,
            seq,
            attempt,
            details.as_ref().map(Payload::as_bytes),
            lease
        ])
    })
    .map_err(db("record a heartbeat"))?;
    Ok(true)
}

fn resolve_activity(
    conn: &Connection,
    run_id: &str,
    seq: u32,
    attempt: u32,
    resolution: ActivityResolution,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let deleted = conn
        .prepare_cached("DELETE FROM activities WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3")
        .and_then(|mut s| s.execute(params![run_id, seq, attempt]))
        .map_err(db("resolve an activity"))?;
    if deleted == 0 {
        return Ok(false);
    }
    push_inbox(conn, run_id, &Message::ActivityResolved { seq, resolution })?;
    make_ready(conn, run_id, now_ms)?;
    Ok(true)
}

fn fire_due_timers(
    conn: &Connection,
    now_ms: i64,
    max: usize,
) -> Result<Vec<(String, u32)>, StoreError> {
    let due: Vec<(String, u32)> = conn
        .prepare_cached(
            "SELECT run_id, seq FROM timers WHERE fire_at <= ?1 \
             ORDER BY fire_at, run_id, seq LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(params![now_ms, max as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()
        })
        .map_err(db("find due timers"))?;
    for (run_id, seq) in &due {
        conn.prepare_cached("DELETE FROM timers WHERE run_id = ?1 AND seq = ?2")
            .and_then(|mut s| s.execute(params![run_id, seq]))
            .map_err(db("fire a timer"))?;
        push_inbox(conn, run_id, &Message::TimerFired { seq: *seq })?;
        make_ready(conn, run_id, now_ms)?;
    }
    Ok(due)
}

// ---------------------------------------------------------------------------------------------
// Read operations (run on a reader thread, inside a read transaction)
// ---------------------------------------------------------------------------------------------

fn next_wakeup(conn: &Connection, now_ms: i64) -> Result<Option<i64>, StoreError> {
    conn.prepare_cached(
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
        )",
    )
    .and_then(|mut s| s.query_row([now_ms], |r| r.get(0)))
    .map_err(db("compute the next wake-up"))
}

fn read_history(
    conn: &Connection,
    run_id: &str,
    from_event_id: u64,
) -> Result<Vec<HistoryEvent>, StoreError> {
    // From the row holding `from_event_id` (a row may hold several events) onwards.
    let rows: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT event_id, data FROM events WHERE run_id = ?1 AND event_id >= coalesce( \
             (SELECT max(event_id) FROM events WHERE run_id = ?1 AND event_id <= ?2), ?2) \
             ORDER BY event_id",
        )
        .and_then(|mut s| {
            s.query_map(
                params![run_id, from_event_id.min(i64::MAX as u64) as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?
            .collect::<Result<_, _>>()
        })
        .map_err(db("read a history"))?;
    let mut events = Vec::new();
    for (id, data) in rows {
        let decoded = decode_events(id as u64, &data)
            .map_err(|e| StoreError::corrupt(format!("run {run_id}: {e}")))?;
        events.extend(decoded.into_iter().filter(|e| e.event_id >= from_event_id));
    }
    Ok(events)
}

fn list_runs(conn: &Connection, filter: &ListFilter) -> Result<Vec<RunRecord>, StoreError> {
    let sql = concat!(
        "SELECT ",
        run_columns!(),
        " FROM runs r \
         WHERE (?1 IS NULL OR workflow_type = ?1) AND (?2 IS NULL OR status = ?2) \
         AND (?3 = 0 OR seq = (SELECT MAX(seq) FROM runs l WHERE l.workflow_id = r.workflow_id)) \
         ORDER BY seq DESC LIMIT ?4"
    );
    let limit = if filter.limit == 0 {
        -1
    } else {
        filter.limit.min(i64::MAX as usize) as i64
    };
    let raws: Vec<RawRun> = conn
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(
                params![
                    filter.workflow_type,
                    filter.status.map(RunStatus::as_str),
                    filter.latest_only,
                    limit
                ],
                RawRun::from_row,
            )?
            .collect::<Result<_, _>>()
        })
        .map_err(db("list runs"))?;
    raws.into_iter()
        .map(|raw| Ok(raw.decode()?.record))
        .collect()
}

fn pending_updates(conn: &Connection, run_id: &str) -> Result<Vec<UpdateRecord>, StoreError> {
    let rows: Vec<(String, String, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT update_id, name, state FROM updates WHERE run_id = ?1 AND final = 0 \
             ORDER BY rowid",
        )
        .and_then(|mut s| {
            s.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()
        })
        .map_err(db("read pending updates"))?;
    rows.into_iter()
        .map(|(update_id, name, state)| {
            Ok(UpdateRecord {
                update_id,
                run_id: run_id.to_string(),
                name,
                state: from_blob("update state", &state)?,
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The trait
// ---------------------------------------------------------------------------------------------

impl Store for SqliteStore {
    fn start_run(&self, req: StartRequest) -> StoreFuture<'_, StartOutcome> {
        self.write(move |conn| start_run(conn, req))
    }

    fn start_run_with_task(
        &self,
        req: StartRequest,
        first: TaskCommit,
    ) -> StoreFuture<'_, (StartOutcome, Option<Result<RunRecord, StoreError>>)> {
        self.write(move |conn| {
            let (outcome, created) = start_run_returning(conn, req)?;
            let Some(mut created) = created else {
                return Ok((outcome, None));
            };
            // A first task of the new run (lease-free, at event 2, no start messages in its
            // inbox) that records nothing needs none of the general commit's checks.
            let trivial = first.records_nothing()
                && first.without_lease
                && first.run_id == created.run_id
                && first.expected_next_event_id == created.next_event_id
                && outcome.messages.is_empty();
            if trivial {
                // All the task does is clear the ready mark and set the summary: just that.
                conn.prepare_cached(
                    "UPDATE runs SET ready_at = NULL, summary = ?2 WHERE run_id = ?1",
                )
                .and_then(|mut s| s.execute(params![created.run_id, first.summary.as_bytes()]))
                .map_err(db("record an empty first task"))?;
                created.summary = first.summary;
                return Ok((outcome, Some(Ok(created))));
            }
            // The task in a nested savepoint: if it fails, the start alone is kept.
            exec_cached(conn, "SAVEPOINT first_task", "open a savepoint")?;
            let first = commit(conn, first).map(|(record, _spent)| record);
            if first.is_err() {
                exec_cached(conn, "ROLLBACK TO first_task", "roll back a savepoint")?;
            }
            exec_cached(conn, "RELEASE first_task", "close a savepoint")?;
            Ok((outcome, Some(first)))
        })
    }

    fn deliver(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome> {
        let workflow_id = workflow_id.to_string();
        let run_id = run_id.map(str::to_string);
        self.write(move |conn| {
            let run = find_run(conn, &workflow_id, run_id.as_deref())?.ok_or_else(|| {
                StoreError::NotFound {
                    workflow_id: workflow_id.clone(),
                    run_id: run_id.clone(),
                }
            })?;
            deliver_to(conn, &run.record, message, now_ms)
        })
    }

    fn poll_workflow_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let worker_id = worker_id.to_string();
        self.write_soft(move |conn| {
            poll_workflow_tasks(conn, &worker_id, now_ms, lease_ms, max, None, None)
        })
    }

    fn poll_workflow_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        workflow_types: Vec<String>,
        task_queues: Vec<String>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let worker_id = worker_id.to_string();
        self.write_soft(move |conn| {
            poll_workflow_tasks(
                conn,
                &worker_id,
                now_ms,
                lease_ms,
                max,
                Some(workflow_types),
                Some(task_queues),
            )
        })
    }

    fn poll_activity_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
        names: Vec<String>,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let worker_id = worker_id.to_string();
        self.write_soft(move |conn| poll_activity_tasks(conn, &worker_id, now_ms, max, Some(names)))
    }

    fn lease_run(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> StoreFuture<'_, Option<WorkflowTask>> {
        let (run_id, worker_id) = (run_id.to_string(), worker_id.to_string());
        self.write_soft(move |conn| lease_run(conn, &run_id, &worker_id, now_ms, lease_ms))
    }

    fn commit_workflow_task(&self, c: TaskCommit) -> StoreFuture<'_, RunRecord> {
        let committed = if c.sync {
            self.write(move |conn| commit(conn, c))
        } else {
            self.write_soft(move |conn| commit(conn, c))
        };
        // The spent commit is dropped here, on the caller's thread (see `commit`).
        Box::pin(async move { committed.await.map(|(record, _spent)| record) })
    }

    fn fail_workflow_task(
        &self,
        run_id: &str,
        worker_id: &str,
        failure: TaskFailure,
    ) -> StoreFuture<'_, ()> {
        let run_id = run_id.to_string();
        let worker_id = worker_id.to_string();
        self.write_soft(move |conn| {
            let run = load_run(conn, &run_id)?.ok_or_else(|| conflict(&run_id, "no such run"))?;
            check_task_owner(&run, &worker_id)?;
            let blob = to_blob("task failure", &failure)?;
            conn.prepare_cached(
                "UPDATE runs SET task_failure = ?2, lease_owner = NULL, lease_until = NULL, \
                 ready_at = ?3 WHERE run_id = ?1",
            )
            .and_then(|mut s| s.execute(params![run_id, blob, failure.retry_at_ms]))
            .map_err(db("record a workflow task failure"))?;
            Ok(())
        })
    }

    fn release_workflow_task(&self, run_id: &str, worker_id: &str) -> StoreFuture<'_, ()> {
        let run_id = run_id.to_string();
        let worker_id = worker_id.to_string();
        self.write_soft(move |conn| {
            // A leased run was ready when it was polled and `ready_at` only moves earlier while
            // leased, so keeping it makes the run ready at once (the trait gives no clock here).
            conn.prepare_cached(
                "UPDATE runs SET lease_owner = NULL, lease_until = NULL, \
                 ready_at = COALESCE(ready_at, 0) WHERE run_id = ?1 AND lease_owner = ?2",
            )
            .and_then(|mut s| s.execute([&run_id, &worker_id]))
            .map_err(db("release a workflow task"))?;
            Ok(())
        })
    }

    fn poll_activity_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let worker_id = worker_id.to_string();
        self.write_soft(move |conn| poll_activity_tasks(conn, &worker_id, now_ms, max, None))
    }

    fn heartbeat_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        details: Option<Payload>,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_string();
        self.write_soft(move |conn| {
            heartbeat_activity(conn, &run_id, seq, attempt, details, now_ms)
        })
    }

    fn resolve_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        resolution: ActivityResolution,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_string();
        self.write(move |conn| resolve_activity(conn, &run_id, seq, attempt, resolution, now_ms))
    }

    fn retry_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        visible_at_ms: i64,
        failure: ActivityFailure,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_string();
        self.write(move |conn| {
            let failure = to_blob("activity failure", &failure)?;
            let changed = conn
                .prepare_cached(
                    "UPDATE activities SET attempt = attempt + 1, visible_at = ?4, \
                     lease_owner = NULL, started_ms = NULL, attempt_deadline = NULL, \
                     lease_until = NULL, last_failure = ?5 \
                     WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
                )
                .and_then(|mut s| s.execute(params![run_id, seq, attempt, visible_at_ms, failure]))
                .map_err(db("schedule an activity retry"))?;
            Ok(changed > 0)
        })
    }

    fn release_activity(&self, run_id: &str, seq: u32, attempt: u32) -> StoreFuture<'_, ()> {
        let run_id = run_id.to_string();
        self.write(move |conn| {
            // visible_at was due when the attempt was leased, so it is due now.
            conn.prepare_cached(
                "UPDATE activities SET lease_owner = NULL, started_ms = NULL, \
                 attempt_deadline = NULL, lease_until = NULL \
                 WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| s.execute(params![run_id, seq, attempt]))
            .map_err(db("release an activity task"))?;
            Ok(())
        })
    }

    fn expired_activities(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.read(move |conn| {
            query_activities(
                conn,
                "(lease_owner IS NOT NULL AND lease_until <= ?1) OR schedule_deadline <= ?1 \
                 ORDER BY run_id, seq LIMIT ?2",
                params![now_ms, max as i64],
            )
        })
    }

    fn fire_due_timers(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<(String, u32)>> {
        self.write_soft(move |conn| fire_due_timers(conn, now_ms, max))
    }

    fn next_wakeup(&self, now_ms: i64) -> StoreFuture<'_, Option<i64>> {
        self.read(move |conn| next_wakeup(conn, now_ms))
    }

    fn get_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<RunRecord>> {
        let workflow_id = workflow_id.to_string();
        let run_id = run_id.map(str::to_string);
        self.read(
            move |conn| Ok(find_run(conn, &workflow_id, run_id.as_deref())?.map(|r| r.record)),
        )
    }

    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>> {
        let run_id = run_id.to_string();
        self.read(move |conn| read_history(conn, &run_id, from_event_id))
    }

    fn list_runs(&self, filter: ListFilter) -> StoreFuture<'_, Vec<RunRecord>> {
        self.read(move |conn| list_runs(conn, &filter))
    }

    fn get_update(
        &self,
        workflow_id: &str,
        update_id: &str,
    ) -> StoreFuture<'_, Option<UpdateRecord>> {
        let workflow_id = workflow_id.to_string();
        let update_id = update_id.to_string();
        self.read(move |conn| match latest_run(conn, &workflow_id)? {
            Some(run) => read_update(conn, &run.record.chain_id, &update_id),
            None => Ok(None),
        })
    }

    fn pending_updates(&self, run_id: &str) -> StoreFuture<'_, Vec<UpdateRecord>> {
        let run_id = run_id.to_string();
        self.read(move |conn| pending_updates(conn, &run_id))
    }

    fn pending_activities(&self, run_id: &str) -> StoreFuture<'_, Vec<ActivityTask>> {
        let run_id = run_id.to_string();
        self.read(move |conn| query_activities(conn, "run_id = ?1 ORDER BY seq", [run_id]))
    }

    fn create_schedule(&self, row: ScheduleRow) -> StoreFuture<'_, ()> {
        self.write(move |conn| {
            let inserted = conn
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
            if inserted == 0 {
                return Err(StoreError::ScheduleExists(row.schedule_id));
            }
            Ok(())
        })
    }

    fn update_schedule(
        &self,
        schedule_id: &str,
        expected_version: u64,
        data: Payload,
        next_check_ms: Option<i64>,
    ) -> StoreFuture<'_, bool> {
        let id = schedule_id.to_string();
        self.write(move |conn| {
            let n = conn
                .prepare_cached(
                    "UPDATE schedules SET data = ?3, next_check_ms = ?4, version = version + 1 \
                     WHERE schedule_id = ?1 AND version = ?2",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        id,
                        expected_version as i64,
                        data.as_bytes(),
                        next_check_ms
                    ])
                })
                .map_err(db("update a schedule"))?;
            Ok(n == 1)
        })
    }

    fn get_schedule(&self, schedule_id: &str) -> StoreFuture<'_, Option<ScheduleRow>> {
        let id = schedule_id.to_string();
        self.read(move |conn| {
            conn.prepare_cached(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules WHERE schedule_id = ?1",
            )
            .and_then(|mut s| s.query_row([id], schedule_row).optional())
            .map_err(db("read a schedule"))
        })
    }

    fn list_schedules(&self) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.read(move |conn| {
            conn.prepare_cached(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules ORDER BY schedule_id",
            )
            .and_then(|mut s| s.query_map([], schedule_row)?.collect())
            .map_err(db("list schedules"))
        })
    }

    fn delete_schedule(&self, schedule_id: &str) -> StoreFuture<'_, bool> {
        let id = schedule_id.to_string();
        self.write(move |conn| {
            let n = conn
                .prepare_cached("DELETE FROM schedules WHERE schedule_id = ?1")
                .and_then(|mut s| s.execute([id]))
                .map_err(db("delete a schedule"))?;
            Ok(n == 1)
        })
    }

    fn due_schedules(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.read(move |conn| {
            conn.prepare_cached(
                "SELECT schedule_id, data, version, next_check_ms FROM schedules \
                 WHERE next_check_ms IS NOT NULL AND next_check_ms <= ?1 ORDER BY next_check_ms LIMIT ?2",
            )
            .and_then(|mut s| s.query_map(params![now_ms, max as i64], schedule_row)?.collect())
            .map_err(db("find due schedules"))
        })
    }

    fn terminate(
        &self,
        workflow_id: &str,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, RunRecord> {
        let workflow_id = workflow_id.to_string();
        let reason = reason.to_string();
        self.write(move |conn| {
            let run = latest_run(conn, &workflow_id)?.ok_or_else(|| StoreError::NotFound {
                workflow_id: workflow_id.clone(),
                run_id: None,
            })?;
            let run = run.record;
            if run.status != RunStatus::Running {
                return Err(StoreError::RunFinished {
                    workflow_id,
                    run_id: run.run_id,
                    status: run.status,
                });
            }
            terminate_run(conn, &run, &reason, now_ms)?;
            must_load_run(conn, &run.run_id)
        })
    }
}

#[cfg(test)]
mod tests {
    //! The group-commit machinery, driven directly (the store's behaviour is covered by the
    //! conformance suite in `tests/store_conformance`).

    use super::*;

    type Answer = oneshot::Receiver<Result<(), StoreError>>;

    /// A migrated database file in the temp directory; removed by [`TempFile`]'s drop.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(name: &str) -> (TempFile, Connection) {
            let path = std::env::temp_dir()
                .join(format!("wf-sqlite-unit-{}-{name}.db", std::process::id()));
            let file = TempFile(path);
            file.remove();
            let mut conn = Connection::open(&file.0).expect("open a test database");
            migrate(&mut conn).expect("create the schema");
            (file, conn)
        }

        fn reopen(&self) -> Connection {
            Connection::open(&self.0).expect("reopen the test database")
        }

        fn remove(&self) {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut p = self.0.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            self.remove();
        }
    }

    fn database() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open an in-memory database");
        migrate(&mut conn).expect("create the schema");
        conn
    }

    fn request(
        work: impl FnOnce(&Connection) -> Result<(), StoreError> + Send + 'static,
    ) -> (Box<dyn Request>, Answer) {
        let (reply, answer) = oneshot::channel();
        (
            Box::new(Pending {
                durable: true,
                work: Some(work),
                outcome: None,
                reply,
            }),
            answer,
        )
    }

    fn insert(id: &'static str) -> (Box<dyn Request>, Answer) {
        request(move |conn| {
            conn.execute("INSERT INTO signal_ids VALUES ('chain', ?1)", [id])
                .map_err(db("insert"))?;
            Ok(())
        })
    }

    fn ids(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT signal_id FROM signal_ids ORDER BY signal_id")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn answered(answer: &mut Answer) -> Result<(), StoreError> {
        answer.try_recv().expect("every caller is answered")
    }

    /// Runs the writer loop on `queued` (all queued before it starts) until the queue is empty.
    fn run_writer(conn: Connection, queued: Vec<Box<dyn Request>>, max_batch: usize) {
        let (tx, rx) = mpsc::channel();
        for r in queued {
            tx.send(r).unwrap();
        }
        drop(tx);
        writer_loop(conn, rx, max_batch, false, true);
    }

    #[test]
    fn a_failed_request_rolls_back_only_itself() {
        let conn = database();
        let (a, mut a_answer) = insert("a");
        let (failing, mut failing_answer) = request(|conn| {
            conn.execute("INSERT INTO signal_ids VALUES ('chain', 'b')", [])
                .map_err(db("b"))?;
            Err(StoreError::Conflict {
                run_id: "r".into(),
                reason: "stale".into(),
            })
        });
        let (panicking, mut panicking_answer) = request(|conn| {
            conn.execute("INSERT INTO signal_ids VALUES ('chain', 'p')", [])
                .map_err(db("p"))?;
            panic!("bug in a request");
        });
        let (c, mut c_answer) = insert("c");
        let mut batch = vec![a, failing, panicking, c];
        assert_eq!(run_batch(&conn, &mut batch), Ok(()));
        for r in batch {
            r.answer(None);
        }
        assert_eq!(answered(&mut a_answer), Ok(()));
        assert!(matches!(
            answered(&mut failing_answer),
            Err(StoreError::Conflict { .. })
        ));
        assert!(matches!(
            answered(&mut panicking_answer),
            Err(StoreError::Backend(..))
        ));
        assert_eq!(answered(&mut c_answer), Ok(()));
        assert_eq!(ids(&conn), ["a", "c"]);
    }

    #[test]
    fn queued_requests_share_one_transaction_and_its_fate() {
        // A request that makes SQLite abandon the transaction (as an I/O error would) takes its
        // whole batch down: proof that the batch was one transaction. Every caller is told.
        let (a, mut a_answer) = insert("a");
        let (b, mut b_answer) = insert("b");
        let (lost, mut lost_answer) = request(|conn| {
            conn.execute_batch("ROLLBACK").map_err(db("rollback"))?;
            Ok(())
        });
        let (c, mut c_answer) = insert("c");
        let (file, conn) = TempFile::new("one-batch");
        run_writer(conn, vec![a, b, lost, c], 512);
        for answer in [
            &mut a_answer,
            &mut b_answer,
            &mut lost_answer,
            &mut c_answer,
        ] {
            assert!(matches!(answered(answer), Err(StoreError::Backend(..))));
        }
        assert!(ids(&file.reopen()).is_empty());
    }

    #[test]
    fn batches_are_bounded_by_max_batch() {
        let (file, conn) = TempFile::new("bounded");
        let (a, mut a_answer) = insert("a");
        let (b, mut b_answer) = insert("b");
        let (lost, mut lost_answer) = request(|conn| {
            conn.execute_batch("ROLLBACK").map_err(db("rollback"))?;
            Ok(())
        });
        let (c, mut c_answer) = insert("c");
        run_writer(conn, vec![a, b, lost, c], 2);
        assert_eq!(answered(&mut a_answer), Ok(()));
        assert_eq!(answered(&mut b_answer), Ok(()));
        assert!(matches!(
            answered(&mut lost_answer),
            Err(StoreError::Backend(..))
        ));
        assert!(matches!(
            answered(&mut c_answer),
            Err(StoreError::Backend(..))
        ));
        assert_eq!(ids(&file.reopen()), ["a", "b"]);
    }

    #[test]
    fn migrating_twice_is_a_no_op() {
        let mut conn = database();
        migrate(&mut conn).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
    }
}
