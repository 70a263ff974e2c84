//! # wf — durable workflows for Rust
//!
//! A workflow is a plain struct whose `run` method and message handlers survive process death:
//! every step is an event in a durable history, and a fresh worker rebuilds the run by replaying
//! that history through the same code. It embeds in your process with one SQLite file.
//!
//! - **Signals** are asynchronous writes, recorded in history.
//! - **Queries** are reads; they never touch history.
//! - **Updates** are tracked writes with a validator and a result.
//!
//! ```
//! use wf_sdk::prelude::*;
//!
//! #[derive(Default)]
//! struct Counter { n: u32 }
//!
//! #[workflow]
//! impl Counter {
//!     #[run]
//!     async fn run(ctx: &mut WorkflowContext<Self>, target: u32) -> Result<u32, WorkflowError> {
//!         ctx.wait_condition(|s| s.n >= target).await;
//!         Ok(ctx.state(|s| s.n))
//!     }
//!     #[signal] fn bump(&mut self) { self.n += 1; }
//!     #[query] fn value(&self) -> u32 { self.n }
//! }
//!
//! # #[tokio::main] async fn main() -> Result<(), WfError> {
//! // `.sqlite("app.db")` instead of `.memory()` keeps the runs in a file.
//! let engine = Engine::builder().memory().workflow::<Counter>().build().await?;
//! let counter = engine.client().start::<Counter>("counter-1", 2).await?;
//! counter.bump().await?;
//! counter.bump().await?;
//! assert_eq!(counter.result().await?, 2);
//! assert_eq!(counter.value().await?, 2); // a finished run still answers queries
//! engine.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! See the README for the tour and `examples/` for runnable scenarios.

#![warn(missing_docs)]

// The API, item by item (no whole modules: what is not listed here is the engine's own).
pub use wf_core::{
    // Writing workflows.
    ActivityCall,
    // Errors.
    ActivityCallError,
    // Writing activities.
    ActivityContext,
    ActivityError,
    ActivityFailure,
    ActivityInfo,
    ActivityResponse,
    // Worker versioning.
    BuildIdStatus,
    // Schedules.
    CalendarSpec,
    CancellationScope,
    Cancelled,
    ChildCall,
    ChildError,
    ChildHandle,
    // Runs and their histories.
    ChildOutcome,
    ChildResult,
    // The engine and its client.
    Client,
    // Stores and time.
    Clock,
    CodecError,
    Description,
    Divergence,
    DynamicInfo,
    // A dynamic workflow type's input (`#[workflow(dynamic)]`).
    DynamicInput,
    Engine,
    EngineBuilder,
    EventKind,
    HandlerInfo,
    History,
    HistoryEvent,
    HistoryFormatError,
    IdConflictPolicy,
    IdReusePolicy,
    InScope,
    IntervalSpec,
    LimitError,
    ListFilter,
    LocalOutcome,
    Memo,
    MemoryStore,
    OverlapPolicy,
    Param,
    ParentClosePolicy,
    ParentInfo,
    // Payloads.
    Payload,
    PayloadCodec,
    PayloadError,
    PendingActivity,
    PendingUpdate,
    PurgeReport,
    PurgeRequest,
    QueryCall,
    Rejection,
    ReplayError,
    ReplayOutcome,
    Replayer,
    RetryPolicy,
    Role,
    RunInfo,
    RunStatus,
    RunTimeout,
    ScheduleAction,
    ScheduleDescription,
    ScheduleHandle,
    SchedulePolicies,
    ScheduleSpec,
    ScheduledAction,
    Schedules,
    SearchAttributes,
    SearchValue,
    Signal,
    SignalCall,
    SignalExternalError,
    SignalRequest,
    SignalStatus,
    SignalWaitError,
    Sleep,
    SqliteOptions,
    SqliteStore,
    StartChild,
    StartOptions,
    Store,
    SystemClock,
    TaskFailure,
    TestClock,
    TimedCondition,
    TimeoutKind,
    UpdateCall,
    UpdateError,
    UpdateHandle,
    UpdateOutcome,
    UpdateRequest,
    UpdateStage,
    VersioningBehavior,
    WaitCondition,
    WaitForSignal,
    WaitForSignalUntil,
    WaitKind,
    WaitTimeout,
    WfError,
    WorkflowContext,
    WorkflowDefinition,
    WorkflowError,
    WorkflowHandle,
    WorkflowType,
    ACTION_ID_SUFFIX_BYTES,
    DEFAULT_UPDATE_TIMEOUT,
    MAX_ID_BYTES,
    MAX_NAME_BYTES,
    MAX_PAYLOAD_BYTES,
    MAX_REASON_BYTES,
};
pub use wf_macros::{activities, activity, init, query, run, signal, update, validator, workflow};
// Deterministic concurrency in workflow code (in place of `futures::select!`, which picks at
// random and so does not replay).
pub use wf_core::{join_all, join_bounded, select, select_all, Either, JoinAll, Select, SelectAll};

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
pub use postgres::PostgresExt;
#[cfg(feature = "postgres")]
pub use wf_postgres::{PostgresOptions, PostgresStore};

