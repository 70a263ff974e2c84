//! Repairing one run, by an operator: a reset (the latest run of a workflow id closes as
//! `Reset` and a new run of its chain goes on from a prefix of its history), a fork (a new
//! workflow id from a prefix of any run, the run left untouched), a resume (a reset of a closed
//! run to its last good workflow task, or, for a running run whose workflow task keeps
//! failing, that task retried at once), and the deletion of one run. Each is one transaction.
//!
//! The new run's history is the prefix up to the chosen point (a workflow task's last event),
//! its first event naming where it came from ([`RepairOrigin`]); its pending work is what the
//! prefix left pending — activities scheduled and not resolved get a fresh attempt, timers
//! started and not fired are armed again — and its inbox holds the signals and updates the old
//! run received after the point (recorded in history, or still in its inbox), in arrival
//! order, unless the caller drops them. Signal ids and update records are kept per chain, so a
//! signal id or an update id seen before the reset is still deduplicated after it: the
//! re-applied messages are delivered directly, without a second dedupe check.
//!
//! A prefix with a child workflow still open is refused: the child reports to the run that
//! started it, which the new run is not.

use super::deliver::find_run;
use super::encode_failed;
use super::purge::delete_runs;
use super::terminate::{apply_fallout, clear_closed_run, terminate_run, Fallout};
use super::tx::{ClosedRun, NewActivity, RunChange, RunClosing, Tx, UpdateRow};
use crate::data::codec::{decode_event, decode_events, encode_event, encode_event_into};
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::repair::{RepairKind, RepairOrigin, ResetPoint};
use crate::data::run::RunStatus;
use crate::data::update::UpdateState;
use crate::error::StoreError;
use crate::store::records::{NewActivityTask, ResetRequest, RunRecord};
use std::collections::BTreeMap;

/// [`StoreAdmin::reset_run`](crate::store::StoreAdmin::reset_run): a reset, fork or resume.
/// Returns the run that goes on (the new run; for a resume of a running run, that run).
pub(crate) async fn reset_run<X: Tx>(
    tx: &mut X,
    req: ResetRequest,
) -> Result<RunRecord, StoreError> {
    let source = find_run(tx, &req.workflow_id, req.run_id.as_deref())
        .await?
        .ok_or_else(|| StoreError::NotFound {
            workflow_id: req.workflow_id.clone(),
            run_id: req.run_id.clone(),
        })?
        .record;
    let target_workflow_id = match req.kind {
        RepairKind::Fork => fork_target(tx, &req).await?,
        RepairKind::Reset | RepairKind::Resume => {
            check_resettable(tx, &source, req.kind).await?;
            if req.kind == RepairKind::Resume && source.status == RunStatus::Running {
                return retry_now(tx, source, req.now_ms).await;
            }
            source.workflow_id.clone()
        }
    };
    let rows = tx.event_rows(&source.run_id, 1).await?;
    let mut events = Vec::new();
    for (first, data) in &rows {
        events.extend(decode_events(*first, data).map_err(|e| corrupt(&source.run_id, e))?);
    }
    let at = point_in(&source.run_id, &events, req.point)?;
    let prefix = &events[..at as usize];
    let pending = Pending::of(prefix);
    if !pending.children.is_empty() {
        return Err(StoreError::conflict(
            &source.run_id,
            format!(
                "its history up to event {at} has child workflows still open ({}): they report to \
                 this run, not to a new one; pick a point before they started or after they closed",
                pending.children.join(", ")
            ),
        ));
    }
    // A fork starts from the prefix alone.
    let dropped = req.drop_messages || req.kind == RepairKind::Fork;
    let messages = match dropped {
        true => Vec::new(),
        false => messages_after(tx, &source, &events[at as usize..]).await?,
    };
    if req.kind != RepairKind::Fork && source.status == RunStatus::Running {
        close_reset(tx, &source, &req, at).await?;
    }
    let chain_id = match req.kind {
        RepairKind::Fork => req.new_run_id.clone(),
        _ => source.chain_id.clone(),
    };
    let origin = RepairOrigin {
        kind: req.kind,
        workflow_id: source.workflow_id.clone(),
        run_id: source.run_id.clone(),
        at_event: at,
        reason: req.reason.clone(),
        identity: req.identity.clone(),
        at_ms: req.now_ms,
    };
    let new = NewRunOf {
        source: &source,
        workflow_id: &target_workflow_id,
        run_id: &req.new_run_id,
        chain_id: &chain_id,
        origin,
        now_ms: req.now_ms,
    };
    let limits = write_prefix(tx, &new, prefix, req.kind == RepairKind::Fork).await?;
    super::run_limits::arm(tx, new.run_id, limits.as_ref(), req.now_ms).await?;
    super::search::index_upserts(tx, new.run_id, prefix.iter().map(|e| &e.kind)).await?;
    if let Some(memo) = tx.memo(&source.run_id).await? {
        tx.put_memo(new.run_id, &memo).await?;
    }
    for task in &pending.activities {
        let activity = NewActivity {
            run_id: new.run_id,
            workflow_id: new.workflow_id,
            task_queue: &new.source.task_queue,
            task,
            scheduled_ms: req.now_ms,
            lease: None,
        };
        tx.insert_activity(&activity).await?;
    }
    for (seq, fire_at_ms) in &pending.timers {
        tx.insert_timer(new.run_id, *seq, *fire_at_ms).await?;
    }
    if req.kind != RepairKind::Fork {
        // Updates whose handler the prefix left running run on in the new run.
        for (update_id, name) in &pending.updates {
            put_update(tx, &new, update_id, name, &UpdateState::Accepted).await?;
        }
    }
    for message in messages {
        if let Message::Update {
            update_id, name, ..
        } = &message
        {
            put_update(tx, &new, update_id, name, &UpdateState::Requested).await?;
        }
        tx.push_inbox(new.run_id, message).await?;
    }
    tx.load_run(new.run_id)
        .await?
        .map(|r| r.record)
        .ok_or_else(|| StoreError::bug(format!("run {} vanished mid-transaction", new.run_id)))
}

