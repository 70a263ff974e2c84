//! One workflow task: load the run (cached, or replayed from its history), apply its inbox
//! and the messages handed over in memory, run the code until it blocks, then commit (see
//! `commit.rs`). A failed task is recorded and retried after a backoff; the run keeps its
//! history.

use super::commit::Plan;
use super::handoff::{Direct, DirectReply};
use super::local_activities::LocalStop;
use super::{commit, handoff, local_activities, Mode, Worker};
use crate::data::message::Message;
use crate::data::run::{RunStatus, TaskFailure};
use crate::data::update::{UpdateChange, UpdateOutcome, UpdateState};
use crate::error::WfError;
use crate::metrics::{Lookup, TaskOutcome, UpdateStep};
use crate::replay::{replay, Instance, TaskError, TaskMeta};
use crate::runtime::persist::until_durable;
use crate::store::{ResolvedAttempt, RunRecord, WorkflowTask};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Delay before retrying a failed workflow task: 1 s, doubling, at most 60 s.
fn task_retry_delay(attempts: u32) -> Duration {
    Duration::from_millis((1000u64 << attempts.saturating_sub(1).min(6)).min(60_000))
}

/// Runs one workflow task: the leased inbox `messages`, then the `direct` hand-overs. In a
/// mode without a lease, the run came from the cache (or is being started) and holds no
/// lease (see `TaskCommit::without_lease`); a failure then hands everything back to the
/// store path, where a leased task redoes it.
pub(super) async fn process(w: &Worker, task: WorkflowTask, direct: Vec<Direct>, mode: Mode) {
    let started = Instant::now();
    let metrics = w.core.metrics.of_type(&task.run.workflow_type);
    let span = tracing::info_span!(
        "workflow_task",
        workflow_id = %task.run.workflow_id,
        run_id = %task.run.run_id,
        workflow_type = %task.run.workflow_type,
        event_id = task.run.next_event_id,
        mode = mode.name(),
    );
    let outcome = run_task(w, task, direct, mode).instrument(span).await;
    metrics.task(outcome, started.elapsed());
}

