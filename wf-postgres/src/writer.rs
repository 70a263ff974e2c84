//! The store's connection tasks. Each writer owns a connection and folds the requests that
//! arrive together into one transaction (group commit): one `COMMIT` for all, and each caller
//! answered only after it. A batch runs first without savepoints (`write_plain`); only when a
//! request fails in a way that needs its own changes undone does it run again with each
//! request in its own savepoint (`write_batch`). Readers run reads, several
//! at once in one read-only snapshot. A dropped connection is made again; work not yet begun
//! waits for it (up to [`PostgresOptions::reconnect_for`](crate::PostgresOptions)), and is
//! never run twice.

use crate::connect::Connector;
use crate::rows::error_kind;
use crate::tx::{PostgresTx, Xid};
use futures_util::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, Mutex};
use wf_core::metrics::StoreMetrics;
use wf_core::store::{BackendErrorKind, StoreError, StoreFuture, TxOp};

/// A request's run, borrowing it and the transaction.
type Running<'a> = Pin<Box<dyn Future<Output = Ran> + Send + 'a>>;

/// How a request's run went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    /// It succeeded: its changes are to be kept.
    Ok,
    /// It failed with an error of its own (an outcome, or a fault retrying cannot mend).
    Failed,
    /// It failed on a transient fault of the database (a deadlock, a serialization failure, a
    /// lost connection): its changes are to be rolled back, and it may run again.
    Transient,
}

/// One caller's work, run on a connection task; answered after its transaction ends. It may
/// run more than once: each run starts from a clone of the work, and only the last run's
/// outcome is answered.
pub(crate) trait Request: Send {
    /// Runs the work.
    fn run<'a>(&'a mut self, tx: &'a mut PostgresTx) -> Running<'a>;
    /// Sends the caller its result, or `failure` if the transaction around it failed.
    fn answer(self: Box<Self>, failure: Option<StoreError>);
    /// Whether the change must be flushed before the caller is answered.
    fn durable(&self) -> bool;
    /// Makes `e` the outcome of the last run: a statement it queued failed once sent.
    fn fail(&mut self, e: StoreError) -> Ran;
    /// The workflow id whose latest run the work reads first, if it said so (see
    /// [`prefetch`]).
    fn reads(&self) -> Option<&str>;
}

/// The queue of a kind of connection task.
pub(crate) type Queue = mpsc::UnboundedSender<Box<dyn Request>>;
/// Its receiving end, shared by the tasks of that kind.
pub(crate) type Inbox = Arc<Mutex<mpsc::UnboundedReceiver<Box<dyn Request>>>>;

struct Pending<T, F> {
    durable: bool,
    reads: Option<String>,
    work: F,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

/// Whether a request's error is a transient fault of the database.
fn transient(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(b)
        if matches!(b.kind(), BackendErrorKind::Busy | BackendErrorKind::Unavailable))
}

impl<T, F> Request for Pending<T, F>
where
    T: Send + 'static,
    F: TxOp<PostgresTx, T>,
{
    fn run<'a>(&'a mut self, tx: &'a mut PostgresTx) -> Running<'a> {
        Box::pin(async move {
            let work = self.work.clone();
            let outcome = AssertUnwindSafe(work(tx))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(StoreError::bug(
                        "a store request panicked; its changes were rolled back",
                    ))
                });
            let ran = match &outcome {
                Ok(_) => Ran::Ok,
                Err(e) if transient(e) => Ran::Transient,
                Err(_) => Ran::Failed,
            };
            self.outcome = Some(outcome);
            ran
        })
    }

    fn durable(&self) -> bool {
        self.durable
    }

    fn reads(&self) -> Option<&str> {
        self.reads.as_deref()
    }

    fn fail(&mut self, e: StoreError) -> Ran {
        let ran = if transient(&e) {
            Ran::Transient
        } else {
            Ran::Failed
        };
        self.outcome = Some(Err(e));
        ran
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

/// Queues `work` for a connection task; its future is answered once the work's transaction
/// ended. `reads`: the workflow id whose latest run it reads first, if known.
pub(crate) fn submit<T: Send + 'static>(
    queue: &Queue,
    durable: bool,
    reads: Option<String>,
    work: impl TxOp<PostgresTx, T>,
) -> StoreFuture<'static, T> {
    let (reply, answer) = oneshot::channel();
    let request = Box::new(Pending {
        durable,
        reads,
        work,
        outcome: None,
        reply,
    });
    let sent = queue.send(request).is_ok();
    Box::pin(async move {
        if !sent {
            return Err(StoreError::closed("the PostgreSQL store is shut down"));
        }
        answer.await.map_err(|_| {
            StoreError::bug("the PostgreSQL store's connection task stopped before answering")
        })?
    })
}

