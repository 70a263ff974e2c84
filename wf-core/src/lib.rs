//! wf-core: the engine of wf — history model, payload codec, stores, the deterministic
//! executor and replay machine, workers and the client.
//!
//! Users depend on `wf-sdk`, which re-exports what they need from here together with the
//! macros. This crate is usable on its own with hand-written [`WorkflowDefinition`]s.

#![warn(missing_docs)]

mod activity_worker;
mod cache;
mod commands;
mod executor;
mod timer;
mod worker;

pub mod activity;
pub mod client;
pub mod clock;
pub mod context;
pub mod definition;
pub mod engine;
pub mod error;
pub mod history;
pub mod machine;
pub mod payload;
pub mod schedule;
pub mod store;
pub mod sync;

pub use activity::{
    type_id_of_val, ActivityCallError, ActivityContext, ActivityError, ActivityFn, ActivityGroup,
    ActivityInfo, ActivityInvoker, ActivityRegistry, BoxFuture,
};
pub use client::{
    Client, Description, PendingActivity, PendingUpdate, QueryCall, RunInfo, SignalCall,
    StartOptions, UpdateCall, UpdateHandle, UpdateStage, WorkflowHandle,
};
pub use clock::{Clock, SystemClock, TestClock};
pub use context::{
    ActivityCall, Cancelled, ChildCall, ChildError, SignalWaitError, Sleep, TimedCondition,
    WaitCondition, WaitForSignal, WaitForSignalUntil, WaitTimeout, WorkflowContext,
};
pub use definition::{
    encode_update_result, Handler, HandlerKind, LocalBoxFuture, Unfinished, Validator,
    WorkflowDefinition,
};
pub use engine::{Engine, EngineBuilder};
pub use error::{Rejection, UpdateError, WfError, WorkflowError};
pub use history::{
    ActivityFailure, ActivityOptions, ChildOutcome, EventKind, HistoryEvent, ParentClosePolicy,
    ParentInfo, RetryPolicy, TimeoutKind, UpdateOutcome,
};
pub use machine::RunSummary;
pub use payload::{Payload, PayloadError, MAX_PAYLOAD_BYTES};
pub use schedule::{
    CalendarSpec, IntervalSpec, OverlapPolicy, ScheduleAction, ScheduleDescription, ScheduleHandle,
    SchedulePolicies, ScheduleSpec, ScheduledAction, Schedules,
};
pub use store::{
    IdConflictPolicy, ListFilter, MemoryStore, RunStatus, SqliteOptions, SqliteStore, Store,
    TaskFailure,
};

/// Compile-time check used by `#[workflow]`: `T` can cross the wire.
pub fn assert_wire<T: serde::Serialize + serde::de::DeserializeOwned>() {}

/// A new run or update id: a UUID v7, whose leading bits are the creation time. Ids made one
/// after another sort one after another, so a store's indexes keyed by them (a run's history,
/// its row, update records) grow at one end instead of touching a random page per new run,
/// and runs started together share pages when their next events are written together.
pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