/// [`StoreAdmin::delete_run`](crate::store::StoreAdmin::delete_run): run `run_id` of the
/// workflow id (its latest run if `None`) with its history, inbox, activities, timers, search
/// attributes, and its chain's dedupe ids once no run of the chain is left. A running run is
/// terminated first (its parent told, its children's close policies applied), in the same
/// transaction. Returns the deleted run's id.
pub(crate) async fn delete_run<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    run_id: Option<String>,
    reason: String,
    now_ms: i64,
) -> Result<String, StoreError> {
    let Some(run) = find_run(tx, &workflow_id, run_id.as_deref()).await? else {
        return Err(StoreError::NotFound {
            workflow_id,
            run_id,
        });
    };
    let run = run.record;
    if run.status == RunStatus::Running {
        terminate_run(tx, &run, &format!("deleted: {reason}"), now_ms).await?;
    }
    let gone = ClosedRun {
        run_id: run.run_id.clone(),
        workflow_id: run.workflow_id,
        chain_id: run.chain_id,
    };
    delete_runs(tx, vec![gone]).await?;
    Ok(run.run_id)
}

/// [`StoreAdmin::repair_origin`](crate::store::StoreAdmin::repair_origin): what the run's
/// first event says of the repair that made it.
pub(crate) async fn repair_origin<X: Tx>(
    tx: &mut X,
    run_id: String,
) -> Result<Option<RepairOrigin>, StoreError> {
    let Some(data) = tx.event_row(&run_id, 1).await? else {
        return Ok(None);
    };
    match decode_event(1, &data)
        .map_err(|e| corrupt(&run_id, e))?
        .kind
    {
        EventKind::WorkflowStarted { repaired_from, .. } => Ok(repaired_from.map(|o| *o)),
        _ => Ok(None),
    }
}

fn corrupt(run_id: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(format!("run {run_id}: {e}"))
}