/// How a connection task works.
#[derive(Clone)]
pub(crate) struct Settings {
    /// Most requests in one transaction.
    pub(crate) max_batch: usize,
    /// Whether durable commits wait for the WAL flush.
    pub(crate) synchronous_commit: bool,
    /// How long to try to reach the server again before failing the work in hand.
    pub(crate) reconnect_for: Duration,
    /// Tells other processes of a committed batch that made work ready (None: a reader's).
    pub(crate) notifier: Option<crate::notify::Notifier>,
    /// Where a writer records its transactions (None: a reader's).
    pub(crate) metrics: Option<Arc<StoreMetrics>>,
}

/// The next batch: blocks for a first request, then takes those already queued.
async fn next_batch(inbox: &Inbox, max: usize) -> Option<Vec<Box<dyn Request>>> {
    let mut queue = inbox.lock().await;
    let first = queue.recv().await?;
    let mut batch = vec![first];
    while batch.len() < max {
        match queue.try_recv() {
            Ok(request) => batch.push(request),
            Err(_) => break,
        }
    }
    Some(batch)
}

/// Makes `tx`'s connection usable again if it dropped, trying for up to `reconnect_for`.
async fn ensure_connected(
    tx: &mut PostgresTx,
    connector: &Connector,
    settings: &Settings,
) -> Result<(), StoreError> {
    if !tx.client.is_closed() {
        return Ok(());
    }
    let until = Instant::now() + settings.reconnect_for;
    let mut pause = Duration::from_millis(50);
    loop {
        match connect_writer(tx, connector).await {
            Ok(()) => {
                tracing::info!("wf-postgres: connection to the server made again");
                return Ok(());
            }
            Err(e) if Instant::now() >= until => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "wf-postgres: cannot reach the server; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// Gives `tx` a new connection; a writer's registers its commit mark there (see `marks.rs`).
async fn connect_writer(tx: &mut PostgresTx, connector: &Connector) -> Result<(), StoreError> {
    let client = connector.connect().await?;
    if let Some(mark) = tx.mark.as_mut() {
        mark.register(&client).await?;
    }
    tx.replace_client(client);
    Ok(())
}

/// Opens the batch's transaction: retried on a new connection while the server cannot be
/// reached (nothing of the batch ran yet).
async fn begin(
    tx: &mut PostgresTx,
    connector: &Connector,
    settings: &Settings,
    sql: &str,
) -> Result<(), StoreError> {
    let until = Instant::now() + settings.reconnect_for;
    loop {
        ensure_connected(tx, connector, settings).await?;
        match tx.client.batch_execute(sql).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                let kind = error_kind(&e);
                let retry = kind == BackendErrorKind::Unavailable && Instant::now() < until;
                if !retry {
                    return Err(crate::rows::pg_error("begin a transaction", e));
                }
                if !tx.client.is_closed() {
                    // The server said it cannot take work now (starting, shutting down).
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let _ = tx.client.batch_execute("ROLLBACK").await;
                }
            }
        }
    }
}

/// How often a request that hit a deadlock or a serialization failure runs again before its
/// caller gets the (retryable) error.
const MAX_RUNS: u32 = 8;
/// How often a batch whose connection was lost before its commit was sent runs again.
const MAX_BATCH_RUNS: u32 = 3;

/// A writer task: group commits until the queue closes.
pub(crate) async fn writer_loop(
    mut tx: PostgresTx,
    inbox: Inbox,
    connector: Arc<Connector>,
    settings: Settings,
) {
    // Requests a batch put off (see `write_batch`): they go first, in a batch of their own.
    let mut put_off: Vec<Box<dyn Request>> = Vec::new();
    if let Some(mark) = tx.mark.as_mut() {
        if let Err(e) = mark.register(&tx.client).await {
            // The next batch finds out whether the connection is still there.
            tracing::warn!(error = %e, "wf-postgres: a writer could not write its commit mark");
        }
    }
    loop {
        let mut batch = if put_off.is_empty() {
            match next_batch(&inbox, settings.max_batch).await {
                Some(batch) => batch,
                None => return,
            }
        } else {
            std::mem::take(&mut put_off)
        };
        let mut runs = 0;
        let began = Instant::now();
        tx.commit_time = Duration::ZERO;
        // First without savepoints (see `write_plain`); with them if that did not go through.
        let mut plain = true;
        let (failure, later) = loop {
            runs += 1;
            let written = if plain {
                match write_plain(&mut tx, &mut batch, &connector, &settings).await {
                    Ok(Plain::Committed) => Ok(Vec::new()),
                    Ok(Plain::Again) => {
                        plain = false;
                        runs -= 1;
                        continue;
                    }
                    Err(e) => Err(e),
                }
            } else {
                write_batch(&mut tx, &mut batch, &connector, &settings).await
            };
            match written {
                Ok(later) => break (None, later),
                // Nothing was committed (the commit was never sent): run it all again on a
                // new connection.
                Err(Lost::BeforeCommit(e)) if runs < MAX_BATCH_RUNS => {
                    tracing::warn!(error = %e, "wf-postgres: connection lost in a group commit; running it again");
                }
                Err(Lost::BeforeCommit(e) | Lost::Failed(e)) => break (Some(e), Vec::new()),
            }
        };
        if let Some(metrics) = &settings.metrics {
            let durable = settings.synchronous_commit && batch.iter().any(|r| r.durable());
            let answered = batch.len() - later.iter().filter(|l| **l).count();
            metrics.record_transaction(
                answered,
                durable,
                failure.is_none(),
                began.elapsed(),
                tx.commit_time,
            );
        }
        if let (None, true, Some(notifier)) = (&failure, tx.notes.work, &settings.notifier) {
            notifier.poke();
        }
        if let Some(e) = &failure {
            tracing::error!(requests = batch.len(), error = %e, "wf-postgres: group commit failed");
            if !tx.client.is_closed() {
                let _ = tx.client.batch_execute("ROLLBACK").await;
            }
        }
        for (i, request) in batch.into_iter().enumerate() {
            if later.get(i).copied().unwrap_or(false) {
                put_off.push(request);
            } else {
                request.answer(failure.clone());
            }
        }
    }
}

/// Why a batch failed.
enum Lost {
    /// The connection failed before the commit was sent: nothing of the batch was committed.
    BeforeCommit(StoreError),
    /// Anything else, including a connection lost while committing whose outcome could not be
    /// learnt (see [`settle`]).
    Failed(StoreError),
}

/// Whether a failure lost the connection (nothing of the batch was committed: it may run
/// again) or not.
fn lost(tx: &PostgresTx, e: StoreError) -> Lost {
    if tx.client.is_closed() {
        Lost::BeforeCommit(e)
    } else {
        Lost::Failed(e)
    }
}

/// Opens a batch's transaction with `begin_sql`: at once on a connection made again (see
/// [`begin`]), else queued to go with the first request's first statement (a lost connection
/// shows there, and the batch runs again from `begin`: nothing of it was committed).
async fn open_batch(
    tx: &mut PostgresTx,
    connector: &Connector,
    settings: &Settings,
    begin_sql: &'static str,
) -> Result<(), Lost> {
    tx.drop_queued();
    if tx.client.is_closed() {
        begin(tx, connector, settings, begin_sql)
            .await
            .map_err(Lost::Failed)?;
        tx.prepare_commit().await.map_err(|e| lost(tx, e))?;
    } else {
        tx.prepare_commit().await.map_err(|e| lost(tx, e))?;
        tx.begin_later(begin_sql);
    }
    tx.notes = Default::default();
    tx.forget_locks();
    Ok(())
}

/// How [`write_plain`] went.
enum Plain {
    /// The batch's transaction ended, every request's outcome is set: committed, or (when
    /// every request failed) rolled back with nothing of theirs in it.
    Committed,
    /// It was rolled back: run the batch again with savepoints ([`write_batch`]).
    Again,
}

/// The opening statements of a batch's transaction without savepoints: `soft` (no request
/// needs the WAL flush) and `shared` (more than one request: each waits for a lock only
/// briefly, and one that times out makes the batch run again with savepoints, where the first
/// request waits as long as it must and a later one is put off; see [`closing`]).
fn begin_sql(soft: bool, shared: bool) -> &'static str {
    match (soft, shared) {
        (false, false) => "BEGIN",
        (true, false) => "BEGIN; SET LOCAL synchronous_commit TO off",
        (false, true) => "BEGIN; SET LOCAL lock_timeout = '20ms'",
        (true, true) => {
            "BEGIN; SET LOCAL synchronous_commit TO off; SET LOCAL lock_timeout = '20ms'"
        }
    }
}

