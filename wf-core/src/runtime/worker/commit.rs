//! What a workflow task commits, and what happens once it is committed: the task's events and
//! commands become one `TaskCommit` (new activities, timers, children, messages to other runs,
//! the run's close with its children's parent close policies); after the commit the run goes
//! back to the cache, callers are answered, activities leased to this process start at once.

use super::handoff::{Direct, DirectReply, StartReply};
use super::{handoff, task, Live, Worker};
use crate::data::activity::activity_lease;
use crate::data::history::EventKind;
use crate::data::message::Message;
use crate::data::run::{ChildOutcome, ParentClosePolicy, ParentInfo, RunStatus};
use crate::data::update::UpdateChange;
use crate::replay::{Instance, TaskOutput};
use crate::runtime::activity_worker;
use crate::runtime::core::Core;
use crate::runtime::flow;
use crate::runtime::spin::await_solo;
use crate::store::{
    ActivityTask, NewActivityTask, NewChild, NewEvent, NewRun, NewTimer, OutgoingMessage,
    ResolvedAttempt, RunClose, RunNotice, RunRecord, RunStart, StartWithTask, StoreError,
    StoreFuture, TaskCommit, Termination, EAGER_LEASE_REFUSED,
};
use crate::workflow::commands::Close;
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;

/// A task's commit, and what to do once it is durable.
pub(super) struct Plan {
    commit: TaskCommit,
    /// The update states the task produced (rejections of in-memory updates left out).
    pub update_states: Vec<UpdateChange>,
    /// Activities leased to this process by the commit, with their slots, to start after it.
    local: Vec<(ActivityTask, OwnedSemaphorePermit)>,
    has_activities: bool,
    has_timers: bool,
    closes: bool,
}

impl Plan {
    /// The commit of a task of `run` that produced `output`.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        core: &Arc<Core>,
        run: &RunRecord,
        instance: &dyn Instance,
        output: TaskOutput,
        without_lease: bool,
        consumed_through: Option<u64>,
        resolve_activities: Vec<ResolvedAttempt>,
        handed_messages: bool,
        now: i64,
    ) -> Plan {
        let TaskOutput {
            mut events,
            update_states,
            close,
            summary,
            signal_waiting,
            ..
        } = output;
        let failure_type = match &close {
            Some(Close::Failed(_, code)) => Some(code.to_string()),
            _ => None,
        };
        let close = close.map(|c| run_close(c, run, instance, &mut events));
        let mut commit = TaskCommit {
            run_id: run.run_id.clone(),
            worker_id: core.worker_id.clone(),
            without_lease,
            expected_next_event_id: run.next_event_id,
            events: Vec::with_capacity(events.len()),
            consumed_through,
            new_activities: Vec::new(),
            cancel_activities: Vec::new(),
            new_timers: Vec::new(),
            cancel_timers: Vec::new(),
            updates: update_states.clone(),
            failure_type,
            lease_activities_to: None,
            lease_admitted: false,
            sync: true,
            resolve_activities,
            start_children: Vec::new(),
            deliver: Vec::new(),
            terminate: Vec::new(),
            notify: Vec::new(),
            close,
            summary: summary.encode(),
            now_ms: now,
            build: core.config.task_build(&run.workflow_type),
            // A run held here (or whose row a sender just read): its row is known, and a
            // store that would read it over a network takes it instead.
            assumed: (without_lease && core.store.takes_assumed_rows())
                .then(|| Box::new(run.clone())),
            signal_waiting,
        };
        for mut e in events {
            command_effects(&mut commit, run, &mut e);
            commit.events.push(NewEvent {
                time_ms: now,
                kind: e,
            });
        }
        if let Some(outcome) = commit.close.as_ref().map(child_outcome) {
            apply_close_policies(&run.run_id, instance.open_children(), &mut commit);
            if let (Some(parent), Some(outcome)) = (instance.parent(), outcome) {
                let message = Message::ChildClosed {
                    seq: parent.seq,
                    outcome,
                };
                commit.notify.push(RunNotice {
                    run_id: parent.run_id,
                    message,
                });
            }
        }
        // Someone waits on these: durable before answering. Internal steps (an activity's
        // result and the next command, a fired timer) become durable with the next synced
        // commit.
        commit.sync = commit.close.is_some()
            || !commit.updates.is_empty()
            || handed_messages
            || !commit.start_children.is_empty()
            || !commit.deliver.is_empty()
            || !commit.terminate.is_empty()
            || !commit.notify.is_empty();
        let local = lease_locally(core, run, &mut commit, now);
        Plan {
            has_activities: !commit.new_activities.is_empty(),
            has_timers: !commit.new_timers.is_empty(),
            closes: commit.close.is_some(),
            commit,
            update_states,
            local,
        }
    }
}

