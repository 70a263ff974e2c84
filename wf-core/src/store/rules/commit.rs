//! Committing a workflow task: the checks (lease owner, or a free run and an empty inbox for a
//! lease-free commit; `expected_next_event_id`; `NewMessages` for a close over unconsumed
//! messages), then its writes — the consumed inbox, activities, timers, updates, the events as
//! one row with the run's row in one change, a close or a continue-as-new — and its effects on
//! other runs (child starts, deliveries, terminations, notifications).

use super::builds::{check_build, task_versioning};
use super::deliver::{deliver_to, notify_run};
use super::encode_failed;
use super::feed::FeedRun;
use super::leases::{check_task_owner, check_unleased};
use super::start::create_run;
use super::terminate::terminate_run;
use super::tx::{Attempt, NewActivity, RunChange, RunClosing, Tx, UpdateRow};
use crate::data::activity::activity_lease;
use crate::data::codec::encode_event_into;
use crate::data::feed::FeedKind;
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::{ChildOutcome, RunStatus};
use crate::error::StoreError;
use crate::store::records::{
    Committed, NewChild, NewEvent, NewRun, NewTimer, OutgoingMessage, ResolvedAttempt, RunClose,
    RunNotice, RunRecord, TaskCommit, Termination,
};
use std::collections::HashSet;

