//! The store's connection tasks. Each writer owns a connection and folds the requests that
//! arrive together into one transaction (group commit): each request in its own savepoint,
//! one `COMMIT` for all, and each caller answered only after it. Readers run reads, several
//! at once in one read-only snapshot. A dropped connection is made again; work not yet begun
//! waits for it (up to [`PostgresOptions::reconnect_for`](crate::PostgresOptions)), and is
//! never run twice.

use crate::connect::Connector;
use crate::rows::error_kind;
use crate::tx::PostgresTx;
use futures_util::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, Mutex};
use wf_core::store::{BackendErrorKind, StoreError, StoreFuture, TxOp};

/// A request's run, borrowing it and the transaction.
type Running<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

/// One caller's work, run on a connection task; answered after its transaction ends.
pub(crate) trait Request: Send {
    /// Runs the work; true if it succeeded (its changes are to be kept).
    fn run<'a>(&'a mut self, tx: &'a mut PostgresTx) -> Running<'a>;
    /// Sends the caller its result, or `failure` if the transaction around it failed.
    fn answer(self: Box<Self>, failure: Option<StoreError>);
    /// Whether the change must be flushed before the caller is answered.
    fn durable(&self) -> bool;
}

/// The queue of a kind of connection task.
pub(crate) type Queue = mpsc::UnboundedSender<Box<dyn Request>>;
/// Its receiving end, shared by the tasks of that kind.
pub(crate) type Inbox = Arc<Mutex<mpsc::UnboundedReceiver<Box<dyn Request>>>>;

struct Pending<T, F> {
    durable: bool,
    work: Option<F>,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Request for Pending<T, F>
where
    T: Send + 'static,
    F: TxOp<PostgresTx, T>,
{
    fn run<'a>(&'a mut self, tx: &'a mut PostgresTx) -> Running<'a> {
        Box::pin(async move {
            let Some(work) = self.work.take() else {
                return false;
            };
            let outcome = AssertUnwindSafe(work(tx))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(StoreError::bug(
                        "a store request panicked; its changes were rolled back",
                    ))
                });
            let ok = outcome.is_ok();
            self.outcome = Some(outcome);
            ok
        })
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

/// Queues `work` for a connection task; its future is answered once the work's transaction
/// ended.
pub(crate) fn submit<T: Send + 'static>(
    queue: &Queue,
    durable: bool,
    work: impl TxOp<PostgresTx, T>,
) -> StoreFuture<'static, T> {
    let (reply, answer) = oneshot::channel();
    let request = Box::new(Pending {
        durable,
        work: Some(work),
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
    /// The `NOTIFY` a batch that made work ready sends (None: none).
    pub(crate) notify: Option<String>,
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
        match connector.connect().await {
            Ok(client) => {
                tracing::info!("wf-postgres: connection to the server made again");
                tx.replace_client(client);
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

/// A writer task: group commits until the queue closes.
pub(crate) async fn writer_loop(
    mut tx: PostgresTx,
    inbox: Inbox,
    connector: Arc<Connector>,
    settings: Settings,
) {
    while let Some(mut batch) = next_batch(&inbox, settings.max_batch).await {
        let failure = write_batch(&mut tx, &mut batch, &connector, &settings)
            .await
            .err();
        if let Some(e) = &failure {
            tracing::error!(requests = batch.len(), error = %e, "wf-postgres: group commit failed");
            if !tx.client.is_closed() {
                let _ = tx.client.batch_execute("ROLLBACK").await;
            }
        }
        for request in batch {
            request.answer(failure.clone());
        }
    }
}

/// Runs a batch in one transaction, each request in its own savepoint (a batch of one needs
/// none); commits once.
async fn write_batch(
    tx: &mut PostgresTx,
    batch: &mut [Box<dyn Request>],
    connector: &Connector,
    settings: &Settings,
) -> Result<(), StoreError> {
    let soft = !settings.synchronous_commit || batch.iter().all(|r| !r.durable());
    let begin_sql = match (soft, batch.len() > 1) {
        (false, false) => "BEGIN",
        (false, true) => "BEGIN; SAVEPOINT request",
        (true, false) => "BEGIN; SET LOCAL synchronous_commit TO off",
        (true, true) => "BEGIN; SET LOCAL synchronous_commit TO off; SAVEPOINT request",
    };
    begin(tx, connector, settings, begin_sql).await?;
    tx.notes = Default::default();
    let notify = |tx: &PostgresTx| match (&settings.notify, tx.notes.work) {
        (Some(sql), true) => sql.as_str(),
        _ => "",
    };
    if let [request] = batch {
        let ok = request.run(tx).await;
        let end = if ok {
            format!("{} COMMIT", notify(tx))
        } else {
            "ROLLBACK".to_string()
        };
        return tx.batch(&end, "end a write transaction").await;
    }
    let last = batch.len() - 1;
    for (i, request) in batch.iter_mut().enumerate() {
        let ok = request.run(tx).await;
        let next = if i == last { "" } else { "SAVEPOINT request;" };
        let sql = if ok {
            format!("RELEASE SAVEPOINT request; {next}")
        } else {
            format!("ROLLBACK TO SAVEPOINT request; RELEASE SAVEPOINT request; {next}")
        };
        tx.batch(&sql, "close a savepoint").await?;
    }
    let end = format!("{} COMMIT", notify(tx));
    tx.batch(&end, "commit").await
}

/// A reader task: reads in read-only snapshots until the queue closes.
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
        if let Err(e) = begin(&mut tx, &connector, &settings, BEGIN).await {
            for request in batch {
                request.answer(Some(e.clone()));
            }
            continue;
        }
        let mut failure = None;
        let mut in_tx = true;
        for request in batch.iter_mut() {
            if !in_tx {
                if let Err(e) = begin(&mut tx, &connector, &settings, BEGIN).await {
                    failure = Some(e);
                    break;
                }
                in_tx = true;
            }
            if !request.run(&mut tx).await {
                // A failed statement ends the snapshot: the next read opens another.
                let _ = tx.client.batch_execute("ROLLBACK").await;
                in_tx = false;
            }
        }
        if in_tx && failure.is_none() {
            if let Err(e) = tx.batch("COMMIT", "end a read transaction").await {
                failure = Some(e);
            }
        }
        // A read that ran gets its own answer; one that did not (never begun) gets the failure.
        for request in batch {
            request.answer(failure.clone());
        }
    }
}