/// Runs a batch in one transaction without savepoints, the common case made cheap: no
/// savepoint statements, no subtransaction for each request's writes, the requests' queued
/// statements sent with the next one's first read or with the `COMMIT`.
///
/// A request that fails without having touched the transaction (no write sent, no statement
/// failed: a check that failed on what it read) is answered its failure, and the batch goes
/// on. A request that fails otherwise — a write already sent, a statement that failed, a
/// deadlock or a lock waited for too long — would need its own savepoint: the transaction is
/// rolled back and [`Plain::Again`] asks for the batch to run again with savepoints (each
/// request runs from a clone of its work, so running it again is what a retry already does).
/// A batch of one request whose check failed after it wrote is simply rolled back: its
/// failure is its own.
async fn write_plain(
    tx: &mut PostgresTx,
    batch: &mut [Box<dyn Request>],
    connector: &Connector,
    settings: &Settings,
) -> Result<Plain, Lost> {
    let soft = !settings.synchronous_commit || batch.iter().all(|r| !r.durable());
    let shared = batch.len() > 1;
    let begin_sql = begin_sql(soft, shared);
    open_batch(tx, connector, settings, begin_sql).await?;
    // A wrong assumption fails the transaction, and the batch runs again with savepoints.
    tx.speculate = true;
    if let Err(e) = prefetch(tx, prefetched_ids(batch)).await {
        // A lock waited for too long, a deadlock: as a request's failure would.
        tx.drop_queued();
        if tx.client.is_closed() {
            return Err(Lost::BeforeCommit(e));
        }
        tx.batch("ROLLBACK", "roll back a group of requests")
            .await
            .map_err(|e| lost(tx, e))?;
        return Ok(Plain::Again);
    }
    let mut kept = 0;
    for request in batch.iter_mut() {
        tx.touched = false;
        let before = tx.queued_len();
        tx.request_from = before;
        match request.run(tx).await {
            Ran::Ok => kept += 1,
            Ran::Failed if !tx.touched || !shared => {
                // Nothing of it was sent, or it is alone: its queued statements go, and (alone)
                // the transaction is rolled back below.
                tx.truncate_queued(before);
            }
            Ran::Failed | Ran::Transient => {
                tx.drop_queued();
                if tx.client.is_closed() {
                    return Err(Lost::BeforeCommit(StoreError::backend(
                        BackendErrorKind::Unavailable,
                        "PostgreSQL: the connection was lost",
                    )));
                }
                tx.batch("ROLLBACK", "roll back a group of requests")
                    .await
                    .map_err(|e| lost(tx, e))?;
                return Ok(Plain::Again);
            }
        }
    }
    if kept == 0 {
        // Every request failed (at most one of them having written: alone): nothing to keep.
        tx.discard_queued();
        if tx.has_queued() {
            // Not even the `BEGIN` was sent.
            tx.drop_queued();
        } else {
            tx.batch("ROLLBACK", "roll back a group of requests")
                .await
                .map_err(|e| lost(tx, e))?;
        }
        return Ok(Plain::Committed);
    }
    let (failed, done, xid) = tx
        .send_commit("COMMIT", "commit a group of requests")
        .await
        .map_err(|e| lost(tx, e))?;
    match (failed, done) {
        (None, Ok(())) => Ok(Plain::Committed),
        (_, Err(e)) if tx.client.is_closed() => settle(tx, connector, settings, xid, e)
            .await
            .map(|()| Plain::Committed),
        (Some(e), _) if tx.client.is_closed() => Err(Lost::BeforeCommit(e)),
        // A queued statement failed (the `COMMIT` then rolled back), or the commit did.
        (Some(e), _) | (None, Err(e)) => {
            tx.batch("ROLLBACK", "roll back a group of requests")
                .await
                .map_err(|e| lost(tx, e))?;
            // Alone, the failure is the request's own (a check a statement made, a
            // constraint): its outcome, unless running it again may help. Else again, with
            // savepoints, so that the failure is its request's alone.
            if let [request] = batch {
                if request.fail(e) == Ran::Failed {
                    return Ok(Plain::Committed);
                }
            }
            Ok(Plain::Again)
        }
    }
}