/// How the run closes, as the store records it. A continue-as-new gets its new run's id here
/// (in its `ContinuedAsNew` event too).
fn run_close(
    close: Close,
    run: &RunRecord,
    instance: &dyn Instance,
    events: &mut [EventKind],
) -> RunClose {
    match close {
        Close::Completed(p) => RunClose::Completed(p),
        Close::Failed(m, _) => RunClose::Failed(m),
        Close::Cancelled(reason) => RunClose::Cancelled(reason),
        Close::ContinuedAsNew(input) => {
            let new_run_id = crate::data::ids::new_id();
            for e in events.iter_mut() {
                if let EventKind::ContinuedAsNew { new_run_id: id, .. } = e {
                    *id = new_run_id.clone();
                }
            }
            RunClose::ContinuedAsNew(NewRun {
                workflow_id: run.workflow_id.clone(),
                run_id: new_run_id,
                workflow_type: run.workflow_type.clone(),
                input,
                random_seed: crate::data::ids::rand_seed(),
                continued_from: Some(run.run_id.clone()),
                parent: instance.parent(),
                task_queue: run.task_queue.clone(),
                // The store carries the previous run's memo and limits over.
                memo: Default::default(),
                limits: None,
            })
        }
    }
}

/// What one command event asks of the store, added to `commit`.
fn command_effects(commit: &mut TaskCommit, run: &RunRecord, e: &mut EventKind) {
    match e {
        EventKind::ActivityScheduled {
            seq,
            name,
            input,
            options,
        } => commit.new_activities.push(NewActivityTask {
            seq: *seq,
            name: name.clone(),
            input: input.clone(),
            options: options.clone(),
        }),
        EventKind::TimerStarted { seq, fire_at_ms } => commit.new_timers.push(NewTimer {
            seq: *seq,
            fire_at_ms: *fire_at_ms,
        }),
        EventKind::TimerCancelled { seq } => commit.cancel_timers.push(*seq),
        EventKind::ActivityCancelled { seq } => commit.cancel_activities.push(*seq),
        EventKind::ChildWorkflowStarted {
            seq,
            workflow_id,
            workflow_type,
            run_id,
            input,
            task_queue,
            ..
        } => {
            // The workflow code chose it (deterministically: its handle shows it); older code
            // left it empty.
            if run_id.is_empty() {
                *run_id = crate::data::ids::new_id();
            }
            let child_run_id = run_id.clone();
            commit.start_children.push(NewChild {
                seq: *seq,
                run: NewRun {
                    workflow_id: workflow_id.clone(),
                    run_id: child_run_id,
                    workflow_type: workflow_type.clone(),
                    input: input.clone(),
                    random_seed: crate::data::ids::rand_seed(),
                    continued_from: None,
                    parent: Some(ParentInfo {
                        workflow_id: run.workflow_id.clone(),
                        run_id: run.run_id.clone(),
                        seq: *seq,
                    }),
                    task_queue: task_queue.clone().unwrap_or_else(|| run.task_queue.clone()),
                    memo: Default::default(),
                    limits: None,
                },
            });
        }
        EventKind::ChildCancelRequested { workflow_id, .. } => {
            commit.deliver.push(OutgoingMessage {
                workflow_id: workflow_id.clone(),
                chain_id: None,
                message: Message::CancelRequested {
                    reason: format!("its parent run {} was cancelled", run.run_id),
                },
            })
        }
        EventKind::ExternalSignalSent {
            seq,
            workflow_id,
            name,
            args,
            run_id: chain,
        } => commit.deliver.push(OutgoingMessage {
            workflow_id: workflow_id.clone(),
            chain_id: chain.clone(),
            message: Message::Signal {
                name: name.clone(),
                args: args.clone(),
                // Idempotent if this commit is ever retried.
                signal_id: Some(format!("{}/{seq}", run.run_id)),
                sent_at: Some(commit.now_ms),
            },
        }),
        _ => {}
    }
}