/// A reset or resume acts on the latest run of its workflow id, and a resume on a run that
/// did not complete.
async fn check_resettable<X: Tx>(
    tx: &mut X,
    source: &RunRecord,
    kind: RepairKind,
) -> Result<(), StoreError> {
    let latest = tx
        .latest_run(&source.workflow_id)
        .await?
        .map(|r| r.record.run_id);
    if latest.as_deref() != Some(source.run_id.as_str()) {
        return Err(StoreError::conflict(
            &source.run_id,
            format!(
                "it is not the latest run of workflow {:?} (run {} is): reset the latest run, or \
                 fork this one to a new workflow id",
                source.workflow_id,
                latest.unwrap_or_default()
            ),
        ));
    }
    if kind == RepairKind::Resume && source.status == RunStatus::Completed {
        return Err(StoreError::conflict(
            &source.run_id,
            "it completed: there is nothing to resume (reset it to run it again)",
        ));
    }
    Ok(())
}

/// A fork's new workflow id, which no running run may hold.
async fn fork_target<X: Tx>(tx: &mut X, req: &ResetRequest) -> Result<String, StoreError> {
    let Some(target) = req.new_workflow_id.clone() else {
        return Err(StoreError::bug("a fork without a new workflow id"));
    };
    if let Some(existing) = tx.latest_run(&target).await? {
        if existing.record.status == RunStatus::Running {
            return Err(StoreError::AlreadyStarted {
                workflow_id: target,
                run_id: existing.record.run_id,
            });
        }
    }
    Ok(target)
}

/// A resume of a running run: its failed workflow task runs again now rather than after its
/// backoff.
async fn retry_now<X: Tx>(
    tx: &mut X,
    run: RunRecord,
    now_ms: i64,
) -> Result<RunRecord, StoreError> {
    if run.task_failure.is_none() {
        return Err(StoreError::conflict(
            &run.run_id,
            "it is running and its workflow tasks do not fail: there is nothing to resume",
        ));
    }
    tx.set_ready(&run.run_id, now_ms).await?;
    Ok(run)
}

/// The last event a reset to `point` keeps.
fn point_in(run_id: &str, events: &[HistoryEvent], point: ResetPoint) -> Result<u64, StoreError> {
    let is_task = |e: &HistoryEvent| matches!(e.kind, EventKind::WorkflowTaskCompleted { .. });
    // A run's history ends at its close: no point at or after it.
    let closed_at = events
        .iter()
        .position(|e| e.kind.is_terminal())
        .unwrap_or(events.len());
    let at = match point {
        ResetPoint::FirstTask => 1,
        ResetPoint::LastGoodTask => events[..closed_at]
            .iter()
            .rev()
            .find(|e| is_task(e))
            .map_or(1, |e| e.event_id),
        ResetPoint::Event(n) => {
            let task = events.iter().any(|e| e.event_id == n && is_task(e));
            if n != 1 && !task {
                return Err(StoreError::conflict(
                    run_id,
                    format!(
                        "event {n} is neither WorkflowStarted (1) nor a WorkflowTaskCompleted of its \
                         {} events: reset to the last event of a workflow task (the history lists them)",
                        events.len()
                    ),
                ));
            }
            n
        }
    };
    if at as usize > closed_at {
        return Err(StoreError::conflict(
            run_id,
            format!("its history closes at event {}, at or before event {at}: reset to an earlier workflow task", closed_at + 1),
        ));
    }
    if events.first().map(|e| e.event_id) != Some(1) || events.len() < at as usize {
        return Err(corrupt(run_id, "its history does not start at event 1"));
    }
    Ok(at)
}

/// What a history prefix leaves pending.
#[derive(Default)]
struct Pending {
    /// Activities scheduled and not resolved, by seq.
    activities: Vec<NewActivityTask>,
    /// Timers started and neither fired nor cancelled: (seq, fire time).
    timers: Vec<(u32, i64)>,
    /// Children started and not closed, by workflow id.
    children: Vec<String>,
    /// Updates accepted and not completed: (update id, name).
    updates: Vec<(String, String)>,
}