/// [`Store::commit_workflow_task`](crate::store::Store::commit_workflow_task). Returns the
/// committed run and the spent commit, so that the caller frees the commit's events and
/// messages on its own thread: freeing another thread's memory makes glibc's allocator lock
/// that thread's arena, and a store thread would contend with the workflow worker on every
/// commit of a busy engine.
pub(crate) async fn commit<X: Tx>(
    tx: &mut X,
    mut c: TaskCommit,
) -> Result<(Committed, TaskCommit), StoreError> {
    let run_id = c.run_id.as_str();
    let now = c.now_ms;
    // A lease-free commit needs an empty inbox; a leased close, none past what it consumed;
    // a leased task that does not close makes its run ready again if messages wait past those.
    // (Under the run's locks, no message can arrive meanwhile: every insert takes them.)
    let inbox_after = if c.without_lease {
        Some(None)
    } else {
        Some(c.consumed_through)
    };
    let (row, inbox_waiting) = match c.assumed.as_deref() {
        Some(assumed) if c.without_lease => tx.assume_run(run_id, assumed).await?,
        _ => tx.load_run_and_peek_inbox(run_id, inbox_after).await?,
    };
    let row = row.ok_or_else(|| StoreError::conflict(run_id, "no such run"))?;
    if c.without_lease {
        check_unleased(&row, now)?;
        check_build(&row.record, &c.build)?;
        if inbox_waiting {
            return Err(StoreError::NewMessages {
                run_id: run_id.to_string(),
            });
        }
    } else {
        check_task_owner(&row, &c.worker_id)?;
    }
    let run = row.record;
    if run.next_event_id != c.expected_next_event_id {
        return Err(StoreError::conflict(
            run_id,
            format!(
                "the workflow task expected next event id {}, but the history is at {}",
                c.expected_next_event_id, run.next_event_id
            ),
        ));
    }
    // (A lease-free commit found the inbox empty above.)
    if c.close.is_some() && !c.without_lease && inbox_waiting {
        return Err(StoreError::NewMessages {
            run_id: run_id.to_string(),
        });
    }

    // The task's events as one record: one row insert, and no per-event key repeated.
    let mut chunk = Vec::new();
    for NewEvent { time_ms, kind } in &c.events {
        encode_event_into(&mut chunk, *time_ms, kind).map_err(encode_failed)?;
    }
    let next_event_id = run.next_event_id + c.events.len() as u64;
    let added_bytes = chunk.len() as u64;
    super::search::index_upserts(tx, run_id, c.events.iter().map(|e| &e.kind)).await?;
    let events = c.events.iter().map(|e| &e.kind);
    super::streams::append_written(tx, &run.workflow_id, run_id, events).await?;
    let events = c.events.iter().map(|e| (e.time_ms, &e.kind));
    super::feed::record_events(tx, FeedRun::of(&run), run.next_event_id, events).await?;
    if let Some(waiting) = &c.signal_waiting {
        let kind = FeedKind::SignalWaiting;
        super::feed::record_fact(tx, FeedRun::of(&run), kind, now, waiting).await?;
    }
    if let Some(through) = c.consumed_through {
        tx.consume_inbox(run_id, through).await?;
    }
    // Which new activities it leases: all or none, or under `lease_admitted` those the flow
    // limits admit.
    let mut leased = Vec::new();
    let mut held_back = false;
    let mut flow = Vec::new();
    let admitted = match c.lease_activities_to.as_deref() {
        Some(owner) if c.lease_admitted && !c.new_activities.is_empty() => {
            let queue = &run.task_queue;
            let admission =
                super::flow::admit_new(tx, now, owner, queue, &c.new_activities).await?;
            held_back = admission.held_back;
            flow = admission.counts;
            admission.admitted
        }
        Some(_) if !c.new_activities.is_empty() => {
            tx.refuse_covered_lease(run_id, &run.task_queue, &c.new_activities)
                .await?;
            vec![true; c.new_activities.len()]
        }
        _ => Vec::new(),
    };
    for (i, task) in c.new_activities.iter().enumerate() {
        let admitted = admitted.get(i).copied().unwrap_or(false);
        let lease = c
            .lease_activities_to
            .as_deref()
            .filter(|_| admitted)
            .map(|owner| {
                let (attempt_deadline, lease_until) = activity_lease(&task.options, now, now);
                (owner, attempt_deadline, lease_until)
            });
        if lease.is_some() {
            leased.push(task.seq);
        }
        let activity = NewActivity {
            run_id,
            workflow_id: &run.workflow_id,
            task_queue: &run.task_queue,
            task,
            scheduled_ms: now,
            lease,
        };
        tx.insert_activity(&activity).await?;
    }
    for NewTimer { seq, fire_at_ms } in &c.new_timers {
        tx.insert_timer(run_id, *seq, *fire_at_ms).await?;
    }
    for ResolvedAttempt { seq, attempt } in &c.resolve_activities {
        let current = Attempt {
            run_id,
            seq: *seq,
            attempt: *attempt,
        };
        tx.resolve_attempt(&current).await?;
    }
    for seq in &c.cancel_activities {
        tx.delete_activity(run_id, *seq).await?;
    }
    for seq in &c.cancel_timers {
        tx.delete_timer(run_id, *seq).await?;
    }
    // Each update once, in its last state: an update accepted and completed in one task would
    // otherwise enter and leave the pending index within the transaction (one more page).
    let mut written = HashSet::new();
    for change in c.updates.iter().rev() {
        if written.insert(change.update_id.as_str()) {
            let row = UpdateRow {
                chain_id: &run.chain_id,
                run_id,
                update_id: &change.update_id,
                name: &change.name,
                state: &change.state,
            };
            tx.put_update(&row).await?;
        }
    }

    // The run's row in one change, closed at once if the task closes it.
    let close = c.close.take();
    let closing = close.as_ref().map(|close| closing_of(close, now));
    // Ready again if messages wait (a closing task found none after those it consumed).
    let ready_at = if closing.is_none() && !c.without_lease && inbox_waiting {
        Some(now)
    } else {
        None
    };
    // With the task's events (nothing in between reads them), and a close's clearing.
    let change = RunChange {
        run_id,
        next_event_id,
        added_bytes,
        summary: Some(&c.summary),
        ready_at,
        close: closing.clone(),
        versioning: Some(task_versioning(&c.build)),
    };
    tx.append_and_update_run(run.next_event_id, &chunk, &change)
        .await?;

    // The committed row, as just written (no read back).
    let mut record = RunRecord {
        next_event_id,
        history_bytes: run.history_bytes + added_bytes,
        task_failure: None,
        summary: std::mem::take(&mut c.summary),
        ..run
    };
    if let Some(closing) = closing {
        record.status = closing.status;
        record.closed_ms = Some(closing.closed_ms);
        record.result = closing.result.cloned();
        record.failure = closing.failure.map(str::to_string);
    }
    let failed = matches!(close, Some(RunClose::Failed(_)));
    if let Some(RunClose::ContinuedAsNew(new)) = close {
        if new.workflow_id != record.workflow_id {
            return Err(StoreError::conflict(
                run_id,
                format!(
                    "continue-as-new must keep workflow id {:?}, got {:?}",
                    record.workflow_id, new.workflow_id
                ),
            ));
        }
        // The chain's limits go on, whatever the worker said: they are the store's to keep.
        let limits = super::run_limits::started(tx, run_id).await?.limits;
        let new = NewRun {
            continued_from: Some(run_id.to_string()),
            limits: limits.map(|l| l.continued()),
            ..new
        };
        create_run(tx, &new, &record.chain_id, now).await?;
        super::search::carry_over(tx, run_id, &new.run_id, !new.memo.is_empty()).await?;
        super::queues::carry_over(tx, run_id, &new.run_id).await?;
    }
    let mut notify = std::mem::take(&mut c.notify);
    if failed {
        let error_type = c.failure_type.as_deref().unwrap_or("failed");
        if super::run_limits::retry_failed(tx, &record, error_type, now)
            .await?
            .is_some()
        {
            // The parent waits on for the retry: it is not told of this failure.
            notify.retain(|n| !matches!(n.message, Message::ChildClosed { .. }));
        }
    }
    let effects = SideEffects {
        start_children: std::mem::take(&mut c.start_children),
        deliver: std::mem::take(&mut c.deliver),
        terminate: std::mem::take(&mut c.terminate),
        notify,
    };
    apply_side_effects(tx, run_id, effects, now).await?;
    Ok((
        Committed {
            run: record,
            leased,
            held_back,
            flow,
        },
        c,
    ))
}

