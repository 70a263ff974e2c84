//! Rebuilding a run from its history: the recorded workflow tasks are run again through the
//! same code, and every task's commands are checked against the recorded ones.

use super::compare::{compare_commands, Mismatch};
use super::erased::ErasedDefinition;
use super::machine::{Instance, TaskError, TaskMeta};
use crate::data::history::{EventKind, HistoryEvent};

/// Why a rebuild failed, as the `Replayer` reports it.
#[derive(Debug)]
pub(crate) enum RebuildError {
    /// A task failed (a panic, a resolution the code does not expect, bad input); with the
    /// `WorkflowTaskCompleted` event that ends the task, when it got that far.
    Task(TaskError, Option<u64>),
    /// The code issued other commands than the history records.
    Commands(Mismatch),
}

impl From<RebuildError> for TaskError {
    fn from(e: RebuildError) -> Self {
        match e {
            RebuildError::Task(e, _) => e,
            RebuildError::Commands(m) => m.into(),
        }
    }
}

/// Rebuilds a run from its history. Fails with `NonDeterminism` when the code issues other
/// commands than the history records.
pub(crate) fn replay(
    def: &dyn ErasedDefinition,
    workflow_id: &str,
    run_id: &str,
    history: &[HistoryEvent],
) -> Result<Box<dyn Instance>, TaskError> {
    rebuild(def, workflow_id, run_id, history).map_err(TaskError::from)
}

/// [`replay`], with a structured error.
pub(crate) fn rebuild(
    def: &dyn ErasedDefinition,
    workflow_id: &str,
    run_id: &str,
    history: &[HistoryEvent],
) -> Result<Box<dyn Instance>, RebuildError> {
    let Some(first) = history.first() else {
        return Err(RebuildError::Task(
            TaskError::Other(format!("run {run_id} has an empty history")),
            None,
        ));
    };
    let mut instance = def
        .new_instance(workflow_id, run_id, first)
        .map_err(|e| RebuildError::Task(e, None))?;
    let mut group_start = 1;
    for (i, event) in history.iter().enumerate().skip(1) {
        let EventKind::WorkflowTaskCompleted {
            task_time_ms,
            suggest_continue_as_new,
            ref build_id,
        } = event.kind
        else {
            continue;
        };
        let group = &history[group_start..i];
        group_start = i + 1;
        let split = group
            .iter()
            .position(|e| !e.kind.is_input())
            .unwrap_or(group.len());
        let (inputs, recorded) = group.split_at(split);
        if let Some(stray) = recorded.iter().find(|e| e.kind.is_input()) {
            return Err(RebuildError::Task(TaskError::Other(format!(
                "run {run_id}: history event {} ({}) follows a command inside one workflow task; the history is corrupt",
                stray.event_id,
                stray.kind.name()
            )), Some(event.event_id)));
        }
        instance.set_next_event_id(group.first().map(|e| e.event_id).unwrap_or(event.event_id));
        let meta = TaskMeta {
            time_ms: task_time_ms,
            suggest_continue_as_new,
            build_id: build_id.clone(),
        };
        let output = instance
            .replay_task(inputs, meta, recorded)
            .map_err(|e| match e {
                TaskError::NonDeterminism(m) => {
                    TaskError::NonDeterminism(format!("run {run_id}: {m}"))
                }
                other => other,
            })
            .map_err(|e| RebuildError::Task(e, Some(event.event_id)))?;
        // On replay a task returns only the commands the code issued.
        compare_commands(run_id, recorded, &output.events, event.event_id)
            .map_err(RebuildError::Commands)?;
        instance.set_next_event_id(event.event_id + 1);
    }
    Ok(instance)
}

/// Rebuilds a run as it was at history event `at_event` (for `Client::query_at`): every
/// workflow task that ends at or before it is replayed; if `at_event` falls inside a task (its
/// inputs, commands, or its `WorkflowTaskCompleted`), that task runs too, with its inputs up to
/// `at_event`, and its commands are not compared (the state is what is asked for). `history` is
/// the run's whole history; `at_event` is between 1 and its last event id (the caller checks).
pub(crate) fn replay_to(
    def: &dyn ErasedDefinition,
    workflow_id: &str,
    run_id: &str,
    history: &[HistoryEvent],
    at_event: u64,
    live: TaskMeta,
) -> Result<Box<dyn Instance>, TaskError> {
    let cut = history
        .iter()
        .rposition(|e| e.event_id <= at_event)
        .unwrap_or(0);
    let is_end = |e: &HistoryEvent| matches!(e.kind, EventKind::WorkflowTaskCompleted { .. });
    // The last task that ends at or before `at_event`.
    let done = history[..=cut].iter().rposition(is_end).unwrap_or(0);
    let mut instance = replay(def, workflow_id, run_id, &history[..=done])?;
    if done == cut && done > 0 {
        return Ok(instance);
    }
    let rest = &history[done + 1..];
    let (group, meta) = match rest.iter().position(is_end) {
        Some(end) => match &rest[end].kind {
            EventKind::WorkflowTaskCompleted {
                task_time_ms,
                suggest_continue_as_new,
                build_id,
            } => (
                &rest[..end],
                TaskMeta {
                    time_ms: *task_time_ms,
                    suggest_continue_as_new: *suggest_continue_as_new,
                    build_id: build_id.clone(),
                },
            ),
            _ => unreachable!("is_end matched a WorkflowTaskCompleted"),
        },
        None => (rest, live),
    };
    let split = group
        .iter()
        .position(|e| !e.kind.is_input())
        .unwrap_or(group.len());
    let (inputs, recorded) = group.split_at(split);
    let inputs: Vec<HistoryEvent> = inputs
        .iter()
        .filter(|e| e.event_id <= at_event)
        .cloned()
        .collect();
    if let Some(first) = group.first() {
        instance.set_next_event_id(first.event_id);
    }
    instance.replay_task(&inputs, meta, recorded)?;
    Ok(instance)
}
