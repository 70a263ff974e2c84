//! The workflow side: what a workflow type is (its definition and handler table), the context
//! its code runs with, one file per command kind holding that command's whole lifecycle and
//! its future (activity, local activity, timer, child, external signal, signal wait, condition, patch,
//! cancellation, cancellation scopes, search attributes, streams), the deterministic executor,
//! deterministic synchronization, and deterministic combinators (join, select).
//!
//! Workflow code is `!Send` and runs on the engine's executor, never on tokio.
//!
//! May import: `data`, `error`, `activity` (the typing of `ctx.activity`). Knows neither the
//! store nor the runtime.

mod activity;
pub(crate) mod blocked;
mod cancel;
mod child;
mod child_handle;
mod combinators;
pub(crate) mod commands;
mod condition;
mod context;
pub mod definition;
mod dynamic;
mod dynamic_type;
pub(crate) mod executor;
mod external;
mod local_activity;
mod metadata;
pub(crate) mod patch;
mod rng;
mod scope;
mod search;
mod signal;
mod stream;
pub mod sync;
mod timer;

pub use activity::ActivityCall;
pub use child::ChildCall;
pub use child_handle::{child_signal, ChildHandle, ChildResult, StartChild};
pub use combinators::{
    join_all, join_bounded, select, select_all, Either, JoinAll, Select, SelectAll,
};
pub use condition::{TimedCondition, WaitCondition};
pub use context::WorkflowContext;
pub use definition::{
    encode_update_result, AsyncUpdateFn, Handler, HandlerKind, LocalBoxFuture, Param, Role,
    SyncUpdateFn, Unfinished, Validator, WorkflowDefinition,
};
pub use dynamic::{
    DynamicAsyncUpdateFn, DynamicHandlers, DynamicQueryFn, DynamicSignal, DynamicSignalKind,
    DynamicUpdate, DynamicUpdateKind, DynamicValidator,
};
pub use dynamic_type::DynamicInput;
pub(crate) use local_activity::LocalRequest;
pub use metadata::{DynamicInfo, HandlerInfo, WorkflowType};
pub use scope::{CancellationScope, InScope};
pub use signal::{Signal, WaitForSignal, WaitForSignalUntil};
pub use stream::StreamWriter;
pub use timer::Sleep;