/// Activities this process runs are leased in the same commit and started right after it,
/// without a poll (when every one is registered here, sent to no task queue or to one this
/// engine serves, and has a free slot). Under a flow limit, only those the limits admit, and
/// none while attempts wait in the store (see `store/rules/flow.rs`, `admit_new`), so that a
/// new attempt never takes a shared slot ahead of those waiting for it.
///
/// Such an attempt skips the store's queue, so its priority and fairness key order nothing
/// (and it is left out of its key's turns, see `store/rules/fairness.rs`): it takes a slot
/// that is free on this engine at this moment, which a waiting attempt of a lower level could
/// have had only through this engine's next poll.
fn lease_locally(
    core: &Arc<Core>,
    run: &RunRecord,
    commit: &mut TaskCommit,
    now: i64,
) -> Vec<(ActivityTask, OwnedSemaphorePermit)> {
    let local = core.config.run_workers
        && !commit.new_activities.is_empty()
        && commit.new_activities.iter().all(|a| {
            core.catalog.activities.get(&a.name).is_some()
                && (a.options.task_queue.as_deref())
                    .is_none_or(|q| core.config.serves_activities_of(q))
        });
    if !local {
        return Vec::new();
    }
    let mut slots = Vec::with_capacity(commit.new_activities.len());
    for _ in &commit.new_activities {
        match core.activities.permits.clone().try_acquire_owned() {
            Ok(p) => slots.push(p),
            Err(_) => return Vec::new(),
        }
    }
    commit.lease_activities_to = Some(core.worker_id.clone());
    // Under a flow limit, the store leases only what the limits admit (the rest waits for a
    // poll), and says which.
    commit.lease_admitted = core.flow.may_cover(&run.task_queue, &commit.new_activities);
    commit
        .new_activities
        .iter()
        .map(|a| {
            let (deadline, lease) = activity_lease(&a.options, now, now);
            ActivityTask {
                run_id: run.run_id.clone(),
                workflow_id: run.workflow_id.clone(),
                seq: a.seq,
                name: a.name.clone(),
                input: a.input.clone(),
                options: a.options.clone(),
                attempt: 1,
                scheduled_ms: now,
                started_ms: Some(now),
                attempt_deadline_ms: Some(deadline),
                lease_until_ms: Some(lease),
                heartbeat: None,
                last_failure: None,
                task_queue: a.options.queue_or(&run.task_queue).to_string(),
            }
        })
        .zip(slots)
        .collect()
}

/// Applies the parent close policy of each child still running when the parent closes.
pub(crate) fn apply_close_policies(
    run_id: &str,
    children: Vec<(String, ParentClosePolicy)>,
    commit: &mut TaskCommit,
) {
    for (workflow_id, policy) in children {
        let reason = format!("its parent run {run_id} closed");
        match policy {
            ParentClosePolicy::Terminate => commit.terminate.push(Termination {
                workflow_id,
                reason,
            }),
            ParentClosePolicy::RequestCancel => commit.deliver.push(OutgoingMessage {
                workflow_id,
                chain_id: None,
                message: Message::CancelRequested { reason },
            }),
            ParentClosePolicy::Abandon => {}
        }
    }
}

/// What a child's close tells its parent (nothing for a continue-as-new: the chain goes on).
fn child_outcome(close: &RunClose) -> Option<ChildOutcome> {
    match close {
        RunClose::Completed(p) => Some(ChildOutcome::Completed(p.clone())),
        RunClose::Failed(m) => Some(ChildOutcome::Failed(m.clone())),
        RunClose::Cancelled(m) => Some(ChildOutcome::Cancelled(m.clone())),
        RunClose::ContinuedAsNew(_) => None,
    }
}

