//! The queue dispatcher: each engine that runs workers runs admission passes of the queues of
//! workflow starts (`store/rules/queues.rs` decides what each pass admits, in one
//! transaction): at least every [`RECHECK`] while the store holds runs on a queue, at once
//! when this engine puts a start on a queue, and every poll interval otherwise (a start put
//! on a queue by an engine that stopped before admitting it).

use super::core::Core;
use std::sync::Arc;
use std::time::Duration;

/// How often an engine looks at the queues while runs wait on one: a run that closes (freeing
/// a slot of its queue) lets the next one in this late at most.
const RECHECK: Duration = Duration::from_millis(50);

/// Runs until shutdown.
pub(crate) async fn run(core: Arc<Core>) {
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        if core.is_shutdown() {
            break;
        }
        let wait = match core.store.admin().admit_queued(core.now_ms()).await {
            Ok(pass) => {
                if pass.admitted > 0 {
                    core.wake.workflow.notify_one();
                }
                match pass.held {
                    0 => core.config.poll_interval,
                    _ => RECHECK,
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "admitting the runs waiting on their queues failed");
                RECHECK.max(core.config.poll_interval)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = core.wake.queues.notified() => {}
            _ = shutdown.changed() => {}
        }
    }
}
