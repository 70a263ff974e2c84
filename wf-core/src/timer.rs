//! The time keeper: fires durable timers, expires activity leases and deadlines, and wakes the
//! workers when something scheduled for later becomes due (retries, backoffs).

use crate::activity_worker::finish;
use crate::data::activity::{ActivityFailure, ActivityResolution, TimeoutKind};
use crate::engine::Shared;
use std::sync::Arc;

/// Runs until shutdown.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        if shared.is_shutdown() {
            break;
        }
        let now = shared.now_ms();
        match shared.store.fire_due_timers(now, 1024).await {
            Ok(fired) if !fired.is_empty() => shared.workflow_wake.notify_one(),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "firing timers failed"),
        }
        match shared.store.expired_activities(now, 1024).await {
            Ok(expired) => {
                for task in expired {
                    if let Some(handle) = shared
                        .running_activities
                        .lock()
                        .ok()
                        .and_then(|mut m| m.remove(&(task.run_id.clone(), task.seq)))
                    {
                        handle.abort();
                    }
                    if task.schedule_deadline_ms().is_some_and(|d| d <= now) {
                        let resolution = ActivityResolution::TimedOut {
                            timeout: TimeoutKind::ScheduleToClose,
                            attempts: task.attempt,
                        };
                        if let Ok(true) = shared
                            .store
                            .resolve_activity(&task.run_id, task.seq, task.attempt, resolution, now)
                            .await
                        {
                            shared.workflow_wake.notify_one();
                        }
                        continue;
                    }
                    let kind = if task.attempt_deadline_ms.is_some_and(|d| d <= now) {
                        TimeoutKind::StartToClose
                    } else {
                        TimeoutKind::Heartbeat
                    };
                    let failure = ActivityFailure {
                        kind: "timeout".into(),
                        message: format!("{kind:?} timeout"),
                        non_retryable: false,
                    };
                    finish(&shared, &task, Err((failure, Some(kind)))).await;
                }
            }
            Err(e) => tracing::error!(error = %e, "checking activity timeouts failed"),
        }
        crate::schedule::process_due(&shared, now).await;
        // Runs and activities that were waiting for this moment (retry backoffs) are due.
        shared.workflow_wake.notify_one();
        shared.activity_wake.notify_one();
        let next = match shared.store.next_wakeup(now).await {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e, "computing the next wake-up failed");
                None
            }
        };
        let clock = shared.clock.clone();
        let sleep = async move {
            match next {
                Some(t) => clock.sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => {}
            _ = shared.timer_wake.notified() => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep(shared.config.poll_interval * 2) => {}
        }
    }
}
