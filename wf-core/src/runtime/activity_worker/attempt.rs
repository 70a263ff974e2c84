//! One activity attempt: run the activity on the tokio runtime with its context (heartbeats
//! go to the store), bounded by its deadline and the engine's shutdown. An activity that will
//! complete asynchronously ends its run here, and its attempt stays open for its token.

use super::cancel::Running;
use super::outcome::{finish, hold_for_completion};
use crate::activity::{ActivityContext, ActivityInfo, BoxFuture, HeartbeatSink};
use crate::data::activity::{ActivityFailure, TimeoutKind};
use crate::data::payload::Payload;
use crate::data::stream::StreamError;
use crate::metrics::AttemptFailure;
use crate::replay::panic_message;
use crate::runtime::core::Core;
use crate::store::{ActivityAttempt, ActivityTask};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Heartbeats of one attempt go to the store; the last one sent is kept for its outcome.
struct StoreHeartbeat {
    core: Arc<Core>,
    last: Arc<std::sync::Mutex<Option<Payload>>>,
}

impl HeartbeatSink for StoreHeartbeat {
    fn stream(
        &self,
        info: &ActivityInfo,
        stream: String,
        value: Payload,
        entry_id: String,
    ) -> BoxFuture<Result<u64, StreamError>> {
        let core = self.core.clone();
        let info = info.clone();
        Box::pin(async move {
            let answer = core
                .store
                .append_stream(&info.run_id, &stream, value, Some(&entry_id))
                .await
                .map_err(|e| StreamError::Store(e.to_string()))??;
            // Readers of the run wait on its workflow id, here and in other processes.
            core.wake.waiters.publish(&info.workflow_id);
            Ok(answer)
        })
    }

