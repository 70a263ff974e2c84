//! Replay: runs in memory and the rebuilding of a run from its history. The registered
//! workflow types, type-erased (`erased.rs`: handler tables, message checks), the run machine (what one workflow task
//! does), the rebuild of a run from recorded tasks, and the nondeterminism comparison.
//!
//! May import: `data`, `error`, `workflow`. Knows neither the store nor the runtime.

mod compare;
mod dynamic;
mod erased;
mod machine;
mod rebuild;
mod replayer;

pub(crate) use erased::{Definition, ErasedDefinition};
pub(crate) use machine::{panic_message, Instance, TaskError, TaskMeta, TaskOutput};
pub(crate) use rebuild::{replay, replay_to};
pub use replayer::{Divergence, ReplayError, ReplayOutcome, Replayer};
