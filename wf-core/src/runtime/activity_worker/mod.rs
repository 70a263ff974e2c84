//! The activity worker: leases activity tasks, runs each attempt on the tokio runtime (outside
//! the workflow executor), applies the retry policy and timeouts to its outcome, and times out
//! attempts whose lease or deadline passed. `attempt.rs` runs one attempt, `outcome.rs`
//! decides what its end means, `expiry.rs` handles expired leases and deadlines, `cancel.rs`
//! tells running attempts that they were cancelled, `remote.rs` leases attempts to workers
//! outside the engine (over HTTP).

mod attempt;
mod cancel;
mod expiry;
mod outcome;
mod remote;

pub(crate) use attempt::run_attempt;
pub(crate) use cancel::{after_commit, after_terminate, watch as watch_cancellations};
pub(crate) use expiry::expire_due;
pub(crate) use outcome::settle;
pub(crate) use remote::poll as poll_for_outside_worker;

use super::core::Core;
use crate::store::{ActivityLeases, ActivityPoll, ActivityTask};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// The activity attempts of one engine: the running ones (to abort them), the slots that
/// bound how many run at once (shared by the poller and the workflow worker, which starts the
/// activities its own commits lease to it), and the runtime they run on.
pub(crate) struct ActivitySlots {
    pub running: Mutex<HashMap<(String, u32), cancel::Running>>,
    pub permits: Arc<Semaphore>,
    /// The runtime activities run on (the one `build()` was called in).
    pub runtime: tokio::runtime::Handle,
}

impl ActivitySlots {
    pub fn new(max: usize) -> Self {
        ActivitySlots {
            running: Mutex::new(HashMap::new()),
            permits: Arc::new(Semaphore::new(max)),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// Aborts the running attempt of activity `seq` of `run_id`, if this engine runs it.
    pub fn abort(&self, run_id: &str, seq: u32) {
        if let Some(handle) = self
            .running
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&(run_id.to_string(), seq)))
        {
            handle.abort.abort();
        }
    }

    /// Aborts every running attempt (the engine was dropped: a crash).
    pub fn abort_all(&self) {
        let running = self
            .running
            .lock()
            .map(|m| m.values().map(|r| r.abort.clone()).collect::<Vec<_>>());
        for handle in running.unwrap_or_default() {
            handle.abort();
        }
    }
}

/// Polls and runs activity attempts until shutdown.
pub(crate) async fn run(core: Arc<Core>) {
    if core.catalog.activities.names().next().is_none() {
        return;
    }
    let permits = core.activities.permits.clone();
    // Only activities registered here: other processes may run other activities.
    let names: Vec<String> = core
        .catalog
        .activities
        .names()
        .map(str::to_string)
        .collect();
    let queues = core.config.served_queues();
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        if core.is_shutdown() {
            break;
        }
        let free = permits.available_permits();
        let mut got = 0;
        if free > 0 {
            match core
                .store
                .poll_activity_leases(ActivityPoll {
                    worker_id: core.worker_id.clone(),
                    now_ms: core.now_ms(),
                    max: free,
                    names: Some(names.clone()),
                    task_queues: Some(queues.clone()),
                })
                .await
            {
                Ok(ActivityLeases {
                    tasks,
                    held_back,
                    flow,
                }) => {
                    core.flow.poll_answered(held_back);
                    crate::runtime::flow::count(&core, &flow);
                    got = tasks.len();
                    // Leases with explicit timeouts give the time keeper an earlier deadline.
                    if tasks.iter().any(has_timeouts) {
                        core.wake.timer.notify_local();
                    }
                    for task in tasks {
                        let Ok(permit) = permits.clone().acquire_owned().await else {
                            return;
                        };
                        let core = core.clone();
                        let semaphore = permits.clone();
                        tokio::spawn(async move {
                            run_attempt(&core, task).await;
                            let was_full = semaphore.available_permits() == 0;
                            drop(permit);
                            // Only a full pool may have left visible tasks behind, or a flow
                            // limit, full, whose slot this attempt just freed.
                            if was_full || core.flow.should_look_after_end() {
                                core.wake.activity.notify_local();
                            }
                        });
                    }
                }
                Err(e) => tracing::error!(error = %e, "polling activity tasks failed"),
            }
        }
        if got > 0 && got == free {
            continue;
        }
        tokio::select! {
            _ = core.wake.activity.notified() => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep(core.flow.recheck(core.config.poll_interval)) => {}
        }
    }
}

/// Whether an activity set explicit timeouts (its lease deadline matters to the time keeper).
pub(crate) fn has_timeouts(t: &ActivityTask) -> bool {
    t.options.start_to_close.is_some()
        || t.options.schedule_to_close.is_some()
        || t.options.heartbeat_timeout.is_some()
}