/// Reads ahead, in one statement, the latest runs of the workflow ids that two or more of the
/// batch's requests read first (starts, messages to a workflow id), which each would otherwise
/// read in a round trip of its own, one after the other (see `PostgresTx::prefetch_latest`).
async fn prefetch(tx: &mut PostgresTx, ids: Vec<String>) -> Result<(), StoreError> {
    if ids.len() < 2 {
        return Ok(());
    }
    tx.prefetch_latest(ids).await
}

/// The workflow ids [`prefetch`] reads, in the order it locks them: sorted, so that two groups
/// never wait for each other in a cycle.
fn prefetched_ids(batch: &[Box<dyn Request>]) -> Vec<String> {
    let mut ids: Vec<String> = batch
        .iter()
        .filter_map(|r| r.reads().map(str::to_string))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Runs a batch in one transaction, each request in its own savepoint; commits once. A
/// request that hit a deadlock, a serialization failure or a lock held too long is rolled back
/// to its savepoint; the batch's first request runs again at once, a later one is put off
/// (returned `true` at its index) to run after the commit: the locks the requests before it
/// took are held until the commit, so running it again in this transaction would only wait
/// again for the transaction it collided with (which may be waiting for those locks).
///
/// A request's queued statements (see [`PostgresTx`]) go in one round trip with the statement
/// that closes its savepoint and opens the next one's (or, for the last, with the `COMMIT`):
/// when one of them fails, the rest of that round trip is skipped by the server (the
/// transaction is aborted), so the request's savepoint still stands and is rolled back.
async fn write_batch(
    tx: &mut PostgresTx,
    batch: &mut [Box<dyn Request>],
    connector: &Connector,
    settings: &Settings,
) -> Result<Vec<bool>, Lost> {
    let soft = !settings.synchronous_commit || batch.iter().all(|r| !r.durable());
    let begin_sql = if soft {
        "BEGIN; SET LOCAL synchronous_commit TO off; SAVEPOINT request"
    } else {
        "BEGIN; SAVEPOINT request"
    };
    let Some(last) = batch.len().checked_sub(1) else {
        return Ok(Vec::new());
    };
    let mut later = vec![false; batch.len()];
    open_batch(tx, connector, settings, begin_sql).await?;
    // Each request reads what it checks: a failed assumption here would fail it.
    tx.speculate = false;
    for (i, request) in batch.iter_mut().enumerate() {
        let mut runs = 0;
        let kept = loop {
            runs += 1;
            tx.request_from = tx.queued_len();
            let ran = match request.run(tx).await {
                Ran::Ok => {
                    // Its queued statements, then its savepoint released; the last request's
                    // round trip also commits the batch.
                    let end = closing(i, last, true);
                    let (sent, xid) = if i == last {
                        let (failed, done, xid) = tx
                            .send_commit(&end, "commit a group of requests")
                            .await
                            .map_err(|e| lost(tx, e))?;
                        ((failed, done), xid)
                    } else {
                        (tx.send_then(&end, "close a savepoint").await, Xid::Unknown)
                    };
                    match sent {
                        (None, Ok(())) if i == last => return Ok(later),
                        (None, Ok(())) => break true,
                        (_, Err(e)) if tx.client.is_closed() && i == last => {
                            return settle(tx, connector, settings, xid, e)
                                .await
                                .map(|()| later)
                        }
                        (Some(e), Err(_)) if !tx.client.is_closed() => request.fail(e),
                        (_, Err(e)) => return Err(lost(tx, e)),
                        (Some(e), Ok(())) => {
                            return Err(Lost::Failed(StoreError::bug(format!(
                                "a queued statement failed ({e}) but its transaction went on"
                            ))))
                        }
                    }
                }
                ran => ran,
            };
            tx.discard_queued();
            match ran {
                // (`fail` never answers `Ok`.)
                Ran::Ok | Ran::Failed => break false,
                Ran::Transient if tx.client.is_closed() => {
                    return Err(Lost::BeforeCommit(StoreError::backend(
                        BackendErrorKind::Unavailable,
                        "PostgreSQL: the connection was lost",
                    )))
                }
                Ran::Transient if runs >= MAX_RUNS => break false,
                Ran::Transient if i > 0 => {
                    later[i] = true;
                    break false;
                }
                Ran::Transient => {
                    // Locks taken since the savepoint go with it.
                    tx.forget_locks();
                    tx.batch(
                        "ROLLBACK TO SAVEPOINT request",
                        "roll back a savepoint to run a request again",
                    )
                    .await
                    .map_err(|e| lost(tx, e))?;
                    // Let the transaction that won the deadlock finish first.
                    tokio::time::sleep(Duration::from_millis(u64::from(runs))).await;
                }
            }
        };
        if kept {
            continue;
        }
        tx.forget_locks();
        let sql = closing(i, last, false);
        if i < last {
            tx.batch(&sql, "close a savepoint")
                .await
                .map_err(|e| lost(tx, e))?;
            continue;
        }
        let (failed, done, xid) = tx
            .send_commit(&sql, "commit a group of requests")
            .await
            .map_err(|e| lost(tx, e))?;
        match failed.map_or(done, Err) {
            Ok(()) => {}
            Err(e) if tx.client.is_closed() => {
                return settle(tx, connector, settings, xid, e)
                    .await
                    .map(|()| later)
            }
            Err(e) => return Err(lost(tx, e)),
        }
    }
    // The last request's round trip committed.
    Ok(later)
}

/// The statements that end request `i`'s savepoint (rolled back first unless the request is
/// `kept`), then commit the batch after its `last` request, or open the next one's savepoint.
fn closing(i: usize, last: usize, kept: bool) -> String {
    let rollback = if kept {
        ""
    } else {
        "ROLLBACK TO SAVEPOINT request; "
    };
    let then = if i == last {
        "COMMIT".to_string()
    } else if i == 0 {
        // Past the first request the transaction holds locks others may wait for: it waits
        // for a lock only briefly, then puts the request off (see `write_batch`), so that
        // writers never wait for each other in long chains or cycles (each cycle costs the
        // server's `deadlock_timeout`, a second, to break).
        "SET LOCAL lock_timeout = '20ms'; SAVEPOINT request".to_string()
    } else {
        "SAVEPOINT request".to_string()
    };
    format!("{rollback}RELEASE SAVEPOINT request; {then}")
}

/// Finds out whether a batch whose connection was lost while committing (with `error`) went
/// through: `Ok` if it did (or wrote nothing), [`Lost::BeforeCommit`] if it did not (it may
/// run again), and an error that says the outcome is unknown when that cannot be learnt (the
/// transaction's id was lost too, or the server stays away for
/// [`reconnect_for`](crate::PostgresOptions)). Asked on a new connection with `txid_status`,
/// again while the old transaction is still in progress (its backend has not yet seen the
/// connection go).
async fn settle(
    tx: &mut PostgresTx,
    connector: &Connector,
    settings: &Settings,
    xid: Xid,
    error: StoreError,
) -> Result<(), Lost> {
    let (id, token) = match xid {
        Xid::NotAssigned => return Ok(()),
        Xid::Refused => return Err(Lost::BeforeCommit(error)),
        Xid::Unknown => return Err(Lost::Failed(unknown_commit(error))),
        Xid::Id(id, token) => (id, token),
    };
    // The mark as it was before this commit: the connection made again reads it anew.
    let mark = tx.mark;
    let until = Instant::now() + settings.reconnect_for;
    loop {
        if ensure_connected(tx, connector, settings).await.is_err() {
            return Err(Lost::Failed(unknown_commit(error)));
        }
        let status = tx
            .client
            .query_one("SELECT txid_status($1)", &[&id])
            .await
            .map(|row| row.try_get::<_, Option<String>>(0));
        if let (Some(token), Some(mark)) = (token, mark) {
            // The mark decides (see `marks.rs`); the id only says whether to wait.
            let still_running = matches!(&status, Ok(Ok(Some(s))) if s == "in progress");
            match mark.read(&tx.client).await {
                Ok(Some(now)) if now >= token => {
                    tracing::info!(
                        xid = id,
                        "wf-postgres: the connection was lost while committing; the commit went through"
                    );
                    if let Some(m) = tx.mark.as_mut() {
                        m.token = now;
                    }
                    return Ok(());
                }
                Ok(_) if !still_running => {
                    tracing::info!(
                        xid = id,
                        "wf-postgres: the connection was lost while committing; the commit did not go through"
                    );
                    return Err(Lost::BeforeCommit(error));
                }
                // Not committed yet, but the old server may still commit it; or the new
                // connection was lost too: ask again.
                Ok(_) | Err(_) => {}
            }
        } else {
            match status {
                Ok(Ok(Some(s))) if s == "committed" => {
                    tracing::info!(
                        xid = id,
                        "wf-postgres: the connection was lost while committing; the commit went through"
                    );
                    return Ok(());
                }
                Ok(Ok(Some(s))) if s == "aborted" => return Err(Lost::BeforeCommit(error)),
                // Too old to tell (the server forgot it).
                Ok(Ok(None)) | Ok(Err(_)) => return Err(Lost::Failed(unknown_commit(error))),
                // In progress, or the new connection was lost too: ask again.
                Ok(Ok(Some(_))) | Err(_) => {}
            }
        }
        if Instant::now() >= until {
            return Err(Lost::Failed(unknown_commit(error)));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The error of a commit whose connection was lost on the way: its outcome is unknown.
fn unknown_commit(e: StoreError) -> StoreError {
    StoreError::backend(
        BackendErrorKind::Unavailable,
        format!(
            "{e}; the connection was lost while committing, so whether these changes were \
             committed is unknown"
        ),
    )
}

/// A reader task: reads in read-only snapshots until the queue closes. A read that fails on a
/// lost connection runs again on a new one.
///
/// A snapshot costs no round trip of its own: its `BEGIN` goes with the first read's statement,
/// and its `COMMIT` is sent without waiting for the answer (a read-only transaction has nothing
/// to flush; the next batch's statements queue behind it on the connection, and a connection
/// lost meanwhile shows on them). A single read is thus one round trip.
pub(crate) async fn reader_loop(
    mut tx: PostgresTx,
    inbox: Inbox,
    connector: Arc<Connector>,
    settings: Settings,
) {
    const BEGIN: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    while let Some(mut batch) = next_batch(&inbox, settings.max_batch).await {
        // Every read of the batch was sent before the snapshot is taken, so each sees every
        // write answered before it was sent.
        let mut failure = None;
        let mut in_tx = false;
        for request in batch.iter_mut() {
            let mut runs = 0;
            loop {
                runs += 1;
                if !in_tx {
                    tx.drop_queued();
                    if tx.client.is_closed() {
                        if let Err(e) = begin(&mut tx, &connector, &settings, BEGIN).await {
                            failure = Some(e);
                            break;
                        }
                    } else {
                        tx.begin_later(BEGIN);
                    }
                    in_tx = true;
                }
                let ran = request.run(&mut tx).await;
                if ran == Ran::Ok {
                    break;
                }
                // A failed statement ends the snapshot: the next read opens another.
                tx.drop_queued();
                if !tx.client.is_closed() {
                    let _ = tx.client.batch_execute("ROLLBACK").await;
                }
                in_tx = false;
                if ran == Ran::Failed || runs >= MAX_BATCH_RUNS {
                    break;
                }
            }
            if failure.is_some() {
                break;
            }
        }
        if in_tx && failure.is_none() {
            if tx.has_queued() {
                // No read sent a statement: the `BEGIN` was never sent either.
                tx.drop_queued();
            } else {
                // Sent on this first poll; its answer is not awaited (see above).
                let _ = tx.client.batch_execute("COMMIT").now_or_never();
            }
        }
        for request in batch {
            request.answer(failure.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            max_batch: 1,
            synchronous_commit: true,
            reconnect_for: Duration::from_secs(10),
            notifier: None,
            metrics: None,
        }
    }

    /// A writer's connection with its commit mark registered, in a transaction that wrote (so
    /// it has an id), and that id.
    async fn writing(connector: &Connector) -> (PostgresTx, i64) {
        let mut tx = PostgresTx::new(connector.connect().await.unwrap(), true);
        let mut mark = tx.mark.expect("a writer has a mark");
        mark.register(&tx.client).await.unwrap();
        tx.mark = Some(mark);
        tx.client
            .batch_execute(
                "BEGIN; CREATE TEMP TABLE IF NOT EXISTS t (x int); INSERT INTO t VALUES (1)",
            )
            .await
            .unwrap();
        let row = tx
            .client
            .query_one("SELECT txid_current()", &[])
            .await
            .unwrap();
        (tx, row.get(0))
    }

    /// Ends `tx`'s connection from the server's side and waits until the client sees it.
    async fn cut(connector: &Connector, tx: &PostgresTx) {
        let pid: i32 = tx
            .client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let other = connector.connect().await.unwrap();
        other
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .await
            .unwrap();
        while !tx.client.is_closed() {
            let _ = tx.client.batch_execute("SELECT 1").await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_commit_whose_connection_was_lost_is_settled_by_its_commit_mark() {
        let Some(db) = crate::testing::TestSchema::new("settle") else {
            return;
        };
        drop(db.open().await);
        let options = crate::PostgresOptions {
            schema: db.schema().to_string(),
            connect_timeout: Duration::from_secs(5),
            ..Default::default()
        };
        let connector = Connector::new(db.url(), &options).unwrap();
        let lost = || StoreError::backend(BackendErrorKind::Unavailable, "lost");

        // The commit's round trip tells the transaction's id and the mark's next token, or
        // that it has no id.
        let (mut tx, id) = writing(&connector).await;
        let before = tx.mark.unwrap().token;
        tx.prepare_commit().await.unwrap();
        let (failed, done, xid) = tx.send_commit("COMMIT", "commit").await.unwrap();
        assert!(failed.is_none() && done.is_ok());
        assert_eq!(xid, Xid::Id(id, Some(before + 1)));
        assert_eq!(
            tx.mark.unwrap().token,
            before + 1,
            "the writer knows its mark"
        );
        tx.client.batch_execute("BEGIN").await.unwrap();
        let (_, _, nothing) = tx.send_commit("COMMIT", "commit").await.unwrap();
        assert_eq!(
            nothing,
            Xid::NotAssigned,
            "a transaction that wrote nothing"
        );

        // It committed: the batch's callers get their answers.
        let settled = settle(&mut tx, &connector, &settings(), xid, lost()).await;
        assert!(settled.is_ok());

        // Its connection ended before the commit: it may run again, and the mark says so
        // even where the id's status would be another transaction's (a promoted standby
        // hands unseen ids out again): here the id is another, committed, transaction's.
        let (mut doomed, _) = writing(&connector).await;
        let token = doomed.mark.unwrap().token + 1;
        cut(&connector, &doomed).await;
        let settled = settle(
            &mut doomed,
            &connector,
            &settings(),
            Xid::Id(id, Some(token)),
            lost(),
        )
        .await;
        assert!(matches!(settled, Err(Lost::BeforeCommit(_))));
        assert!(
            !doomed.client.is_closed(),
            "settling made the connection again"
        );

        // Without a mark, the id's status decides.
        let (mut doomed, other) = writing(&connector).await;
        cut(&connector, &doomed).await;
        let settled = settle(
            &mut doomed,
            &connector,
            &settings(),
            Xid::Id(other, None),
            lost(),
        )
        .await;
        assert!(matches!(settled, Err(Lost::BeforeCommit(_))));
        let settled = settle(
            &mut doomed,
            &connector,
            &settings(),
            Xid::Id(id, None),
            lost(),
        )
        .await;
        assert!(settled.is_ok(), "a committed id");

        // Without the id, or when the server refused the question.
        let unknown = settle(&mut tx, &connector, &settings(), Xid::Unknown, lost()).await;
        assert!(matches!(unknown, Err(Lost::Failed(e)) if e.to_string().contains("unknown")));
        let refused = settle(&mut tx, &connector, &settings(), Xid::Refused, lost()).await;
        assert!(matches!(refused, Err(Lost::BeforeCommit(_))));
        let nothing = settle(&mut tx, &connector, &settings(), Xid::NotAssigned, lost()).await;
        assert!(nothing.is_ok());
    }
}
