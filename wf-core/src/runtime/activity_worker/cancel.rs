//! Telling running attempts that they were cancelled (`ActivityContext::cancelled`).
//!
//! An attempt is cancelled when its activity's task row goes: the workflow cancelled the
//! activity (its scope, or the run's cancellation), or the run closed. Three paths reach it:
//!
//! - In this engine: the commit that cancels activities or closes the run tells the attempts
//!   this engine runs at once ([`after_commit`]), and so does a termination.
//! - In other engines on the store: that commit also pokes them (the `CANCELLED` wake-up,
//!   through the peers' sockets, or the store's `LISTEN/NOTIFY`); each then asks the store which
//!   of its running attempts are still current ([`watch`]), as a safety net also every poll
//!   interval while attempts run.
//! - A heartbeat that finds its attempt no longer current has the store asked at once.
//!
//! A told attempt keeps running until its code returns (it may clean up first); its result is
//! dropped, as the task is gone.

use super::ActivitySlots;
use crate::runtime::core::Core;
use crate::store::ActivityAttempt;
use std::sync::Arc;
use tokio::sync::watch;

/// An attempt this engine runs: how to abort it, and how to tell it it was cancelled.
pub(crate) struct Running {
    pub workflow_id: String,
    pub attempt: u32,
    pub abort: tokio::task::AbortHandle,
    pub cancel: watch::Sender<bool>,
}

impl ActivitySlots {
    /// Tells the running attempt of activity `seq` of `run_id` (if this engine runs it) that
    /// it was cancelled.
    pub fn cancel(&self, run_id: &str, seq: u32) {
        if let Ok(running) = self.running.lock() {
            if let Some(r) = running.get(&(run_id.to_string(), seq)) {
                r.cancel.send_replace(true);
            }
        }
    }

    /// Tells every attempt this engine runs for `matches` (by run id and workflow id).
    fn cancel_where(&self, matches: impl Fn(&str, &Running) -> bool) {
        if let Ok(running) = self.running.lock() {
            for ((run_id, _), r) in running.iter() {
                if matches(run_id, r) {
                    r.cancel.send_replace(true);
                }
            }
        }
    }

    /// The attempts running here not yet told.
    fn untold(&self) -> Vec<ActivityAttempt> {
        self.running
            .lock()
            .map(|running| {
                running
                    .iter()
                    .filter(|(_, r)| !*r.cancel.borrow())
                    .map(|((run_id, seq), r)| ActivityAttempt {
                        run_id: run_id.clone(),
                        seq: *seq,
                        attempt: r.attempt,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// After a committed workflow task: tells the attempts running here of the activities it
/// cancelled (every attempt of the run if it closed), and pokes the peers to look at theirs.
pub(crate) fn after_commit(core: &Core, run_id: &str, cancelled: &[u32], closed: bool) {
    if cancelled.is_empty() && !closed {
        return;
    }
    for seq in cancelled {
        core.activities.cancel(run_id, *seq);
    }
    if closed {
        core.activities.cancel_where(|r, _| r == run_id);
    }
    core.wake.cancelled.notify_one();
}

/// After a termination of workflow id `workflow_id`: as [`after_commit`] for a closed run.
pub(crate) fn after_terminate(core: &Core, workflow_id: &str) {
    core.activities
        .cancel_where(|_, r| r.workflow_id == workflow_id);
    core.wake.cancelled.notify_one();
}

/// Until shutdown: when told that activities were cancelled somewhere (and every poll
/// interval while attempts run), asks the store which of the attempts running here are still
/// current and tells the others.
pub(crate) async fn watch(core: Arc<Core>) {
    if core.catalog.activities.names().next().is_none() {
        return;
    }
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        let running = !core.activities.untold().is_empty();
        tokio::select! {
            _ = core.wake.cancelled.notified() => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep(core.config.poll_interval), if running => {}
        }
        if core.is_shutdown() {
            return;
        }
        let attempts = core.activities.untold();
        if attempts.is_empty() {
            continue;
        }
        match core.store.current_attempts(attempts.clone()).await {
            Ok(current) => {
                for (attempt, current) in attempts.iter().zip(current) {
                    if !current {
                        core.activities.cancel(&attempt.run_id, attempt.seq);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "checking running activity attempts failed"),
        }
    }
}