    fn heartbeat(&self, info: &ActivityInfo, details: Payload) -> BoxFuture<bool> {
        let core = self.core.clone();
        let info = info.clone();
        let last = self.last.clone();
        Box::pin(async move {
            // Kept before it is written: an attempt that ends while the write is in flight
            // (its start-to-close passing) reports it, and the store may already hold it. If
            // the attempt is no longer current, its outcome is not recorded anyway.
            if let Ok(mut last) = last.lock() {
                *last = Some(details.clone());
            }
            let now = core.now_ms();
            match core
                .store
                .heartbeat_activity(
                    ActivityAttempt {
                        run_id: info.run_id.clone(),
                        seq: info.seq,
                        attempt: info.attempt,
                    },
                    Some(details),
                    now,
                )
                .await
            {
                Ok(current) => {
                    core.wake.timer.notify_local();
                    if !current {
                        // Gone, or only its lease ran out: the store tells which.
                        core.wake.cancelled.notify_local();
                    }
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

enum AttemptEnd {
    Done(Result<Payload, crate::error::ActivityError>),
    /// It returned `ActivityError::will_complete_async`.
    CompletesAsync,
    Panicked(String),
    TimedOut,
    Shutdown,
}

/// Runs one attempt of `task` and applies its outcome, in an `activity_attempt` span.
pub(crate) async fn run_attempt(core: &Arc<Core>, task: ActivityTask) {
    let span = tracing::info_span!(
        "activity_attempt",
        workflow_id = %task.workflow_id,
        run_id = %task.run_id,
        activity = %task.name,
        seq = task.seq,
        attempt = task.attempt,
    );
    attempt(core, task).instrument(span).await
}

async fn attempt(core: &Arc<Core>, mut task: ActivityTask) {
    let metrics = core.metrics.of_activity(&task.name);
    metrics.attempts.inc();
    let started = Instant::now();
    let key = (task.run_id.clone(), task.seq);
    let Some(invoker) = core.catalog.activities.get(&task.name).cloned() else {
        let failure = ActivityFailure {
            kind: "unknown_activity".into(),
            message: format!(
                "no activity named {:?} is registered with this engine",
                task.name
            ),
            non_retryable: true,
        };
        metrics.failed(AttemptFailure::Error);
        finish(core, &task, Err((failure, None))).await;
        return;
    };
    let info = ActivityInfo {
        workflow_id: task.workflow_id.clone(),
        run_id: task.run_id.clone(),
        seq: task.seq,
        name: task.name.clone(),
        attempt: task.attempt,
    };
    let (cancel, cancelled) = tokio::sync::watch::channel(false);
    let beats = Arc::new(std::sync::Mutex::new(None));
    let sink = StoreHeartbeat {
        core: core.clone(),
        last: beats.clone(),
    };
    let ctx = ActivityContext::new(info, task.heartbeat.clone(), Arc::new(sink), cancelled);
    // Registered before it starts, so that a cancellation committed meanwhile reaches it.
    let handle = {
        let mut running = core.activities.running.lock().ok();
        let handle = tokio::spawn(invoker(ctx, task.input.clone()));
        if let Some(running) = running.as_mut() {
            running.insert(
                key.clone(),
                Running {
                    workflow_id: task.workflow_id.clone(),
                    attempt: task.attempt,
                    abort: handle.abort_handle(),
                    cancel,
                },
            );
        }
        handle
    };
    let abort = handle.abort_handle();
    let deadline = task.attempt_deadline_ms.unwrap_or(i64::MAX);
    let mut shutdown = core.wake.shutdown.subscribe();
    let end = tokio::select! {
        r = handle => match r {
            Ok(Err(e)) if e.is_will_complete_async() => AttemptEnd::CompletesAsync,
            Ok(r) => AttemptEnd::Done(r),
            Err(e) if e.is_panic() => AttemptEnd::Panicked(panic_message(&*e.into_panic())),
            Err(_) => AttemptEnd::Shutdown,
        },
        _ = core.clock.sleep_until(deadline) => AttemptEnd::TimedOut,
        _ = shutdown.changed() => AttemptEnd::Shutdown,
    };
    let told = core
        .activities
        .running
        .lock()
        .ok()
        .and_then(|mut running| running.remove(&key))
        .is_some_and(|r| *r.cancel.borrow());
    metrics.attempt_seconds.observe_duration(started.elapsed());
    match &end {
        AttemptEnd::Done(Ok(_)) | AttemptEnd::CompletesAsync | AttemptEnd::Shutdown => {}
        AttemptEnd::Done(Err(_)) => metrics.failed(AttemptFailure::Error),
        AttemptEnd::Panicked(_) => metrics.failed(AttemptFailure::Panic),
        AttemptEnd::TimedOut => metrics.failed(AttemptFailure::Timeout),
    }
    if told && !matches!(end, AttemptEnd::Shutdown) {
        // Its task is gone (cancelled, or its run closed): nothing is left to record.
        tracing::debug!("activity attempt ended after its cancellation; result dropped");
        return;
    }
    // The outcome carries the last details reported, this attempt's or an earlier one's.
    if let Some(details) = beats.lock().ok().and_then(|mut last| last.take()) {
        task.heartbeat = Some(details);
    }
    match end {
        AttemptEnd::Done(Ok(result)) => finish(core, &task, Ok(result)).await,
        AttemptEnd::CompletesAsync => hold_for_completion(core, &task).await,
        AttemptEnd::Done(Err(e)) => {
            let failure = ActivityFailure {
                kind: e.kind,
                message: e.message,
                non_retryable: e.non_retryable,
            };
            finish(core, &task, Err((failure, None))).await
        }
        AttemptEnd::Panicked(m) => {
            let failure = ActivityFailure {
                kind: "panic".into(),
                message: m,
                non_retryable: false,
            };
            finish(core, &task, Err((failure, None))).await
        }
        AttemptEnd::TimedOut => {
            abort.abort();
            let failure = ActivityFailure {
                kind: "timeout".into(),
                message: "start-to-close timeout".into(),
                non_retryable: false,
            };
            finish(core, &task, Err((failure, Some(TimeoutKind::StartToClose)))).await
        }
        AttemptEnd::Shutdown => {
            abort.abort();
            if core.wake.crashed() {
                return; // like a crash: the lease expires and the attempt times out
            }
            let _ = core.store.release_activity(task.current_attempt()).await;
        }
    }
}
