//! The runtime: the engine and everything that runs in it — the workflow worker (its loop,
//! one task, its commit, the in-memory hand-offs), the activity worker, the time keeper, the
//! scheduler, the batcher, retention's purge, the engine's copy of the flow limits, the client calls this process serves, and every quiet-engine spin in one place.
//!
//! May import everything below it: `data`, `error`, `activity`, `workflow`, `replay`,
//! `store`, `schedule`, `client` (it implements the client's `Transport`).

mod activity_worker;
mod batcher;
mod cache;
mod catalog;
mod clock;
mod config;
mod core;
mod engine;
mod flow;
mod in_process;
mod liveness;
mod peers;
mod persist;
pub(crate) mod queues;
mod retention;
mod scheduler;
mod spin;
mod time_keeper;
mod wakeups;
mod worker;

pub use clock::{Clock, SystemClock, TestClock};
pub use engine::{Engine, EngineBuilder, StoreOpener};
