//! What a transaction tells other processes: a write that makes work ready (a message in an
//! inbox, a run or an activity ready, a timer or a schedule to watch) notes it, and once the
//! writer's batch has committed, the store's [`Notifier`] sends one `NOTIFY` on a connection of
//! its own.
//!
//! # Why after the commit, not inside it
//!
//! A transaction that sends `NOTIFY` takes a database-wide lock at commit and holds it until
//! its commit record is flushed: every notifying commit waits for the one before it, fsync
//! included, so group commits running on several connections would reach the disk one at a
//! time. Sent after the commit, from a connection that does not wait for the flush
//! (`synchronous_commit = off`: a notification needs no durability), the lock is held for
//! microseconds, and while one `NOTIFY` is in flight the commits that follow fold into the
//! next one. The cost: a process that dies between a commit and its notification leaves the
//! others to find the work at their next poll (the safety net), as they would for a
//! notification lost with a dropped listening connection.

use crate::connect::Connector;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_postgres::Client;

/// What a transaction did that other processes should hear of.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Notes {
    /// New work or a new due time: engines should look at the store.
    pub(crate) work: bool,
}

/// The state the notifying task shares with its [`Notifier`] handles.
struct Shared {
    /// Whether a notification is owed.
    owed: AtomicBool,
    /// Whether every handle is gone: the task sends what is owed, then ends.
    closing: AtomicBool,
    /// How many handles there are (the store's and its writers').
    handles: AtomicUsize,
    wake: Notify,
}

/// A handle on the store's notifying task: [`poke`](Notifier::poke) after a commit that made
/// work ready; pokes that come while a `NOTIFY` is in flight are folded into the next one.
/// When the last handle is dropped (the store and its writers are gone), the task sends what
/// is still owed and ends.
pub(crate) struct Notifier {
    shared: Arc<Shared>,
}

impl Notifier {
    /// Starts the notifying task, which sends `sql` (a `NOTIFY`) for each batch of pokes.
    pub(crate) fn start(connector: Arc<Connector>, sql: String) -> Notifier {
        let shared = Arc::new(Shared {
            owed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            handles: AtomicUsize::new(1),
            wake: Notify::new(),
        });
        tokio::spawn(run(Arc::clone(&shared), connector, sql));
        Notifier { shared }
    }

    /// Owes the other processes a notification (a batch that made work ready committed).
    pub(crate) fn poke(&self) {
        if !self.shared.owed.swap(true, Ordering::AcqRel) {
            self.shared.wake.notify_one();
        }
    }
}

impl Clone for Notifier {
    fn clone(&self) -> Self {
        self.shared.handles.fetch_add(1, Ordering::AcqRel);
        Notifier {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        if self.shared.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.closing.store(true, Ordering::Release);
            self.shared.wake.notify_one();
        }
    }
}

async fn run(notifier: Arc<Shared>, connector: Arc<Connector>, sql: String) {
    let mut client: Option<Client> = None;
    let mut pause = Duration::from_millis(50);
    loop {
        if !notifier.owed.load(Ordering::Acquire) {
            if notifier.closing.load(Ordering::Acquire) {
                return;
            }
            notifier.wake.notified().await;
            continue;
        }
        let c = match client.take().filter(|c| !c.is_closed()) {
            Some(c) => c,
            None => match connect(&connector).await {
                Ok(c) => c,
                Err(e) => {
                    if notifier.closing.load(Ordering::Acquire) {
                        return;
                    }
                    tracing::warn!(error = %e, "wf-postgres: cannot connect to send notifications; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
        };
        pause = Duration::from_millis(50);
        // Cleared before sending: a commit answered after this point is covered by this
        // `NOTIFY` or owes the next one.
        notifier.owed.store(false, Ordering::Release);
        match c.batch_execute(&sql).await {
            Ok(()) => client = Some(c),
            Err(e) => {
                tracing::warn!(error = %e, "wf-postgres: sending a notification failed; sending it again");
                notifier.owed.store(true, Ordering::Release);
            }
        }
    }
}

/// The notifying connection: its transactions (one `NOTIFY` each) never wait for the WAL flush.
async fn connect(connector: &Connector) -> Result<Client, wf_core::store::StoreError> {
    let client = connector.connect().await?;
    client
        .batch_execute("SET synchronous_commit = off")
        .await
        .map_err(crate::rows::db("set up the notifying connection"))?;
    Ok(client)
}
