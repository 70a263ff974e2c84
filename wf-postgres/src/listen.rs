//! Wake-ups from other processes: every store keeps one connection that `LISTEN`s on the
//! schema's channel, and once a writer's batch that made work ready (a message, a ready run
//! or activity, a timer) has committed, the store's notifier sends one `NOTIFY` (see
//! `notify.rs`). A notification from
//! another store bumps a counter that the engine watches (`Store::changes`), so
//! that it looks at the store at once instead of at its next slow poll. A dropped listening
//! connection is made again, and its return counts as a change (what was missed meanwhile is
//! looked at).

use crate::connect::Connector;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// The channel of a schema's notifications (`schema` is a plain identifier).
pub(crate) fn channel(schema: &str) -> String {
    format!("wf_changes_{schema}")
}

/// A name for this store among the processes on the database: its own notifications are not
/// news to it.
pub(crate) fn instance_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The listening task and the counter of changes it saw.
pub(crate) struct Listening {
    changes: watch::Receiver<u64>,
    task: Option<JoinHandle<()>>,
}

impl Listening {
    /// Starts listening (unless `enabled` is false: the counter then never moves).
    pub(crate) fn start(
        connector: Arc<Connector>,
        channel: String,
        instance: String,
        enabled: bool,
    ) -> Listening {
        let (bump, changes) = watch::channel(0u64);
        let task = enabled.then(|| tokio::spawn(listen(connector, channel, instance, bump)));
        Listening { changes, task }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn listen(
    connector: Arc<Connector>,
    channel: String,
    instance: String,
    bump: watch::Sender<u64>,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        let (notes, mut heard) = mpsc::unbounded_channel();
        let client = match connector.connect_listening(notes).await {
            Ok(client) => client,
            Err(e) => {
                tracing::warn!(error = %e, "wf-postgres: cannot listen for other processes' commits; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        if let Err(e) = client.batch_execute(&format!("LISTEN {channel}")).await {
            tracing::warn!(error = %e, "wf-postgres: LISTEN failed; retrying");
            tokio::time::sleep(pause).await;
            continue;
        }
        pause = Duration::from_millis(100);
        // Whatever was committed while no one listened.
        bump.send_modify(|n| *n += 1);
        while let Some(from) = heard.recv().await {
            if from != instance {
                bump.send_modify(|n| *n += 1);
            }
        }
        if bump.is_closed() {
            return;
        }
    }
}

impl Listening {
    /// The counter of other processes' changes, if this store listens.
    pub(crate) fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.task.is_some().then(|| self.changes.clone())
    }
}
