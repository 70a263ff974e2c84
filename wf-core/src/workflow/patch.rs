//! Versioning with patches: `ctx.patched(id)` is true for code running after a change was
//! deployed and false when it replays a history recorded before it, so one function serves
//! both. New executions record a marker that replay looks for.

use super::commands::Commands;
use super::context::WorkflowContext;
use crate::data::history::EventKind;
use crate::data::payload::Payload;

/// The name of the marker `ctx.patched(id)` records.
pub(crate) fn patch_marker_name(id: &str) -> String {
    format!("patch:{id}")
}

/// Whether `kind` is a patch marker.
pub(crate) fn is_patch_marker(kind: &EventKind) -> bool {
    matches!(kind, EventKind::MarkerRecorded { name, .. } if name.starts_with("patch:"))
}

/// A patch marker written by `deprecate_patch` (value `true`): optional on replay.
pub(crate) fn is_deprecated_patch_marker(kind: &EventKind) -> bool {
    matches!(kind, EventKind::MarkerRecorded { name, value, .. }
        if name.starts_with("patch:") && value.decode::<bool>().unwrap_or(false))
}

impl Commands {
    /// `ctx.patched(id)`: true in new executions (recording a marker), and on replay exactly
    /// when the history recorded the marker at this point. Memoized per run.
    pub fn patched(&mut self, id: &str, deprecated: bool) -> bool {
        if let Some(&known) = self.patches.get(id) {
            return known;
        }
        let name = patch_marker_name(id);
        let decision = match &self.replay_patches {
            None => true,
            Some(markers) => {
                deprecated
                    || markers
                        .iter()
                        .any(|(i, n)| *i >= self.issued.len() && *n == name)
            }
        };
        if decision {
            let value = Payload::encode(&deprecated).expect("a bool always encodes");
            // Patch markers use seq 0 so that adding or removing one never shifts the
            // sequence numbers of the commands after it.
            self.issued.push(EventKind::MarkerRecorded {
                seq: 0,
                name,
                value,
            });
        }
        self.patches.insert(id.to_string(), decision);
        decision
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Versioning: `true` when this run executes code after the change `id` was deployed,
    /// `false` when it replays a history recorded before it. Guard a change with
    /// `if ctx.patched("id") { new } else { old }`; once no run on the old branch remains,
    /// replace the call with [`deprecate_patch`](Self::deprecate_patch), then remove it.
    pub fn patched(&self, id: &str) -> bool {
        self.core.borrow_mut().patched(id, false)
    }

    /// Marks the change `id` as the only branch left: records the marker for runs that still
    /// check `patched(id)` and accepts histories with or without it.
    pub fn deprecate_patch(&self, id: &str) {
        self.core.borrow_mut().patched(id, true);
    }
}
