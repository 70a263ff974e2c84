//! Waiting for a run's result, and reading histories, descriptions and lists from the store.

use super::{latest, Core};
use crate::client::{Description, Paused, PendingActivity, PendingUpdate, RunInfo};
use crate::data::blocked::{BlockKind, BlockedPart};
use crate::data::history::HistoryEvent;
use crate::data::limits::Ident;
use crate::data::payload::Payload;
use crate::data::run::{ListFilter, RunStatus, RunSummary};
use crate::data::run_limits::RunLimits;
use crate::data::update::UpdateState;
use crate::error::WfError;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn ms_to_time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Waits for a change of `notified`'s workflow id, the engine's shutdown, or a poll
/// interval. A change committed by another engine on the store wakes it too, through that
/// engine's poke (`peers.rs`); the poll is the safety net for a lost or impossible poke.
pub(super) async fn until_changed(
    core: &Core,
    notified: Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Result<(), WfError> {
    let mut shutdown = core.wake.shutdown.subscribe();
    if *shutdown.borrow() && core.config.run_workers {
        return Err(WfError::Shutdown);
    }
    tokio::select! {
        _ = notified => {}
        _ = shutdown.changed() => {}
        _ = tokio::time::sleep(core.config.poll_interval) => {}
    }
    Ok(())
}

/// Waits for the workflow id's run to close (following continue-as-new) and returns its
/// result, or the error its close records.
pub(super) async fn wait_result(core: &Core, workflow_id: &str) -> Result<Payload, WfError> {
    loop {
        let notify = core.wake.waiters.subscribe(workflow_id);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let run = latest(core, workflow_id).await?;
        let failure = || run.failure.clone().unwrap_or_default();
        match run.status {
            RunStatus::Completed => return Ok(run.result.unwrap_or_default()),
            RunStatus::Failed => return Err(WfError::WorkflowFailed(failure())),
            RunStatus::Terminated => return Err(WfError::Terminated(failure())),
            RunStatus::Cancelled => return Err(WfError::Cancelled(failure())),
            RunStatus::TimedOut => return Err(WfError::TimedOut(failure())),
            // A reset run's replacement is the latest run: the wait follows it.
            RunStatus::Running | RunStatus::ContinuedAsNew | RunStatus::Reset => {}
        }
        until_changed(core, notified).await?;
    }
}

/// The history of run `run_id` of the workflow id (its latest run if `None`).
pub(super) async fn read_history(
    core: &Core,
    workflow_id: &str,
    run_id: Option<&str>,
) -> Result<Vec<HistoryEvent>, WfError> {
    // Run ids are the engine's (UUIDs), so one out of the limits names no run, ever.
    if let Some(run_id) = run_id {
        Ident::RunId.check(run_id)?;
    }
    let store = &core.store;
    let run = store
        .get_run(workflow_id, run_id)
        .await?
        .ok_or_else(|| WfError::NotFound {
            workflow_id: workflow_id.to_string(),
            update_id: None,
        })?;
    Ok(store.read_history(&run.run_id, 1).await?)
}

/// The latest run's description: its row, pending activities and updates, search attributes.
pub(super) async fn describe_run(core: &Core, workflow_id: &str) -> Result<Description, WfError> {
    let run = latest(core, workflow_id).await?;
    let store = &core.store;
    let activities = store.pending_activities(&run.run_id).await?;
    let updates = store.pending_updates(&run.run_id).await?;
    let summary = RunSummary::of(&run.summary);
    let paused = match run.status {
        RunStatus::Running => store
            .admin()
            .run_pauses(vec![run.run_id.clone()])
            .await?
            .pop()
            .flatten()
            .map(|mark| Paused {
                by: mark.by,
                reason: mark.reason,
                since: ms_to_time(mark.at_ms),
            }),
        _ => None,
    };
    let limits = store.run_limits(&run.run_id).await?;
    let repaired_from = store.admin().repair_origin(&run.run_id).await?;
    let search = store
        .admin()
        .run_search(vec![run.run_id.clone()])
        .await?
        .pop()
        .unwrap_or_default();
    let spot = store.admin().queue_spot(&run.run_id).await?;
    let blocked_on = match run.status {
        RunStatus::Running => blocked_parts(core, workflow_id, &activities).await,
        _ => Vec::new(),
    };
    Ok(Description {
        workflow_id: run.workflow_id,
        run_id: run.run_id,
        workflow_type: run.workflow_type,
        task_queue: run.task_queue,
        status: run.status,
        history_length: run.next_event_id.saturating_sub(1),
        history_bytes: run.history_bytes,
        started_at: ms_to_time(run.created_ms),
        // A run held by its queue has no start time yet.
        start_at: run
            .start_at_ms
            .filter(|&at| at < crate::data::queue::QUEUE_HELD_MS)
            .map(ms_to_time),
        queue_position: spot.as_ref().and_then(|s| s.position),
        queue: spot.map(|s| s.queue),
        closed_at: run.closed_ms.map(ms_to_time),
        pending_activities: activities
            .into_iter()
            .map(|a| PendingActivity {
                seq: a.seq,
                name: a.name,
                attempt: a.attempt,
                last_failure: a.last_failure.map(|f| f.message),
                heartbeat_details: a.heartbeat,
                attempt_deadline: a.attempt_deadline_ms.map(ms_to_time),
            })
            .collect(),
        pending_updates: updates
            .into_iter()
            .map(|u| PendingUpdate {
                update_id: u.update_id,
                name: u.name,
                accepted: matches!(u.state, UpdateState::Accepted),
            })
            .collect(),
        buffered_signals: summary.buffered_signals,
        running_handlers: summary.running_handlers,
        task_failure: run.task_failure,
        search_attributes: search.attributes,
        memo: search.memo,
        attempt: RunLimits::attempt_of(limits.as_ref()),
        repaired_from,
        result: run.result,
        failure: run.failure,
        paused,
        blocked_on,
    })
}

/// How many runs `filter` admits.
pub(super) async fn count_runs(core: &Core, filter: ListFilter) -> Result<u64, WfError> {
    if let Some(run_id) = &filter.after_run_id {
        Ident::RunId.check(run_id)?;
    }
    Ok(core.store.admin().count_runs(filter).await?)
}

/// What each part of a running run is blocked on, with each pending activity's attempt and
/// attempt deadline from the store. Empty when the run cannot be rebuilt here (its type is
/// not registered on this engine, or its code no longer replays its history: describe
/// reports the task failure then).
async fn blocked_parts(
    core: &Core,
    workflow_id: &str,
    activities: &[crate::store::ActivityTask],
) -> Vec<BlockedPart> {
    let mut parts = match super::query::blocked_on(core, workflow_id).await {
        Ok(parts) => parts,
        Err(e) => {
            tracing::debug!(%workflow_id, error = %e, "describe could not rebuild the run to say what it is blocked on");
            return Vec::new();
        }
    };
    for wait in parts.iter_mut().flat_map(|p| p.waits.iter_mut()) {
        if wait.kind != BlockKind::Activity {
            continue;
        }
        if let Some(a) = activities.iter().find(|a| Some(a.seq) == wait.seq) {
            wait.attempt = Some(a.attempt);
            wait.deadline_ms = a.attempt_deadline_ms;
        }
    }
    parts
}

/// The runs `filter` admits, with their search attributes and memos.
pub(super) async fn list_runs(core: &Core, filter: ListFilter) -> Result<Vec<RunInfo>, WfError> {
    if let Some(run_id) = &filter.after_run_id {
        Ident::RunId.check(run_id)?;
    }
    let store = &core.store;
    let runs = store.admin().list_runs(filter).await?;
    let run_ids: Vec<String> = runs.iter().map(|r| r.run_id.clone()).collect();
    let searches = store.admin().run_search(run_ids.clone()).await?;
    // One read for every listed run's queue, whatever their number.
    let spots = store.admin().queue_spots(run_ids.clone()).await?;
    // Only a running run can be paused: closed runs need no read.
    let running: Vec<String> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Running)
        .map(|r| r.run_id.clone())
        .collect();
    let paused: std::collections::HashSet<String> = if running.is_empty() {
        Default::default()
    } else {
        let marks = store.admin().run_pauses(running.clone()).await?;
        running
            .into_iter()
            .zip(marks)
            .filter_map(|(id, mark)| mark.map(|_| id))
            .collect()
    };
    Ok(runs
        .into_iter()
        .zip(searches)
        .zip(spots)
        .map(|((r, search), spot)| RunInfo {
            paused: paused.contains(&r.run_id),
            queue_position: spot.as_ref().and_then(|s| s.position),
            queue: spot.map(|s| s.queue),
            workflow_id: r.workflow_id,
            run_id: r.run_id,
            workflow_type: r.workflow_type,
            status: r.status,
            history_length: r.next_event_id.saturating_sub(1),
            started_at: ms_to_time(r.created_ms),
            closed_at: r.closed_ms.map(ms_to_time),
            search_attributes: search.attributes,
            memo: search.memo,
            build_id: r.build_id,
        })
        .collect())
}
