//! Worker versioning: how a run of a workflow type follows the builds of its task queue
//! ([`VersioningBehavior`]), and what an operator sees of each build ([`BuildIdStatus`]).

use serde::{Deserialize, Serialize};

/// How a run of a workflow type follows new builds of its code (set per type with
/// `EngineBuilder::versioning::<W>(..)`, or for every type with
/// `EngineBuilder::default_versioning`). It matters only to engines with a build id
/// (`EngineBuilder::build_id`): the runs of engines without one are unversioned, and any
/// engine takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersioningBehavior {
    /// A run stays on the build that ran its first workflow task (or, when the task queue has
    /// a current build, the build current when it started): only engines of that build take
    /// its workflow tasks, until it closes or an operator moves it
    /// (`Client::move_to_build`). New code never replays an old run.
    Pinned,
    /// A run moves to the current build of its task queue (`Client::set_current_build`) from
    /// its next workflow task on; while the queue has no current build, any engine takes it.
    /// The code must replay the histories older builds wrote (`ctx.patched`).
    #[default]
    AutoUpgrade,
}

impl VersioningBehavior {
    /// The name stores and the wire use: `"pinned"` or `"auto_upgrade"`.
    pub fn as_str(self) -> &'static str {
        match self {
            VersioningBehavior::Pinned => "pinned",
            VersioningBehavior::AutoUpgrade => "auto_upgrade",
        }
    }

    /// The behaviour named by [`as_str`](Self::as_str) (also `"auto-upgrade"`), if any.
    pub fn parse(s: &str) -> Option<VersioningBehavior> {
        match s {
            "pinned" => Some(VersioningBehavior::Pinned),
            "auto_upgrade" | "auto-upgrade" => Some(VersioningBehavior::AutoUpgrade),
            _ => None,
        }
    }
}

/// What stores record of a run that an engine without a build id ran first: no behaviour,
/// any engine takes it.
pub const UNVERSIONED: &str = "unversioned";

/// One build id of a store's running runs, for an operator draining an old build: how many
/// running runs are on it, by behaviour, and which task queues have it as their current build.
/// A build whose `pinned` and `not_started` counts are 0 runs nothing that needs it any more.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildIdStatus {
    /// The build id.
    pub build_id: String,
    /// The task queues whose current build it is (by name).
    pub current_for: Vec<String>,
    /// Running runs pinned to it.
    pub pinned: u64,
    /// Running auto-upgrade runs on it (they follow the current build of their queue).
    pub auto_upgrade: u64,
    /// Running runs routed to it (the current build when they started) that have not run a
    /// workflow task yet: the first engine of this build to run one fixes their behaviour.
    pub not_started: u64,
}

impl BuildIdStatus {
    /// Whether no running run needs this build: none is pinned to it or waits for its first
    /// task on it (auto-upgrade runs move on with the current build).
    pub fn drained(&self) -> bool {
        self.pinned == 0 && self.not_started == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviour_names_read_back() {
        for b in [VersioningBehavior::Pinned, VersioningBehavior::AutoUpgrade] {
            assert_eq!(VersioningBehavior::parse(b.as_str()), Some(b));
        }
        assert_eq!(VersioningBehavior::parse(UNVERSIONED), None);
    }
}
