//! Attempts whose lease expired (the worker died, or stopped heartbeating) or whose deadline
//! passed: their running copy here is aborted, and the attempt ends as a timeout (retried per
//! the policy, or resolved as timed out).

use super::outcome::finish;
use crate::data::activity::{ActivityFailure, ActivityResolution, TimeoutKind};
use crate::runtime::core::Core;
use crate::runtime::liveness::Liveness;
use std::sync::Arc;

/// Times out every attempt whose lease or deadline passed at `now`.
pub(crate) async fn expire_due(core: &Arc<Core>, now: i64) {
    let expired = match core.store.expired_activities(now, 1024).await {
        Ok(expired) => expired,
        Err(e) => {
            tracing::error!(error = %e, "checking activity timeouts failed");
            return;
        }
    };
    // After an outage of the store, other engines get a lease's length to renew before their
    // attempts count as lost (see `Liveness::may_judge_others`).
    let judge = Liveness::may_judge_others(core, now);
    for task in expired {
        let deadline_passed = task.schedule_deadline_ms().is_some_and(|d| d <= now);
        let lease_running = task.lease_until_ms.is_some_and(|l| l > now);
        if lease_running && !deadline_passed && !judge {
            continue;
        }
        core.activities.abort(&task.run_id, task.seq);
        if deadline_passed {
            let resolution = ActivityResolution::TimedOut {
                timeout: TimeoutKind::ScheduleToClose,
                attempts: task.attempt,
                last_heartbeat: task.heartbeat.clone(),
            };
            if let Ok(true) = core
                .store
                .resolve_activity(task.current_attempt(), resolution, now)
                .await
            {
                core.wake.workflow.notify_one();
            }
            continue;
        }
        if lease_running {
            // Its lease has not run out: its engine's liveness lease did (a crashed process).
            let failure = ActivityFailure {
                kind: "worker_lost".into(),
                message: format!(
                    "the engine running attempt {} stopped renewing its liveness lease (it \
                     crashed or stalled)",
                    task.attempt
                ),
                non_retryable: false,
            };
            finish(core, &task, Err((failure, None))).await;
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
        finish(core, &task, Err((failure, Some(kind)))).await;
    }
}
