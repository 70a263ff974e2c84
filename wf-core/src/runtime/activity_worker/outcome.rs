//! What an attempt's end means: the activity resolved for good (completed, failed, timed
//! out), its next attempt scheduled per the retry policy and the schedule-to-close deadline,
//! or (the activity will complete asynchronously) the attempt held open for the holder of its
//! task token. [`finish`] applies an end the activity worker saw; [`settle`] one an outside
//! caller reported with the token, and says whether the attempt was still open.

use crate::data::activity::{ActivityFailure, ActivityResolution, TimeoutKind};
use crate::data::payload::Payload;
use crate::error::StoreError;
use crate::metrics::Resolution;
use crate::runtime::core::Core;
use crate::runtime::persist::until_durable;
use crate::runtime::worker::Direct;
use crate::store::ActivityTask;
use std::sync::Arc;

/// How an attempt ended: its result, or its failure (and the timeout that caused it).
pub(crate) type AttemptOutcome = Result<Payload, (ActivityFailure, Option<TimeoutKind>)>;

/// What an attempt's end decides.
enum Decision {
    /// Another attempt, visible at `at`.
    Retry { at: i64, failure: ActivityFailure },
    /// The activity ends for good.
    Resolve(ActivityResolution),
}

/// Applies the retry policy and the schedule-to-close deadline to an attempt's outcome.
fn decide(core: &Core, task: &ActivityTask, outcome: AttemptOutcome, now: i64) -> Decision {
    let attempts = task.attempt;
    let (failure, timeout) = match outcome {
        Ok(result) => return Decision::Resolve(ActivityResolution::Completed { result, attempts }),
        Err(failed) => failed,
    };
    let next = attempts + 1;
    let delay = crate::data::activity::duration_ms(task.options.retry.delay_before(next));
    let retry_at = now.saturating_add(delay);
    let within_deadline = task.schedule_deadline_ms().is_none_or(|d| retry_at < d);
    let retryable = task.options.retry.allows_retry(next, &failure);
    if retryable && within_deadline {
        tracing::info!(attempt = attempts, error = %failure.message, delay_ms = delay, "activity attempt failed; retrying");
        core.metrics.of_activity(&task.name).retries.inc();
        return Decision::Retry {
            at: retry_at,
            failure,
        };
    }
    Decision::Resolve(match timeout {
        // The schedule-to-close deadline, not the attempt, is what ended it.
        _ if !within_deadline && (retryable || timeout.is_some()) => ActivityResolution::TimedOut {
            timeout: TimeoutKind::ScheduleToClose,
            attempts,
            last_heartbeat: task.heartbeat.clone(),
        },
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
    })
}

fn count_resolution(core: &Core, task: &ActivityTask, resolution: &ActivityResolution) {
    core.metrics
        .of_activity(&task.name)
        .resolved(match resolution {
            ActivityResolution::Completed { .. } => Resolution::Completed,
            ActivityResolution::Failed { .. } => Resolution::Failed,
            ActivityResolution::TimedOut { .. } => Resolution::TimedOut,
        });
}

/// Schedules the next attempt (retrying the write while the store recovers); whether the
/// attempt was still current.
async fn retry(
    core: &Arc<Core>,
    task: &ActivityTask,
    at: i64,
    failure: ActivityFailure,
) -> Result<bool, StoreError> {
    let retried = until_durable(core, "scheduling an activity retry", || {
        core.store
            .retry_activity(task.current_attempt(), at, failure.clone(), core.now_ms())
    })
    .await;
    core.wake.timer.notify_one();
    // The failed attempt is in the feed.
    core.wake.feed_changed();
    retried
}

/// Resolves the activity through the store (retrying the write while the store recovers);
/// whether the attempt was still current.
async fn resolve(
    core: &Arc<Core>,
    task: &ActivityTask,
    resolution: ActivityResolution,
    now: i64,
) -> Result<bool, StoreError> {
    let resolved = until_durable(core, "recording an activity result", || {
        core.store
            .resolve_activity(task.current_attempt(), resolution.clone(), now)
    })
    .await;
    if let Ok(true) = resolved {
        core.wake.workflow.notify_one();
    }
    resolved
}

/// Applies an attempt's outcome: resolve for good, or schedule the next attempt per the retry
/// policy and the schedule-to-close deadline.
pub(crate) async fn finish(core: &Arc<Core>, task: &ActivityTask, outcome: AttemptOutcome) {
    let now = core.now_ms();
    let resolution = match decide(core, task, outcome, now) {
        Decision::Retry { at, failure } => {
            if let Err(e) = retry(core, task, at, failure).await {
                tracing::error!(error = %e, "scheduling an activity retry failed");
            }
            return;
        }
        Decision::Resolve(resolution) => resolution,
    };
    count_resolution(core, task, &resolution);
    if core.config.run_workers && !core.is_shutdown() {
        // Hand the result to the workflow worker: one commit records it together with what
        // the workflow does next (it falls back to the store if the run is busy elsewhere).
        let direct = Direct::Activity {
            run_id: task.run_id.clone(),
            seq: task.seq,
            attempt: task.attempt,
            resolution: resolution.clone(),
        };
        if core.worker.hand_over(direct).is_ok() {
            return;
        }
    }
    match resolve(core, task, resolution, now).await {
        Ok(true) => {}
        Ok(false) => tracing::debug!("activity attempt was superseded; result dropped"),
        Err(e) => tracing::error!(error = %e, "recording an activity result failed"),
    }
}

/// Applies the outcome an outside caller reported for an attempt with its task token, as
/// [`finish`] does, through the store (so that the caller learns it is durable); false when
/// the attempt was no longer current (it timed out, or another caller settled it first).
pub(crate) async fn settle(
    core: &Arc<Core>,
    task: &ActivityTask,
    outcome: AttemptOutcome,
) -> Result<bool, StoreError> {
    let now = core.now_ms();
    match decide(core, task, outcome, now) {
        Decision::Retry { at, failure } => retry(core, task, at, failure).await,
        Decision::Resolve(resolution) => {
            let counted = resolution.clone();
            let applied = resolve(core, task, resolution, now).await?;
            if applied {
                count_resolution(core, task, &counted);
            }
            Ok(applied)
        }
    }
}

/// Holds the attempt open for the holder of its task token (the activity returned
/// `ActivityError::will_complete_async`): its lease leaves this engine, its deadlines stay.
pub(crate) async fn hold_for_completion(core: &Arc<Core>, task: &ActivityTask) {
    let now = core.now_ms();
    let held = until_durable(
        core,
        "holding an activity for asynchronous completion",
        || {
            core.store
                .hold_activity_for_completion(task.current_attempt(), now)
        },
    )
    .await;
    match held {
        Ok(true) => {
            core.metrics.of_activity(&task.name).held.inc();
            tracing::info!("activity will complete asynchronously, by its task token");
            if task.options.start_to_close.is_none() && task.options.schedule_to_close.is_none() {
                // Temporal refuses this; wf keeps the documented default (describe shows the
                // deadline), and says so where the operator looks.
                tracing::warn!(
                    activity = %task.name,
                    run_id = %task.run_id,
                    "activity held for asynchronous completion with no start-to-close or \
                     schedule-to-close timeout: it times out after the default 5 minutes; \
                     set .start_to_close(..) where the workflow schedules it"
                );
            }
        }
        // Completed by its token already, or timed out: nothing to hold.
        Ok(false) => tracing::debug!("activity attempt settled before it was held"),
        Err(e) => tracing::error!(error = %e, "holding an activity for completion failed"),
    }
}