/// The closing part of the run's change for a task that closes it.
fn closing_of(close: &RunClose, now_ms: i64) -> RunClosing<'_> {
    let (status, result, failure): (_, Option<&Payload>, _) = match close {
        RunClose::Completed(result) => (RunStatus::Completed, Some(result), None),
        RunClose::Failed(message) => (RunStatus::Failed, None, Some(message.as_str())),
        RunClose::Cancelled(message) => (RunStatus::Cancelled, None, Some(message.as_str())),
        RunClose::ContinuedAsNew(_) => (RunStatus::ContinuedAsNew, None, None),
    };
    RunClosing {
        status,
        closed_ms: now_ms,
        result,
        failure,
    }
}

/// What a workflow task does to other runs, in its own transaction.
struct SideEffects {
    start_children: Vec<NewChild>,
    deliver: Vec<OutgoingMessage>,
    terminate: Vec<Termination>,
    notify: Vec<RunNotice>,
}

/// Child starts (a child whose workflow id is running is not started: the parent is told),
/// outgoing messages (missing or closed targets, and targets outside the chain a message names,
/// are skipped), parent close policies, a child's result for its parent.
async fn apply_side_effects<X: Tx>(
    tx: &mut X,
    run_id: &str,
    fx: SideEffects,
    now: i64,
) -> Result<(), StoreError> {
    for NewChild { seq, run: child } in fx.start_children {
        let running = tx
            .latest_run(&child.workflow_id)
            .await?
            .filter(|r| r.record.status == RunStatus::Running);
        if let Some(existing) = running {
            let outcome = ChildOutcome::StartFailed(format!(
                "workflow {:?} is already running (run {})",
                child.workflow_id, existing.record.run_id
            ));
            tx.push_inbox(run_id, Message::ChildClosed { seq, outcome })
                .await?;
            tx.set_ready(run_id, now).await?;
        } else {
            create_run(tx, &child, &child.run_id, now).await?;
        }
    }
    for OutgoingMessage {
        workflow_id,
        chain_id,
        message,
    } in fx.deliver
    {
        let target = tx
            .latest_run(&workflow_id)
            .await?
            .filter(|t| chain_id.as_ref().is_none_or(|c| *c == t.record.chain_id));
        if let Some(target) = target {
            match deliver_to(tx, &target.record, message, now).await {
                Ok(_) | Err(StoreError::RunFinished { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    for Termination {
        workflow_id,
        reason,
    } in fx.terminate
    {
        let target = tx
            .latest_run(&workflow_id)
            .await?
            .filter(|r| r.record.status == RunStatus::Running);
        if let Some(target) = target {
            terminate_run(tx, &target.record, &reason, now).await?;
        }
    }
    for RunNotice { run_id, message } in fx.notify {
        notify_run(tx, &run_id, message, now).await?;
    }
    Ok(())
}
