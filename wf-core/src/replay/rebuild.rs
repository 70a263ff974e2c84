//! Rebuilding a run from its history: the recorded workflow tasks are run again through the
//! same code, and every task's commands are checked against the recorded ones.

use super::compare::compare_commands;
use super::machine::{Instance, TaskError, TaskMeta};
use super::registry::ErasedDefinition;
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::message::Message;

/// Rebuilds a run from its history. Fails with `NonDeterminism` when the code issues other
/// commands than the history records.
pub(crate) fn replay(
    def: &dyn ErasedDefinition,
    workflow_id: &str,
    run_id: &str,
    history: &[HistoryEvent],
) -> Result<Box<dyn Instance>, TaskError> {
    let Some(first) = history.first() else {
        return Err(TaskError::Other(format!(
            "run {run_id} has an empty history"
        )));
    };
    let mut instance = def.new_instance(workflow_id, run_id, first)?;
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
        let messages: Vec<Message> = group[..split]
            .iter()
            .filter_map(|e| Message::from_event(&e.kind))
            .collect();
        let recorded = &group[split..];
        if let Some(stray) = recorded.iter().find(|e| e.kind.is_input()) {
            return Err(TaskError::Other(format!(
                "run {run_id}: history event {} ({}) follows a command inside one workflow task; the history is corrupt",
                stray.event_id,
                stray.kind.name()
            )));
        }
        instance.set_next_event_id(group.first().map(|e| e.event_id).unwrap_or(event.event_id));
        let meta = TaskMeta {
            time_ms: task_time_ms,
            suggest_continue_as_new,
            build_id: build_id.clone(),
        };
        let output = instance
            .run_task(messages, meta, Some(recorded))
            .map_err(|e| match e {
                TaskError::NonDeterminism(m) => {
                    TaskError::NonDeterminism(format!("run {run_id}: {m}"))
                }
                other => other,
            })?;
        // On replay a task returns only the commands the code issued.
        compare_commands(run_id, recorded, &output.events, event.event_id)?;
        instance.set_next_event_id(event.event_id + 1);
    }
    Ok(instance)
}
