//! Nondeterminism: the commands the code issues on replay, compared with the ones the history
//! recorded. A mismatch names both sides and the event, and says how to fix it.

use super::machine::TaskError;
use crate::data::history::{EventKind, HistoryEvent};
use crate::workflow::patch::{is_deprecated_patch_marker, is_patch_marker};

/// Whether the code's command `actual` is the recorded command `recorded`.
fn same_command(recorded: &EventKind, actual: &EventKind) -> bool {
    use EventKind::*;
    match (recorded, actual) {
        (
            ActivityScheduled {
                seq: a, name: n, ..
            },
            ActivityScheduled {
                seq: b, name: m, ..
            },
        ) => a == b && n == m,
        (TimerStarted { seq: a, .. }, TimerStarted { seq: b, .. }) => a == b,
        (TimerCancelled { seq: a }, TimerCancelled { seq: b }) => a == b,
        (
            MarkerRecorded {
                seq: a, name: n, ..
            },
            MarkerRecorded {
                seq: b, name: m, ..
            },
        ) => a == b && n == m,
        (UpdateCompleted { update_id: a, .. }, UpdateCompleted { update_id: b, .. }) => a == b,
        (
            ChildWorkflowStarted {
                seq: a,
                workflow_id: n,
                ..
            },
            ChildWorkflowStarted {
                seq: b,
                workflow_id: m,
                ..
            },
        ) => a == b && n == m,
        (
            ExternalSignalSent {
                seq: a,
                workflow_id: n,
                name: x,
                ..
            },
            ExternalSignalSent {
                seq: b,
                workflow_id: m,
                name: y,
                ..
            },
        ) => a == b && n == m && x == y,
        (ActivityCancelled { seq: a }, ActivityCancelled { seq: b }) => a == b,
        (
            ChildCancelRequested {
                seq: a,
                workflow_id: n,
            },
            ChildCancelRequested {
                seq: b,
                workflow_id: m,
            },
        ) => a == b && n == m,
        (
            SearchAttributesUpserted { attributes: a },
            SearchAttributesUpserted { attributes: b },
        ) => a.keys().eq(b.keys()),
        // The value is the code's to change (a model's output differs between runs); the
        // stream written to is the command.
        (StreamWritten { stream: a, .. }, StreamWritten { stream: b, .. })
        | (StreamClosed { stream: a }, StreamClosed { stream: b })
        | (EventSet { key: a, .. }, EventSet { key: b, .. }) => a == b,
        (WorkflowCancelled { .. }, WorkflowCancelled { .. }) => true,
        (WorkflowCompleted { .. }, WorkflowCompleted { .. })
        | (WorkflowFailed { .. }, WorkflowFailed { .. })
        | (ContinuedAsNew { .. }, ContinuedAsNew { .. }) => true,
        _ => false,
    }
}

fn describe_command(kind: &EventKind) -> String {
    format!("{} {}", kind.name(), kind.details())
}

/// Where replayed code departs from its history: the recorded command and the one the code
/// issues now (either may be missing), at which event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub run_id: String,
    /// The recorded event the code disagrees with; with no recorded command, the
    /// `WorkflowTaskCompleted` event that ends the task.
    pub event_id: u64,
    /// The recorded command (`name details`), if the history has one there.
    pub recorded: Option<String>,
    /// The command the code issues now, if any.
    pub issued: Option<String>,
}

impl Mismatch {
    /// The one-line message of a workflow task failure.
    pub fn message(&self) -> String {
        let run_id = &self.run_id;
        let event_id = self.event_id;
        match (&self.recorded, &self.issued) {
            (Some(rec), Some(act)) => format!(
                "run {run_id}: history event {event_id} is `{rec}` but the workflow code now issues `{act}`; \
                 deploy code that replays this history, or guard the change with ctx.patched(..)"
            ),
            (Some(rec), None) => format!(
                "run {run_id}: history event {event_id} is `{rec}` but the workflow code no longer issues it"
            ),
            (None, act) => format!(
                "run {run_id}: the workflow code issues `{}` where the history (before event \
                 {event_id}) records nothing",
                act.as_deref().unwrap_or("")
            ),
        }
    }
}

impl From<Mismatch> for TaskError {
    fn from(m: Mismatch) -> Self {
        TaskError::NonDeterminism(m.message())
    }
}

/// Checks the commands the code issued in one replayed task against the recorded ones.
/// Patch markers are matched leniently: a recorded patch marker the code no longer issues (a
/// removed `deprecate_patch`) is skipped, and so is a `deprecate_patch` marker missing from an
/// older history.
pub(crate) fn compare_commands(
    run_id: &str,
    recorded: &[HistoryEvent],
    actual: &[EventKind],
    marker_event_id: u64,
) -> Result<(), Mismatch> {
    let (mut r, mut a) = (0, 0);
    let mismatch = |event_id, rec: Option<&EventKind>, act: Option<&EventKind>| Mismatch {
        run_id: run_id.to_string(),
        event_id,
        recorded: rec.map(describe_command),
        issued: act.map(describe_command),
    };
    loop {
        match (recorded.get(r), actual.get(a)) {
            (None, None) => return Ok(()),
            (Some(rec), Some(act)) if same_command(&rec.kind, act) => {
                r += 1;
                a += 1;
            }
            (Some(rec), _) if is_patch_marker(&rec.kind) => r += 1,
            (_, Some(act)) if is_deprecated_patch_marker(act) => a += 1,
            // Histories recorded before cancellation reached children lack these requests.
            (_, Some(EventKind::ChildCancelRequested { .. })) => a += 1,
            (Some(rec), act) => return Err(mismatch(rec.event_id, Some(&rec.kind), act)),
            (None, Some(act)) => return Err(mismatch(marker_event_id, None, Some(act))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::history::HistoryEvent;

    #[test]
    fn histories_from_before_child_cancel_requests_still_replay() {
        let event = |event_id, kind| HistoryEvent {
            event_id,
            time_ms: 0,
            kind,
        };
        let request = EventKind::ChildCancelRequested {
            seq: 2,
            workflow_id: "child".into(),
        };
        let code = [EventKind::TimerCancelled { seq: 1 }, request.clone()];
        let old = [event(5, EventKind::TimerCancelled { seq: 1 })];
        assert!(compare_commands("r", &old, &code, 6).is_ok());
        let new = [
            event(5, EventKind::TimerCancelled { seq: 1 }),
            event(6, request),
        ];
        assert!(compare_commands("r", &new, &code, 7).is_ok());
        // Another child's request is still a mismatch.
        let other = EventKind::ChildCancelRequested {
            seq: 3,
            workflow_id: "other".into(),
        };
        let wrong = [
            event(5, EventKind::TimerCancelled { seq: 1 }),
            event(6, other),
        ];
        assert!(compare_commands("r", &wrong, &code, 7).is_err());
    }
}