/// Deterministic synchronization for workflow code: an async mutex and a queue.
pub mod sync {
    pub use wf_core::sync::{Lock, Mutex, MutexGuard, Queue, Recv};
}

/// Test support (the `fault-injection` feature): a store wrapper that injects I/O errors,
/// full disks, delays, and crashes at a chosen commit (see [`faults::FaultStore`]).
#[cfg(feature = "fault-injection")]
pub mod faults {
    pub use wf_core::store::faults::{Crash, Fault, FaultStore, Op, Target, CRASHES};
}

/// Metrics: what [`Engine::metrics`] returns, rendered for Prometheus by
/// [`MetricsSnapshot::to_prometheus_text`](metrics::MetricsSnapshot::to_prometheus_text)
/// (what wf-http's `GET /metrics` serves), and what a store records about its writes.
pub mod metrics {
    pub use wf_core::metrics::{
        MetricFamily, MetricKind, MetricsSnapshot, Sample, SampleValue, StoreMetrics,
    };
}

/// Exporting spans with OpenTelemetry over OTLP/HTTP (the `otel` feature): see
/// [`otel::Otel`].
#[cfg(feature = "otel")]
pub mod otel {
    pub use wf_core::otel::{Otel, OtelError};
}

/// What a store implementation needs (the `store` feature): the records a store keeps and
/// the requests it takes, its errors, and the conformance suite a new store must pass.
#[cfg(feature = "store")]
pub mod store {
    pub use wf_core::store::*;
}

/// Serving workflows over HTTP, and driving them from another process (the `http` feature):
/// see the wf-http crate. `Client::connect(url)` comes with the prelude.
#[cfg(feature = "http")]
pub mod http {
    pub use wf_http::{
        router, serve, Api, ClientTls, ConnectExt, Connecting, HttpTransport, ServeOptions, Server,
        TlsConfig, ANY_TYPE,
    };
}

/// Everything a workflow file needs: `use wf_sdk::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "postgres")]
    pub use crate::PostgresExt;
    pub use crate::{
        activities, activity, init, query, run, signal, update, validator, workflow,
        ActivityContext, ActivityError, Client, Engine, IdConflictPolicy, IdReusePolicy,
        ParentClosePolicy, Rejection, RetryPolicy, RunStatus, SearchValue, TestClock, UpdateError,
        VersioningBehavior, WfError, WorkflowContext, WorkflowError, WorkflowHandle,
    };
    pub use serde::{Deserialize, Serialize};
    #[cfg(feature = "http")]
    pub use wf_http::ConnectExt;
}

/// Items the macros' generated code refers to. Not a public API.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
