//! The activity worker: leases activity tasks, runs each attempt on the tokio runtime (outside
//! the workflow executor), and applies the retry policy and timeouts to its outcome.

use crate::activity::{ActivityContext, ActivityInfo, BoxFuture, HeartbeatSink};
use crate::data::activity::{ActivityFailure, ActivityResolution, TimeoutKind};
use crate::data::payload::Payload;
use crate::engine::Shared;
use crate::replay::panic_message;
use crate::store::ActivityTask;
use std::sync::Arc;
use tracing::Instrument;

struct StoreHeartbeat(Arc<Shared>);

impl HeartbeatSink for StoreHeartbeat {
    fn heartbeat(&self, info: &ActivityInfo, details: Payload) -> BoxFuture<bool> {
        let shared = self.0.clone();
        let info = info.clone();
        Box::pin(async move {
            let now = shared.now_ms();
            match shared
                .store
                .heartbeat_activity(&info.run_id, info.seq, info.attempt, Some(details), now)
                .await
            {
                Ok(current) => {
                    shared.timer_wake.notify_one();
                    current
                }
                Err(e) => {
                    tracing::warn!(error = %e, "recording a heartbeat failed");
                    true
                }
            }
        })
    }
}

/// Polls and runs activity attempts until shutdown.
pub(crate) async fn run(shared: Arc<Shared>) {
    if shared.activities.names().next().is_none() {
        return;
    }
    let permits = shared.activity_permits.clone();
    // Only activities registered here: other processes may run other activities.
    let names: Vec<String> = shared.activities.names().map(str::to_string).collect();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        if shared.is_shutdown() {
            break;
        }
        let free = permits.available_permits();
        let mut got = 0;
        if free > 0 {
            match shared
                .store
                .poll_activity_tasks_of(&shared.worker_id, shared.now_ms(), free, names.clone())
                .await
            {
                Ok(tasks) => {
                    got = tasks.len();
                    // Leases with explicit timeouts give the time keeper an earlier deadline.
                    if tasks.iter().any(has_timeouts) {
                        shared.timer_wake.notify_one();
                    }
                    for task in tasks {
                        let Ok(permit) = permits.clone().acquire_owned().await else {
                            return;
                        };
                        let shared = shared.clone();
                        let semaphore = permits.clone();
                        let span = tracing::info_span!("activity", run_id = %task.run_id, seq = task.seq, name = %task.name, attempt = task.attempt);
                        tokio::spawn(
                            async move {
                                run_attempt(&shared, task).await;
                                let was_full = semaphore.available_permits() == 0;
                                drop(permit);
                                // Only a full pool may have left visible tasks behind.
                                if was_full {
                                    shared.activity_wake.notify_one();
                                }
                            }
                            .instrument(span),
                        );
                    }
                }
                Err(e) => tracing::error!(error = %e, "polling activity tasks failed"),
            }
        }
        if got > 0 && got == free {
            continue;
        }
        tokio::select! {
            _ = shared.activity_wake.notified() => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep(shared.config.poll_interval) => {}
        }
    }
}

/// Whether an activity set explicit timeouts (its lease deadline matters to the time keeper).
pub(crate) fn has_timeouts(t: &ActivityTask) -> bool {
    t.options.start_to_close.is_some()
        || t.options.schedule_to_close.is_some()
        || t.options.heartbeat_timeout.is_some()
}

enum AttemptEnd {
    Done(Result<Payload, crate::error::ActivityError>),
    Panicked(String),
    TimedOut,
    Shutdown,
}

