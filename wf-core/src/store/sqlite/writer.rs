//! The store's threads. One writer thread owns the write connection and folds the requests
//! that arrive together into one transaction (group commit): each request in its own
//! `SAVEPOINT`, one `COMMIT` (one fsync) for all, and each caller answered only after it. A
//! small pool of reader threads runs reads, each in its own read transaction. Both keep the
//! store's [`Health`]: after the first sign of a damaged file, writes are refused untouched.

use super::damage::Health;
use super::rows::db;
use super::tx::SqliteTx;
use crate::error::{BackendErrorKind, StoreError};
use crate::metrics::StoreMetrics;
use crate::store::StoreFuture;
use rusqlite::Connection;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// One caller's work, run on a store thread; answered after its transaction ends.
pub(super) trait Request: Send {
    /// Runs the work; true if it succeeded (its changes are to be kept).
    fn run(&mut self, tx: &mut SqliteTx) -> bool;
    /// The work's own error, once it ran and failed.
    fn failure(&self) -> Option<&StoreError>;
    /// Sends the caller its result, or `failure` if the transaction around it failed; an
    /// error of its own is told as `health` explains it.
    fn answer(self: Box<Self>, failure: Option<StoreError>, health: &Health);
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
    F: FnOnce(&mut SqliteTx) -> Result<T, StoreError> + Send,
{
    fn run(&mut self, tx: &mut SqliteTx) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| work(tx))).unwrap_or_else(|_| {
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

    fn failure(&self) -> Option<&StoreError> {
        self.outcome.as_ref()?.as_ref().err()
    }

    fn answer(self: Box<Self>, failure: Option<StoreError>, health: &Health) {
        let result = match (failure, self.outcome) {
            (Some(e), _) => Err(e),
            (None, Some(outcome)) => outcome.map_err(|e| health.explain(e)),
            (None, None) => Err(StoreError::bug("a store request was never run")),
        };
        // The caller may have given up waiting (its future dropped); that is fine.
        let _ = self.reply.send(result);
    }
}

/// Queues `work` for a store thread; its future is answered once the work's transaction ended.
pub(super) fn submit<T: Send + 'static>(
    queue: Option<&mpsc::Sender<Box<dyn Request>>>,
    durable: bool,
    work: impl FnOnce(&mut SqliteTx) -> Result<T, StoreError> + Send + 'static,
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

/// How the writer thread works.
pub(super) struct WriterSettings {
    /// Most requests in one transaction.
    pub(super) max_batch: usize,
    /// Whether the connection runs `synchronous=FULL` (so soft batches can lower it).
    pub(super) full: bool,
    /// Whether to look for the next request for a while after a lone one.
    pub(super) poll_when_quiet: bool,
    /// Where each transaction's size and times are recorded.
    pub(super) metrics: Arc<StoreMetrics>,
}

/// The writer thread: group commits until the queue closes.
pub(super) fn writer_loop(
    mut tx: SqliteTx,
    queue: mpsc::Receiver<Box<dyn Request>>,
    settings: WriterSettings,
    health: Arc<Health>,
) {
    writer_batches(&mut tx, queue, settings, &health);
    leave_damage_alone(&tx.conn, &health);
}

/// Closing the last connection to a WAL database copies the WAL into the database file: not
/// into a damaged one. Its last commits stay in the `-wal` file, where SQLite (and `.recover`)
/// read them.
fn leave_damage_alone(conn: &Connection, health: &Health) {
    if health.damaged() {
        let _ = conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        );
    }
}

