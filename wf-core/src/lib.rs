//! wf-core: the engine of wf — history model, payload codec, stores, the deterministic
//! executor and replay machine, workers and the client.
//!
//! Users depend on `wf-sdk`, which re-exports what they need from here together with the
//! macros. This crate is usable on its own with hand-written [`WorkflowDefinition`]s.
//!
//! Layers, each importing only the ones before it:
//!
//! | module | what lives there |
//! |---|---|
//! | [`metrics`] | counters, gauges and histograms on atomics, their snapshot and Prometheus text (imports nothing; every layer records into it) |
//! | `data` | plain data: payloads, history events and their codec, messages, runs, updates, activity options, the limits on ids and names |
//! | [`error`] | the errors of every layer |
//! | [`activity`] | activity definitions, their invoker table and context |
//! | `workflow` | the workflow side: definition, context, one file per command kind, executor |
//! | `replay` | runs in memory, rebuilt from history; nondeterminism checks; the [`Replayer`] |
//! | [`store`] | the `Store` trait, its rules, the memory and SQLite stores |
//! | [`schedule`] | schedule specs and their stored state |
//! | [`batch`] | batches: an action on every run a filter selects, their requests, descriptions and stored state |
//! | [`client`] | the client and its typed handles, over a `Transport` |
//! | `runtime` | the engine, its workers, and the client calls it serves |
//! | `otel` | (feature `otel`) export spans with OpenTelemetry |
//! | [`wire`] | the narrow door to `data` for wf-http, wf-cli and wf-postgres: JSON views of payloads and events, MessagePack decoding, ids |

#![warn(missing_docs)]

pub mod activity;
pub mod batch;
pub mod client;
mod data;
pub mod error;
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
mod replay;
mod runtime;
pub mod schedule;
pub mod store;
pub mod wire;
mod workflow;

pub use activity::{
    type_id_of_val, ActivityContext, ActivityFn, ActivityGroup, ActivityInfo, ActivityInvoker,
    ActivityRegistry, ActivityStream, BoxFuture,
};
pub use batch::{BatchAction, BatchDescription, BatchRequest, BatchStatus};
pub use client::{
    ActivityResponse, Batches, Client, Debounce, Description, Paused, PendingActivity,
    PendingUpdate, PurgeReport, PurgeRequest, QueryCall, RepairAction, RepairReport, RepairRequest,
    RunInfo, ScheduleHandle, Schedules, SignalCall, SignalRequest, SignalStatus, StartOptions,
    StreamRead, StreamReader, Transport, UpdateCall, UpdateHandle, UpdateRequest, UpdateStage,
    WorkflowHandle, DEFAULT_UPDATE_TIMEOUT,
};
pub use data::activity::{
    ActivityFailure, ActivityOptions, LocalOutcome, RetryPolicy, TimeoutKind,
};
pub use data::blocked::{BlockKind, BlockedOn, BlockedPart, SourceLocation};
pub use data::export::{History, HistoryFormatError};
pub use data::feed::{
    FeedCursor, FeedDetail, FeedEvent, FeedFilter, FeedKind, FeedPage, FeedRead, MAX_FEED_PAGE,
};
pub use data::flow::{FlowKind, FlowLimit, FlowRule, FlowScope, FlowUsage};
pub use data::history::{EventKind, HistoryEvent};
pub use data::limits::{LimitError, MAX_ID_BYTES, MAX_NAME_BYTES, MAX_REASON_BYTES};
pub use data::payload::{Payload, PayloadError, MAX_PAYLOAD_BYTES};
pub use data::payload_codec::{CodecError, PayloadCodec};
pub use data::queue::{QueueUsage, WorkflowQueue};
pub use data::repair::{RepairKind, RepairOrigin, ResetPoint};
pub use data::run::{
    ChildOutcome, IdConflictPolicy, IdReusePolicy, ListFilter, ParentClosePolicy, ParentInfo,
    RunStatus, RunSummary, TaskFailure,
};
pub use data::run_limits::RunTimeout;
pub use data::search::{Memo, SearchAttributes, SearchValue};
pub use data::stream::{
    StreamEntry, StreamError, StreamInfo, StreamList, StreamPage, MAX_STREAM_ENTRIES,
    MAX_STREAM_ENTRY_BYTES,
};
pub use data::update::UpdateOutcome;
pub use data::versioning::{BuildIdStatus, VersioningBehavior};
pub use error::{
    ActivityCallError, ActivityError, Cancelled, ChildError, Rejection, SignalExternalError,
    SignalWaitError, StoreError, UpdateError, WaitKind, WaitTimeout, WfError, WorkflowError,
};
pub use replay::{Divergence, ReplayError, ReplayOutcome, Replayer};
pub use runtime::{Clock, Engine, EngineBuilder, StoreOpener, SystemClock, TestClock};
pub use schedule::{
    CalendarSpec, IntervalSpec, OverlapPolicy, ScheduleAction, ScheduleDescription,
    SchedulePolicies, ScheduleSpec, ScheduledAction, ACTION_ID_SUFFIX_BYTES,
};
pub use store::{MemoryStore, SqliteOptions, SqliteStore, Store};
pub use workflow::sync;
pub use workflow::{
    child_signal, encode_update_result, join_all, join_bounded, select, select_all, ActivityCall,
    AsyncUpdateFn, CancellationScope, ChildCall, ChildHandle, ChildResult, DynamicAsyncUpdateFn,
    DynamicHandlers, DynamicInfo, DynamicInput, DynamicQueryFn, DynamicSignal, DynamicSignalKind,
    DynamicUpdate, DynamicUpdateKind, DynamicValidator, Either, Handler, HandlerInfo, HandlerKind,
    InScope, JoinAll, LocalBoxFuture, Param, Role, Select, SelectAll, Signal, Sleep, StartChild,
    StreamWriter, SyncUpdateFn, TimedCondition, Unfinished, Validator, WaitCondition,
    WaitForSignal, WaitForSignalUntil, WorkflowContext, WorkflowDefinition, WorkflowType,
};