pub(crate) async fn run_attempt(shared: &Arc<Shared>, task: ActivityTask) {
    let key = (task.run_id.clone(), task.seq);
    let Some(invoker) = shared.activities.get(&task.name).cloned() else {
        let failure = ActivityFailure {
            kind: "unknown_activity".into(),
            message: format!(
                "no activity named {:?} is registered with this engine",
                task.name
            ),
            non_retryable: true,
        };
        finish(shared, &task, Err((failure, None))).await;
        return;
    };
    let info = ActivityInfo {
        workflow_id: task.workflow_id.clone(),
        run_id: task.run_id.clone(),
        seq: task.seq,
        name: task.name.clone(),
        attempt: task.attempt,
    };
    let ctx = ActivityContext::new(
        info,
        task.heartbeat.clone(),
        Arc::new(StoreHeartbeat(shared.clone())),
    );
    let handle = tokio::spawn(invoker(ctx, task.input.clone()));
    if let Ok(mut running) = shared.running_activities.lock() {
        running.insert(key.clone(), handle.abort_handle());
    }
    let abort = handle.abort_handle();
    let deadline = task.attempt_deadline_ms.unwrap_or(i64::MAX);
    let mut shutdown = shared.shutdown.subscribe();
    let end = tokio::select! {
        r = handle => match r {
            Ok(r) => AttemptEnd::Done(r),
            Err(e) if e.is_panic() => AttemptEnd::Panicked(panic_message(&*e.into_panic())),
            Err(_) => AttemptEnd::Shutdown,
        },
        _ = shared.clock.sleep_until(deadline) => AttemptEnd::TimedOut,
        _ = shutdown.changed() => AttemptEnd::Shutdown,
    };
    if let Ok(mut running) = shared.running_activities.lock() {
        running.remove(&key);
    }
    match end {
        AttemptEnd::Done(Ok(result)) => finish(shared, &task, Ok(result)).await,
        AttemptEnd::Done(Err(e)) => {
            let failure = ActivityFailure {
                kind: e.kind,
                message: e.message,
                non_retryable: e.non_retryable,
            };
            finish(shared, &task, Err((failure, None))).await
        }
        AttemptEnd::Panicked(m) => {
            let failure = ActivityFailure {
                kind: "panic".into(),
                message: m,
                non_retryable: false,
            };
            finish(shared, &task, Err((failure, None))).await
        }
        AttemptEnd::TimedOut => {
            abort.abort();
            let failure = ActivityFailure {
                kind: "timeout".into(),
                message: "start-to-close timeout".into(),
                non_retryable: false,
            };
            finish(
                shared,
                &task,
                Err((failure, Some(TimeoutKind::StartToClose))),
            )
            .await
        }
        AttemptEnd::Shutdown => {
            abort.abort();
            if shared.crashed.load(std::sync::atomic::Ordering::SeqCst) {
                return; // like a crash: the lease expires and the attempt times out
            }
            let _ = shared
                .store
                .release_activity(&task.run_id, task.seq, task.attempt)
                .await;
        }
    }
}

/// Applies an attempt's outcome: resolve for good, or schedule the next attempt per the retry
/// policy and the schedule-to-close deadline.
pub(crate) async fn finish(
    shared: &Arc<Shared>,
    task: &ActivityTask,
    outcome: Result<Payload, (ActivityFailure, Option<TimeoutKind>)>,
) {
    let now = shared.now_ms();
    let store = &shared.store;
    let attempts = task.attempt;
    let resolution = match outcome {
        Ok(result) => ActivityResolution::Completed { result, attempts },
        Err((failure, timeout)) => {
            let next = attempts + 1;
            let delay = task.options.retry.delay_before(next).as_millis() as i64;
            let within_deadline = task.schedule_deadline_ms().is_none_or(|d| now + delay < d);
            if task.options.retry.allows_retry(next, &failure) && within_deadline {
                tracing::info!(attempt = attempts, error = %failure.message, delay_ms = delay, "activity attempt failed; retrying");
                match store
                    .retry_activity(&task.run_id, task.seq, attempts, now + delay, failure)
                    .await
                {
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "scheduling an activity retry failed"),
                }
                shared.timer_wake.notify_one();
                return;
            }
            let retryable = task.options.retry.allows_retry(next, &failure);
            match timeout {
                // The schedule-to-close deadline, not the attempt, is what ended it.
                _ if !within_deadline && (retryable || timeout.is_some()) => {
                    ActivityResolution::TimedOut {
                        timeout: TimeoutKind::ScheduleToClose,
                        attempts,
                    }
                }
                Some(timeout) => ActivityResolution::TimedOut { timeout, attempts },
                None => ActivityResolution::Failed { failure, attempts },
            }
        }
    };
    if shared.config.run_workers && !shared.is_shutdown() {
        // Hand the result to the workflow worker: one commit records it together with what
        // the workflow does next (it falls back to the store if the run is busy elsewhere).
        let direct = crate::worker::Direct::Activity {
            run_id: task.run_id.clone(),
            seq: task.seq,
            attempt: attempts,
            resolution: resolution.clone(),
        };
        if shared.direct.send(direct).is_ok() {
            return;
        }
    }
    match store
        .resolve_activity(&task.run_id, task.seq, attempts, resolution, now)
        .await
    {
        Ok(true) => shared.workflow_wake.notify_one(),
        Ok(false) => tracing::debug!("activity attempt was superseded; result dropped"),
        Err(e) => tracing::error!(error = %e, "recording an activity result failed"),
    }
}