fn writer_batches(
    tx: &mut SqliteTx,
    queue: mpsc::Receiver<Box<dyn Request>>,
    settings: WriterSettings,
    health: &Health,
) {
    let WriterSettings {
        max_batch,
        full,
        poll_when_quiet,
        metrics,
    } = settings;
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
        if let Some(refusal) = health.refusal() {
            // Damaged: nothing more goes into the file, not even a BEGIN.
            solo = false;
            for request in batch {
                request.answer(Some(refusal.clone()), health);
            }
            continue;
        }
        // A batch of soft changes only commits without an fsync (WAL + NORMAL: never corrupt,
        // durable at the next synced commit). Any durable request makes the batch synced.
        let soft = full && batch.iter().all(|r| !r.durable());
        if soft {
            let _ = tx.conn.execute_batch("PRAGMA synchronous = NORMAL");
        }
        let span = tracing::debug_span!("group_commit", requests = batch.len(), soft).entered();
        let started = Instant::now();
        let mut commit = Duration::ZERO;
        let failure = run_batch(tx, &mut batch, health, &mut commit)
            .err()
            .map(|e| {
                health.note(&e);
                health.explain(e)
            });
        metrics.record_transaction(
            batch.len(),
            full && !soft,
            failure.is_none(),
            started.elapsed(),
            commit,
        );
        drop(span);
        if soft {
            let _ = tx.conn.execute_batch("PRAGMA synchronous = FULL");
        }
        if let Some(e) = &failure {
            tracing::error!(requests = batch.len(), error = %e, "SQLite group commit failed");
        }
        solo = poll_when_quiet && batch.len() == 1;
        for request in batch {
            request.answer(failure.clone(), health);
        }
    }
}

/// Runs one request; if it failed, its error may tell of a damaged file (checked only then).
fn run_one(tx: &mut SqliteTx, request: &mut dyn Request, health: &Health) -> bool {
    let ok = request.run(tx);
    if !ok {
        if let Some(e) = request.failure() {
            health.note(e);
        }
    }
    ok
}