impl Pending {
    fn of(prefix: &[HistoryEvent]) -> Pending {
        let mut activities = BTreeMap::new();
        let mut timers = BTreeMap::new();
        let mut children = BTreeMap::new();
        let mut updates = BTreeMap::new();
        for e in prefix {
            match &e.kind {
                EventKind::ActivityScheduled {
                    seq,
                    name,
                    input,
                    options,
                } => {
                    let task = NewActivityTask {
                        seq: *seq,
                        name: name.clone(),
                        input: input.clone(),
                        options: options.clone(),
                    };
                    activities.insert(*seq, task);
                }
                EventKind::ActivityCompleted { seq, .. }
                | EventKind::ActivityFailed { seq, .. }
                | EventKind::ActivityTimedOut { seq, .. }
                | EventKind::ActivityCancelled { seq } => {
                    activities.remove(seq);
                }
                EventKind::TimerStarted { seq, fire_at_ms } => {
                    timers.insert(*seq, *fire_at_ms);
                }
                EventKind::TimerFired { seq } | EventKind::TimerCancelled { seq } => {
                    timers.remove(seq);
                }
                EventKind::ChildWorkflowStarted {
                    seq, workflow_id, ..
                } => {
                    children.insert(*seq, workflow_id.clone());
                }
                EventKind::ChildWorkflowClosed { seq, .. } => {
                    children.remove(seq);
                }
                EventKind::UpdateAccepted {
                    update_id, name, ..
                } => {
                    updates.insert(update_id.clone(), name.clone());
                }
                EventKind::UpdateCompleted { update_id, .. } => {
                    updates.remove(update_id);
                }
                _ => {}
            }
        }
        Pending {
            activities: activities.into_values().collect(),
            timers: timers.into_iter().collect(),
            children: children.into_values().collect(),
            updates: updates.into_iter().collect(),
        }
    }
}

/// The signals and updates the run received after the point, in arrival order: those its
/// history records, then those still in its inbox.
async fn messages_after<X: Tx>(
    tx: &mut X,
    source: &RunRecord,
    after: &[HistoryEvent],
) -> Result<Vec<Message>, StoreError> {
    let mut messages = Vec::new();
    for e in after {
        match &e.kind {
            EventKind::SignalReceived {
                name,
                args,
                signal_id,
                sent_at,
            } => messages.push(Message::Signal {
                name: name.clone(),
                args: args.clone(),
                signal_id: signal_id.clone(),
                sent_at: *sent_at,
            }),
            EventKind::UpdateAccepted {
                update_id,
                name,
                args,
            } => messages.push(Message::Update {
                update_id: update_id.clone(),
                name: name.clone(),
                args: args.clone(),
            }),
            _ => {}
        }
    }
    if source.status == RunStatus::Running {
        for m in tx.inbox(&source.run_id).await? {
            if matches!(m.message, Message::Signal { .. } | Message::Update { .. }) {
                messages.push(m.message);
            }
        }
    }
    Ok(messages)
}

/// Closes the running `source` as reset: `WorkflowReset`, status `Reset`, its inbox, activities
/// and timers dropped, and its children that the new run does not know given their parent
/// close policies.
async fn close_reset<X: Tx>(
    tx: &mut X,
    source: &RunRecord,
    req: &ResetRequest,
    at: u64,
) -> Result<(), StoreError> {
    let kind = EventKind::WorkflowReset {
        new_run_id: req.new_run_id.clone(),
        at_event: at,
        reason: req.reason.clone(),
        identity: req.identity.clone(),
    };
    let data = encode_event(req.now_ms, &kind).map_err(encode_failed)?;
    tx.insert_events(&source.run_id, source.next_event_id, &data)
        .await?;
    let feed = super::feed::FeedRun::of(source);
    let event = std::iter::once((req.now_ms, &kind));
    super::feed::record_events(tx, feed, source.next_event_id, event).await?;
    let failure = format!(
        "reset to run {} by {}: {}",
        req.new_run_id, req.identity, req.reason
    );
    tx.update_run(&RunChange {
        run_id: &source.run_id,
        next_event_id: source.next_event_id + 1,
        added_bytes: data.len() as u64,
        summary: None,
        ready_at: None,
        close: Some(RunClosing {
            status: RunStatus::Reset,
            closed_ms: req.now_ms,
            result: None,
            failure: Some(&failure),
        }),
        versioning: None,
    })
    .await?;
    clear_closed_run(tx, &source.run_id).await?;
    let why = format!("its parent run {} was reset", source.run_id);
    let fallout = Fallout::of(source, None, &why);
    for (child, reason) in apply_fallout(tx, source, fallout, req.now_ms).await? {
        terminate_run(tx, &child, &reason, req.now_ms).await?;
    }
    Ok(())
}

