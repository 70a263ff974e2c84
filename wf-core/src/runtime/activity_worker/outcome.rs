//! What an attempt's end means: the activity resolved for good (completed, failed, timed
//! out), or its next attempt scheduled per the retry policy and the schedule-to-close deadline.

use crate::data::activity::{ActivityFailure, ActivityResolution, TimeoutKind};
use crate::data::payload::Payload;
use crate::metrics::Resolution;
use crate::runtime::core::Core;
use crate::runtime::persist::until_durable;
use crate::runtime::worker::Direct;
use crate::store::ActivityTask;
use std::sync::Arc;

/// Applies an attempt's outcome: resolve for good, or schedule the next attempt per the retry
/// policy and the schedule-to-close deadline.
pub(crate) async fn finish(
    core: &Arc<Core>,
    task: &ActivityTask,
    outcome: Result<Payload, (ActivityFailure, Option<TimeoutKind>)>,
) {
    let now = core.now_ms();
    let store = &core.store;
    let attempts = task.attempt;
    let resolution = match outcome {
        Ok(result) => ActivityResolution::Completed { result, attempts },
        Err((failure, timeout)) => {
            let next = attempts + 1;
            let delay = crate::data::activity::duration_ms(task.options.retry.delay_before(next));
            let retry_at = now.saturating_add(delay);
            let within_deadline = task.schedule_deadline_ms().is_none_or(|d| retry_at < d);
            if task.options.retry.allows_retry(next, &failure) && within_deadline {
                tracing::info!(attempt = attempts, error = %failure.message, delay_ms = delay, "activity attempt failed; retrying");
                core.metrics.of_activity(&task.name).retries.inc();
                let retried = until_durable(core, "scheduling an activity retry", || {
                    store.retry_activity(
                        &task.run_id,
                        task.seq,
                        attempts,
                        retry_at,
                        failure.clone(),
                    )
                })
                .await;
                match retried {
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "scheduling an activity retry failed"),
                }
                core.wake.timer.notify_one();
                return;
            }
            let retryable = task.options.retry.allows_retry(next, &failure);
            match timeout {
                // The schedule-to-close deadline, not the attempt, is what ended it.
                _ if !within_deadline && (retryable || timeout.is_some()) => {
                    ActivityResolution::TimedOut {
                        timeout: TimeoutKind::ScheduleToClose,
                        attempts,
                        last_heartbeat: task.heartbeat.clone(),
                    }
                }
                Some(timeout) => ActivityResolution::TimedOut {
                    timeout,
                    attempts,
                    last_heartbeat: task.heartbeat.clone(),
                },
                None => ActivityResolution::Failed {
                    failure,
                    attempts,
                    last_heartbeat: task.heartbeat.clone(),
                },
            }
        }
    };
    core.metrics
        .of_activity(&task.name)
        .resolved(match resolution {
            ActivityResolution::Completed { .. } => Resolution::Completed,
            ActivityResolution::Failed { .. } => Resolution::Failed,
            ActivityResolution::TimedOut { .. } => Resolution::TimedOut,
        });
    if core.config.run_workers && !core.is_shutdown() {
        // Hand the result to the workflow worker: one commit records it together with what
        // the workflow does next (it falls back to the store if the run is busy elsewhere).
        let direct = Direct::Activity {
            run_id: task.run_id.clone(),
            seq: task.seq,
            attempt: attempts,
            resolution: resolution.clone(),
        };
        if core.worker.hand_over(direct).is_ok() {
            return;
        }
    }
    let resolved = until_durable(core, "recording an activity result", || {
        store.resolve_activity(&task.run_id, task.seq, attempts, resolution.clone(), now)
    })
    .await;
    match resolved {
        Ok(true) => core.wake.workflow.notify_one(),
        Ok(false) => tracing::debug!("activity attempt was superseded; result dropped"),
        Err(e) => tracing::error!(error = %e, "recording an activity result failed"),
    }
}