/// Runs a batch in one transaction, each request in its own savepoint (a batch of one needs
/// none); commits once, adding the time its `COMMIT` (or `ROLLBACK`) took to `commit_time`.
fn run_batch(
    tx: &mut SqliteTx,
    batch: &mut [Box<dyn Request>],
    health: &Health,
    commit_time: &mut Duration,
) -> Result<(), StoreError> {
    let mut timed = |conn: &Connection, sql: &str| {
        let started = Instant::now();
        let result = conn.execute_batch(sql);
        *commit_time += started.elapsed();
        result
    };
    tx.conn
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(db("begin a write transaction"))?;
    // A request alone needs no savepoint: if it fails, the transaction is rolled back whole.
    if let [request] = batch {
        let ok = run_one(tx, request.as_mut(), health);
        let conn = &tx.conn;
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
        let result = timed(conn, end).map_err(db("end a write transaction"));
        if result.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        return result;
    }
    let result = batch
        .iter_mut()
        .try_for_each(|request| run_in_savepoint(tx, request.as_mut(), health));
    let conn = &tx.conn;
    let result = result.and_then(|()| timed(conn, "COMMIT").map_err(db("commit")));
    if result.is_err() && !conn.is_autocommit() {
        // Best effort: if even the rollback fails, the connection reports it on the next BEGIN.
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

/// Runs a parameterless statement through the statement cache: a batch runs thousands of
/// savepoints, parsing each would cost more than many of the requests themselves.
pub(super) fn exec_cached(
    conn: &Connection,
    sql: &'static str,
    what: &'static str,
) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .map_err(db(what))
}

fn run_in_savepoint(
    tx: &mut SqliteTx,
    request: &mut dyn Request,
    health: &Health,
) -> Result<(), StoreError> {
    exec_cached(&tx.conn, "SAVEPOINT request", "open a savepoint")?;
    let ok = run_one(tx, request, health);
    if !ok && health.damaged() {
        // The file is damaged: the whole batch is rolled back, nothing of it is written.
        return Err(match request.failure() {
            Some(e @ StoreError::Backend(_)) => e.clone(),
            _ => health.refusal().expect("a damaged store refuses writes"),
        });
    }
    let exec = |sql: &'static str, what: &'static str| exec_cached(&tx.conn, sql, what);
    if tx.conn.is_autocommit() {
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

/// A reader thread: each request in its own read transaction, until the queue closes.
pub(super) fn reader_loop(
    mut tx: SqliteTx,
    queue: Arc<Mutex<mpsc::Receiver<Box<dyn Request>>>>,
    health: Arc<Health>,
) {
    reads(&mut tx, queue, &health);
    leave_damage_alone(&tx.conn, &health);
}

fn reads(tx: &mut SqliteTx, queue: Arc<Mutex<mpsc::Receiver<Box<dyn Request>>>>, health: &Health) {
    loop {
        let next = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        let Ok(mut request) = next else { return };
        // A read transaction gives the request one consistent snapshot across its statements.
        let failure = match tx.conn.execute_batch("BEGIN") {
            Ok(()) => {
                let ok = run_one(tx, request.as_mut(), health);
                let end = tx
                    .conn
                    .execute_batch("COMMIT")
                    .map_err(db("end a read transaction"))
                    .err();
                // A read that failed answers its own error, which says more than the end of
                // its transaction (SQLite repeats a corruption there).
                match end {
                    Some(e) if !ok => {
                        health.note(&e);
                        None
                    }
                    end => end,
                }
            }
            Err(e) => Some(db("begin a read transaction")(e)),
        };
        if !tx.conn.is_autocommit() {
            let _ = tx.conn.execute_batch("ROLLBACK");
        }
        let failure = failure.map(|e| {
            health.note(&e);
            health.explain(e)
        });
        request.answer(failure, health);
    }
}

#[cfg(test)]
mod tests {
    //! The group-commit machinery, driven directly (the store's behaviour is covered by the
    //! conformance suite in `store::conformance`).

    use super::super::opening::Opening;
    use super::super::schema::migrate;
    use super::*;
    use rusqlite::Connection;

    type Answer = oneshot::Receiver<Result<(), StoreError>>;

    fn opening() -> Opening<'static> {
        Opening::new(std::path::Path::new("test.db"))
    }

    fn health() -> Arc<Health> {
        Arc::new(Health::new(std::path::Path::new("test.db")))
    }

    /// A migrated database file in the temp directory; removed by [`TempFile`]'s drop.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(name: &str) -> (TempFile, Connection) {
            let path = std::env::temp_dir()
                .join(format!("wf-sqlite-unit-{}-{name}.db", std::process::id()));
            let file = TempFile(path);
            file.remove();
            let mut conn = Connection::open(&file.0).expect("open a test database");
            migrate(&mut conn, opening()).expect("create the schema");
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

    fn database() -> SqliteTx {
        let mut conn = Connection::open_in_memory().expect("open an in-memory database");
        migrate(&mut conn, opening()).expect("create the schema");
        SqliteTx { conn }
    }

    fn request(
        work: impl FnOnce(&mut SqliteTx) -> Result<(), StoreError> + Send + 'static,
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
        request(move |tx| {
            tx.conn
                .execute("INSERT INTO signal_ids VALUES ('chain', ?1)", [id])
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
        let (sender, queue) = mpsc::channel();
        for r in queued {
            sender.send(r).unwrap();
        }
        drop(sender);
        let settings = WriterSettings {
            max_batch,
            full: false,
            poll_when_quiet: true,
            metrics: Arc::new(StoreMetrics::new("sqlite")),
        };
        writer_loop(SqliteTx { conn }, queue, settings, health());
    }

    #[test]
    fn a_failed_request_rolls_back_only_itself() {
        let mut tx = database();
        let (a, mut a_answer) = insert("a");
        let (failing, mut failing_answer) = request(|tx| {
            tx.conn
                .execute("INSERT INTO signal_ids VALUES ('chain', 'b')", [])
                .map_err(db("b"))?;
            Err(StoreError::Conflict {
                run_id: "r".into(),
                reason: "stale".into(),
            })
        });
        let (panicking, mut panicking_answer) = request(|tx| {
            tx.conn
                .execute("INSERT INTO signal_ids VALUES ('chain', 'p')", [])
                .map_err(db("p"))?;
            panic!("bug in a request");
        });
        let (c, mut c_answer) = insert("c");
        let mut batch = vec![a, failing, panicking, c];
        let health = health();
        let mut commit_time = Duration::ZERO;
        assert_eq!(
            run_batch(&mut tx, &mut batch, &health, &mut commit_time),
            Ok(())
        );
        for r in batch {
            r.answer(None, &health);
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
        assert_eq!(ids(&tx.conn), ["a", "c"]);
    }

    #[test]
    fn queued_requests_share_one_transaction_and_its_fate() {
        // A request that makes SQLite abandon the transaction (as an I/O error would) takes its
        // whole batch down: proof that the batch was one transaction. Every caller is told.
        let (a, mut a_answer) = insert("a");
        let (b, mut b_answer) = insert("b");
        let (lost, mut lost_answer) = request(|tx| {
            tx.conn.execute_batch("ROLLBACK").map_err(db("rollback"))?;
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
        let (lost, mut lost_answer) = request(|tx| {
            tx.conn.execute_batch("ROLLBACK").map_err(db("rollback"))?;
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
}