/// The run a repair creates.
struct NewRunOf<'a> {
    source: &'a RunRecord,
    workflow_id: &'a str,
    run_id: &'a str,
    chain_id: &'a str,
    origin: RepairOrigin,
    now_ms: i64,
}

/// Writes the new run's row and history: the prefix, its first event naming the repair (and,
/// for a fork, no parent: the fork reports to nobody). Returns the run's limits.
async fn write_prefix<X: Tx>(
    tx: &mut X,
    new: &NewRunOf<'_>,
    prefix: &[HistoryEvent],
    fork: bool,
) -> Result<Option<crate::data::run_limits::RunLimits>, StoreError> {
    let mut first = prefix[0].clone();
    let EventKind::WorkflowStarted {
        repaired_from,
        parent,
        limits,
        ..
    } = &mut first.kind
    else {
        return Err(corrupt(
            &new.source.run_id,
            format!("its history starts with {}", first.kind.name()),
        ));
    };
    *repaired_from = Some(Box::new(new.origin.clone()));
    if fork {
        *parent = None;
    }
    let limits = limits.clone();
    let started = encode_event(first.time_ms, &first.kind).map_err(encode_failed)?;
    let record = RunRecord {
        workflow_id: new.workflow_id.to_string(),
        run_id: new.run_id.to_string(),
        chain_id: new.chain_id.to_string(),
        workflow_type: new.source.workflow_type.clone(),
        task_queue: new.source.task_queue.clone(),
        status: RunStatus::Running,
        next_event_id: 2,
        history_bytes: started.len() as u64,
        created_ms: new.now_ms,
        closed_ms: None,
        result: None,
        failure: None,
        task_failure: None,
        summary: Payload::default(),
        build_id: None,
        versioning: None,
        start_at_ms: None,
    };
    tx.insert_new_run(&record, &started, None).await?;
    // The new run's start is news; the events it copies are not.
    let feed = super::feed::FeedRun::of(&record);
    let event = std::iter::once((new.now_ms, &first.kind));
    super::feed::record_events(tx, feed, 1, event).await?;
    // The rest of the prefix, one row per workflow task as it was recorded.
    let mut added = 0;
    let mut row = Vec::new();
    let mut row_first = 2;
    for e in &prefix[1..] {
        encode_event_into(&mut row, e.time_ms, &e.kind).map_err(encode_failed)?;
        if matches!(e.kind, EventKind::WorkflowTaskCompleted { .. })
            || e.event_id == prefix.len() as u64
        {
            tx.insert_events(new.run_id, row_first, &row).await?;
            added += row.len() as u64;
            row.clear();
            row_first = e.event_id + 1;
        }
    }
    tx.update_run(&RunChange {
        run_id: new.run_id,
        next_event_id: prefix.len() as u64 + 1,
        added_bytes: added,
        summary: None,
        ready_at: Some(new.now_ms),
        close: None,
        versioning: None,
    })
    .await?;
    Ok(limits)
}

/// Writes the record of an update the new run takes over.
async fn put_update<X: Tx>(
    tx: &mut X,
    new: &NewRunOf<'_>,
    update_id: &str,
    name: &str,
    state: &UpdateState,
) -> Result<(), StoreError> {
    let row = UpdateRow {
        chain_id: new.chain_id,
        run_id: new.run_id,
        update_id,
        name,
        state,
    };
    tx.put_update(&row).await
}