/// Commits `plan` (with the start it completes, for a new run's first task) and acts on
/// the outcome: the run back in the cache and callers answered, or the work handed back to
/// the store path. True if the task's result was committed.
pub(super) async fn commit_task(
    w: &Worker,
    run: RunRecord,
    mut instance: Box<dyn Instance>,
    plan: Plan,
    direct_rejections: Vec<UpdateChange>,
    direct: Vec<Direct>,
    start: Option<(RunStart, StartReply)>,
) -> bool {
    let core = &w.core;
    let store = &core.store;
    let without_lease = plan.commit.without_lease;
    let Plan {
        mut commit,
        update_states,
        mut local,
        has_activities,
        has_timers,
        closes,
    } = plan;
    if start.is_some() && commit.lease_admitted {
        // A new run's first task answers no leases: its activities wait for a poll.
        commit.lease_activities_to = None;
        commit.lease_admitted = false;
        local.clear();
    }
    let planned = local.len();
    let mut start_reply = None;
    let marks_seen = core.worker.marks.finished();
    let cancelled_activities = commit.cancel_activities.clone();
    // Stream and event readers wait on the workflow id too (here and in other processes).
    let streamed = commit.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::StreamWritten { .. }
                | EventKind::StreamClosed { .. }
                | EventKind::EventSet { .. }
        )
    });
    // Most commits add to the feed of what runs do; one that adds nothing wakes no reader.
    let fed = commit.signal_waiting.is_some()
        || commit
            .events
            .iter()
            .any(|e| crate::data::feed::is_fact(&e.kind));
    let span = tracing::debug_span!("commit", events = commit.events.len(), closes);
    let committed = match start {
        None => await_commit(w, store.commit_workflow_task_leasing(commit))
            .instrument(span)
            .await
            .map(|done| {
                crate::runtime::flow::count(core, &done.flow);
                let before = local.len();
                local.retain(|(task, _)| done.leased.contains(&task.seq));
                if done.held_back || local.len() < before {
                    core.flow.note_held_back();
                }
                done.run
            }),
        Some((request, reply)) => match await_commit(w, store.start_run_with_task(request, commit))
            .instrument(span)
            .await
        {
            Ok(StartWithTask {
                start: outcome,
                first_task: Some(first),
            }) => {
                start_reply = Some((reply, outcome));
                first
            }
            // An existing run was kept (`UseExisting`): this task is moot.
            Ok(StartWithTask {
                start: outcome,
                first_task: None,
            }) => {
                let _ = reply.send(Ok(outcome));
                return false;
            }
            Err(e) => {
                let _ = reply.send(Err(e.into()));
                return false;
            }
        },
    };
    let record = match committed {
        Ok(record) => record,
        Err(e) => {
            if let Some((reply, outcome)) = start_reply {
                // The start stands; its first task runs again from the ready queue.
                core.worker.forget(&run.workflow_id);
                let _ = reply.send(Ok(outcome));
                core.wake.workflow.notify_one();
            }
            match e {
                // The run would have closed over messages it never saw: run the task
                // again from history with them.
                StoreError::NewMessages { .. } => core.wake.workflow.notify_one(),
                StoreError::Conflict { reason, .. } if reason == EAGER_LEASE_REFUSED => {
                    // A limit this engine had not read yet: read it, and run the task again
                    // (from the store) leasing nothing at once meanwhile.
                    tracing::debug!(run_id = %run.run_id, "a flow limit refused the activities leased at once; the task runs again");
                    core.flow.mark_stale();
                    let refresh = core.clone();
                    core.activities
                        .runtime
                        .spawn(async move { flow::refresh(&refresh).await });
                }
                StoreError::Conflict { reason, .. } => {
                    tracing::info!(run_id = %run.run_id, %reason, "workflow task result discarded: the run moved on")
                }
                e => {
                    tracing::error!(run_id = %run.run_id, error = %e, "committing a workflow task failed")
                }
            }
            drop(instance);
            task::left_cache(w, &run);
            // Callers of the messages handed over first: they learn at once whether the
            // store took them, while the release may wait for the store to recover.
            handoff::fallback(w, direct).await;
            task::release_if_leased(w, &run.run_id, without_lease).await;
            return false;
        }
    };
    instance.set_next_event_id(record.next_event_id);
    let running = record.status == RunStatus::Running;
    let marks = &core.worker.marks;
    let entered = if running {
        marks.entered(&run.workflow_id)
    } else {
        0
    };
    let live = Live {
        instance,
        record,
        entered,
    };
    let evicted = {
        let mut cache = w.cache.borrow_mut();
        let evicted = cache.put(run.run_id.clone(), live);
        core.metrics.cache_runs.set(cache.len() as i64);
        evicted
    };
    core.metrics.cache_evictions.add(evicted.len() as u64);
    for gone in &evicted {
        if gone.record.status == RunStatus::Running && gone.record.workflow_id != run.workflow_id {
            marks.left(&gone.record.workflow_id);
        }
    }
    let evicted_ids: Vec<&str> = evicted
        .iter()
        .map(|gone| gone.record.workflow_id.as_str())
        .collect();
    core.worker.committed(
        &run.workflow_id,
        &run.run_id,
        &run.workflow_type,
        running,
        &evicted_ids,
    );
    drop(evicted_ids);
    drop(evicted);
    if !running {
        // The close consumed every signal delivered before it was sent.
        marks.clear_if_settled(&run.workflow_id, marks_seen);
        marks.left(&run.workflow_id);
    }
    activity_worker::after_commit(core, &run.run_id, &cancelled_activities, !running);
    // Answer only now: a caller that acts on the answer finds the cache and the map of
    // runs in memory as this commit left them.
    for d in direct {
        if let Direct::Message { message, reply, .. } = d {
            match message {
                Message::Update { update_id, .. } => {
                    w.update_waiters
                        .borrow_mut()
                        .insert(update_id, (run.run_id.clone(), reply));
                }
                _ => {
                    let _ = reply.send(DirectReply::Recorded);
                }
            }
        }
    }
    handoff::answer_updates(w, &run.run_id, &direct_rejections, false);
    handoff::answer_updates(w, &run.run_id, &update_states, closes);
    if has_activities && local.len() < planned.max(1) {
        // Some wait in the store: the activity worker polls for them.
        core.wake.activity.notify_one();
    }
    if !local.is_empty() {
        if local
            .iter()
            .any(|(task, _)| activity_worker::has_timeouts(task))
        {
            core.wake.timer.notify_one();
        }
        for (task, slot) in local {
            let core = core.clone();
            w.core.activities.runtime.spawn(async move {
                activity_worker::run_attempt(&core, task).await;
                drop(slot);
                // A full flow limit's slot, freed: an attempt may wait for it.
                if core.flow.should_look_after_end() {
                    core.wake.activity.notify_local();
                }
            });
        }
    }
    if has_timers {
        core.wake.timer.notify_one();
    }
    if closes {
        core.wake.workflow.notify_one();
        core.wake.slot_freed();
    }
    core.wake.progress.publish_local(&run.workflow_id);
    if fed {
        core.wake.feed_changed();
    }
    // Clients waiting on the workflow id care for outcomes only: a close, an update's
    // state, a stream's new entries, a published event. Every other commit would wake them (and the peers') to
    // read the run again.
    if !running || !update_states.is_empty() || !direct_rejections.is_empty() || streamed {
        core.wake.waiters.publish(&run.workflow_id);
    }
    if let Some((reply, outcome)) = start_reply {
        let _ = reply.send(Ok(outcome));
    }
    true
}

/// Awaits a commit. The only commit in flight is polled without parking the thread (see
/// `spin::await_solo`); under load, commits overlap and are simply awaited.
async fn await_commit<T>(w: &Worker, commit: StoreFuture<'_, T>) -> Result<T, StoreError> {
    /// Counts the commit in flight until it is answered (or its task dropped).
    struct InFlight<'a>(&'a Cell<usize>);
    impl Drop for InFlight<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() - 1);
        }
    }
    let solo = w.committing.get() == 0 && w.core.config.poll_when_quiet;
    w.committing.set(w.committing.get() + 1);
    let _in_flight = InFlight(&w.committing);
    let started = Instant::now();
    let result = if solo {
        await_solo(commit, || w.committing.get() == 1).await
    } else {
        commit.await
    };
    let took = started.elapsed();
    w.core.metrics.task_commit_seconds.observe_duration(took);
    result
}
