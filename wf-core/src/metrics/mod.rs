//! Metrics: counters, gauges and fixed-bucket histograms on atomics (recording takes no lock
//! and allocates nothing), the engine's instruments and the store's, and their
//! [`MetricsSnapshot`] with its Prometheus text rendering (what wf-http's `GET /metrics`
//! serves; [`Engine::metrics`](crate::Engine::metrics) gives it without HTTP).
//!
//! - `instruments.rs`: counter, gauge, histogram and their bucket bounds.
//! - `engine.rs`: the engine's instruments, per workflow type and per activity.
//! - `flow.rs`: the engine's counters per flow limit and per queue of workflow starts.
//! - `store.rs`: [`StoreMetrics`], what a store records about its write transactions.
//! - `snapshot.rs`: [`MetricsSnapshot`] and the text exposition format.
//!
//! May import nothing else of the crate: every layer records into it (the SQLite writer in
//! `store`, the workers in `runtime`).

mod engine;
mod flow;
mod instruments;
mod snapshot;
mod store;

pub(crate) use engine::{
    AttemptFailure, EngineMetrics, Lookup, Resolution, TaskOutcome, UpdateStep,
};
pub use snapshot::{MetricFamily, MetricKind, MetricsSnapshot, Sample, SampleValue};
pub use store::StoreMetrics;