/// [`process`], without the span and the metrics.
async fn run_task(w: &Worker, task: WorkflowTask, direct: Vec<Direct>, mode: Mode) -> TaskOutcome {
    let WorkflowTask { run, messages } = task;
    let without_lease = !matches!(mode, Mode::Leased);
    let (start, fresh) = match mode {
        Mode::Start {
            request,
            reply,
            instance,
        } => (Some((*request, reply)), Some(instance)),
        Mode::Leased | Mode::LeaseFree => (None, None),
    };
    let mut instance = match load_instance(w, &run, fresh).await {
        Ok(instance) => instance,
        Err(Some(e)) => {
            fail_if_leased(w, &run, e, without_lease).await;
            left_cache(w, &run);
            handoff::give_up(w, direct, start).await;
            return TaskOutcome::Failed;
        }
        Err(None) => {
            release_if_leased(w, &run.run_id, without_lease).await;
            left_cache(w, &run);
            handoff::give_up(w, direct, start).await;
            return TaskOutcome::Discarded;
        }
    };
    instance.set_next_event_id(run.next_event_id);
    let core = &w.core;
    let now = core.now_ms();
    let consumed_through = messages.last().map(|m| m.seq);
    let mut inputs: Vec<Message> = messages.into_iter().map(|m| m.message).collect();
    let direct = refuse_signals_after_cancel(&run, instance.as_ref(), &inputs, direct);
    // Messages handed over in memory come after the inbox (they arrived later).
    let mut resolve_activities = Vec::new();
    let mut direct_updates = HashSet::new();
    // Activities this task's inputs resolve already (the inbox's, then hand-overs').
    let mut resolving: HashSet<u32> = inputs
        .iter()
        .filter_map(|m| match m {
            Message::ActivityResolved { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    for d in &direct {
        match d {
            Direct::Message { message, .. } => {
                if let Message::Update { update_id, .. } = message {
                    direct_updates.insert(update_id.clone());
                }
                inputs.push(message.clone());
            }
            // Taken out by `drain_direct` before any task runs.
            Direct::Start { .. } => {}
            // An attempt's result handed over after the run moved on without it: another
            // attempt (this engine's leases lapsed meanwhile) resolved the activity, which
            // the history this run was loaded from, or its inbox, records. Applied, it
            // would fail the task as a nondeterminism; committed, it would be refused.
            Direct::Activity { seq, attempt, .. }
                if !instance.awaits_activity(*seq) || !resolving.insert(*seq) =>
            {
                tracing::debug!(
                    seq,
                    attempt,
                    "activity result dropped: the run already has this activity's outcome"
                );
            }
            Direct::Activity {
                seq,
                attempt,
                resolution,
                ..
            } => {
                resolve_activities.push(ResolvedAttempt {
                    seq: *seq,
                    attempt: *attempt,
                });
                inputs.push(Message::ActivityResolved {
                    seq: *seq,
                    resolution: resolution.clone(),
                });
            }
        }
    }
    let meta = TaskMeta::live(
        now,
        run.next_event_id,
        run.history_bytes,
        core.config.build_id.clone(),
    );
    let signals = inputs
        .iter()
        .filter(|m| matches!(m, Message::Signal { .. }))
        .count();
    let activation = tracing::debug_span!("activation", messages = inputs.len());
    let mut output = match activation.in_scope(|| instance.run_task(inputs, meta, None)) {
        Ok(o) => o,
        Err(e) => {
            fail_if_leased(w, &run, e, without_lease).await;
            left_cache(w, &run);
            handoff::give_up(w, direct, start).await;
            return TaskOutcome::Failed;
        }
    };
    match local_activities::settle(w, &run, instance.as_mut(), &mut output, now).await {
        Ok(()) => {}
        Err(LocalStop::Task(e)) => {
            fail_if_leased(w, &run, e, without_lease).await;
            left_cache(w, &run);
            handoff::give_up(w, direct, start).await;
            return TaskOutcome::Failed;
        }
        Err(LocalStop::Shutdown) => {
            // A crash leaves the lease to expire; a clean stop hands the task back now.
            if !core.wake.crashed() {
                release_if_leased(w, &run.run_id, without_lease).await;
                handoff::give_up(w, direct, start).await;
            }
            left_cache(w, &run);
            return TaskOutcome::Discarded;
        }
    }
    // A rejected in-memory update leaves no trace at all: its caller hears it directly.
    let (direct_rejections, update_states) = std::mem::take(&mut output.update_states)
        .into_iter()
        .partition(|c: &UpdateChange| {
            direct_updates.contains(&c.update_id) && matches!(c.state, UpdateState::Rejected(_))
        });
    output.update_states = update_states;
    let handed_messages = direct.iter().any(|d| matches!(d, Direct::Message { .. }));
    let plan = Plan::build(
        core,
        &run,
        instance.as_ref(),
        output,
        without_lease,
        consumed_through,
        resolve_activities,
        handed_messages,
        now,
    );
    let updates = update_steps(&plan.update_states, &direct_rejections);
    let metrics = core.metrics.of_type(&run.workflow_type);
    if !commit::commit_task(w, run, instance, plan, direct_rejections, direct, start).await {
        return TaskOutcome::Discarded;
    }
    metrics.signals.add(signals as u64);
    for (step, n) in updates {
        metrics.updates(step, n);
    }
    TaskOutcome::Committed
}

/// Records that `run` is not in the cache after a failed task or commit: its marks are
/// kept no longer than its deliveries (see `marks.rs`).
pub(super) fn left_cache(w: &Worker, run: &RunRecord) {
    if w.cache.borrow().get(&run.run_id).is_none() {
        w.core.worker.marks.left(&run.workflow_id);
    }
}

/// The run in memory at `run`'s position: the one just built for a start, the cached one,
/// or one replayed from the store. `Err(Some(_))`: the task fails (the code or the history
/// is at fault); `Err(None)`: the store could not be read (try again later).
async fn load_instance(
    w: &Worker,
    run: &RunRecord,
    fresh: Option<Box<dyn Instance>>,
) -> Result<Box<dyn Instance>, Option<TaskError>> {
    let core = &w.core;
    let def = core
        .catalog
        .definition(&run.workflow_type)
        .map_err(|e| Some(TaskError::Other(e.to_string())))?
        .clone();
    let (cached, fresh) = match fresh {
        Some(instance) => (Some(instance), true),
        None => (
            w.cache.borrow_mut().take(&run.run_id).map(|l| l.instance),
            false,
        ),
    };
    if let Some(i) = cached.filter(|i| i.next_event_id() == run.next_event_id) {
        if !fresh {
            core.metrics.cache_lookup(Lookup::Task, true);
        }
        return Ok(i);
    }
    core.metrics.cache_lookup(Lookup::Task, false);
    let history = core.store.read_history(&run.run_id, 1).await.map_err(|e| {
        tracing::error!(run_id = %run.run_id, error = %e, "reading history failed");
        None
    })?;
    let reached = history.last().map_or(1, |e| e.event_id + 1);
    if reached != run.next_event_id {
        // Another worker committed to the run since this task was leased (this engine's
        // lease lapsed meanwhile): the task's inputs are stale, and its commit would be
        // refused. The run goes on from the store.
        tracing::info!(
            run_id = %run.run_id,
            leased_at = run.next_event_id,
            history_at = reached,
            "workflow task dropped: the run moved on since it was leased"
        );
        return Err(None);
    }
    let span = tracing::debug_span!("replay", events = history.len());
    core.metrics
        .of_type(&run.workflow_type)
        .replayed(history.len());
    span.in_scope(|| replay(def.as_ref(), &run.workflow_id, &run.run_id, &history))
        .map_err(Some)
}

/// Records a failed workflow task as [`fail`] does, if the task held the
/// run's lease. A lease-free task's failure is not its to record: its work goes back to
/// the store path, where a leased task replays the run and records the failure.
async fn fail_if_leased(w: &Worker, run: &RunRecord, error: TaskError, without_lease: bool) {
    if !without_lease {
        fail(w, run, error).await;
    }
}

/// Releases the run's workflow task lease, if the task held one. The release is a write:
/// when the store fails it (a full disk), the run is released in memory (this engine
/// forgets the task) and the release is retried until a write succeeds again, so the run
/// goes on then rather than when the lease expires.
pub(super) async fn release_if_leased(w: &Worker, run_id: &str, without_lease: bool) {
    if without_lease {
        return;
    }
    let core = &w.core;
    let released = until_durable(core, "releasing a workflow task lease", || {
        core.store.release_workflow_task(run_id, &core.worker_id)
    })
    .await;
    match released {
        Ok(()) => core.wake.workflow.notify_one(),
        Err(e) => {
            tracing::warn!(run_id, error = %e, "releasing the workflow task lease failed")
        }
    }
}

/// Records a failed workflow task; the run is retried after a backoff and keeps its history.
async fn fail(w: &Worker, run: &RunRecord, error: TaskError) {
    let core = &w.core;
    let attempts = run.task_failure.as_ref().map(|f| f.attempts).unwrap_or(0) + 1;
    let failure = TaskFailure {
        message: error.message(),
        nondeterminism: matches!(error, TaskError::NonDeterminism(_)),
        attempts,
        retry_at_ms: core
            .now_ms()
            .saturating_add(task_retry_delay(attempts).as_millis() as i64),
    };
    tracing::warn!(run_id = %run.run_id, attempts, error = %failure.message, "workflow task failed; will retry");
    if let Err(e) = core
        .store
        .fail_workflow_task(&run.run_id, &core.worker_id, failure)
        .await
    {
        tracing::error!(run_id = %run.run_id, error = %e, "recording a workflow task failure failed");
        // The run must not wait for its lease to expire: the task runs again (and fails
        // again, recording it then) once the store takes writes.
        if e.is_retryable() {
            release_if_leased(w, &run.run_id, false).await;
        }
    }
    core.wake.timer.notify_one();
    core.wake.progress.publish_local(&run.workflow_id);
    core.wake.waiters.publish(&run.workflow_id);
}

/// A run whose cancellation was requested takes no more signals (it is on its way out;
/// updates still reach its cleanup). For messages handed over in memory (the store applies the
/// same rule to the inbox, in `store/rules/deliver.rs`): a signal that comes after the run's cancellation request (recorded, or among this task's
/// inputs before it) is refused with `RunFinished` and left out of the task.
fn refuse_signals_after_cancel(
    run: &RunRecord,
    instance: &dyn Instance,
    inbox: &[Message],
    direct: Vec<Direct>,
) -> Vec<Direct> {
    let is_cancel = |m: &Message| matches!(m, Message::CancelRequested { .. });
    let mut cancelling = instance.cancel_requested() || inbox.iter().any(is_cancel);
    let mut kept = Vec::with_capacity(direct.len());
    for d in direct {
        match d {
            Direct::Message {
                message: Message::Signal { .. },
                reply,
                ..
            } if cancelling => {
                let _ = reply.send(DirectReply::Failed(WfError::RunFinished {
                    workflow_id: run.workflow_id.clone(),
                    run_id: run.run_id.clone(),
                    status: RunStatus::Cancelled,
                }));
            }
            d => {
                if let Direct::Message { message, .. } = &d {
                    cancelling |= is_cancel(message);
                }
                kept.push(d);
            }
        }
    }
    kept
}

/// How many updates reached each step in a task's update states (those committed and the
/// in-memory rejections), for `wf_updates_total`.
fn update_steps(committed: &[UpdateChange], rejected: &[UpdateChange]) -> Vec<(UpdateStep, u64)> {
    let mut counts = [0u64; 4];
    let steps = [
        UpdateStep::Accepted,
        UpdateStep::Rejected,
        UpdateStep::Completed,
        UpdateStep::Failed,
    ];
    for change in committed.iter().chain(rejected) {
        let step = match &change.state {
            UpdateState::Accepted => UpdateStep::Accepted,
            UpdateState::Rejected(_) => UpdateStep::Rejected,
            UpdateState::Completed(UpdateOutcome::Completed(_)) => UpdateStep::Completed,
            UpdateState::Completed(UpdateOutcome::Failed(_)) => UpdateStep::Failed,
            UpdateState::Requested | UpdateState::Abandoned => continue,
        };
        counts[step as usize] += 1;
    }
    steps
        .into_iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .collect()
}
