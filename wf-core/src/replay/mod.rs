//! Replay: runs in memory and the rebuilding of a run from its history. The registry of
//! workflow types (handler tables, message checks), the run machine (what one workflow task
//! does), the rebuild of a run from recorded tasks, and the nondeterminism comparison.
//!
//! May import: `data`, `error`, `workflow`. Knows neither the store nor the runtime.

mod compare;
mod dynamic;
mod machine;
mod rebuild;
mod registry;
mod replayer;

pub(crate) use machine::{panic_message, Instance, TaskError, TaskMeta, TaskOutput};
pub(crate) use rebuild::replay;
pub(crate) use registry::{Definition, ErasedDefinition};
pub use replayer::{Divergence, ReplayError, ReplayOutcome, Replayer};
