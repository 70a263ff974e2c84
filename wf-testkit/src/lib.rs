//! The fixtures wf's own integration tests share, written once: engines and stores on the
//! three stores with the [`both!`] macro that runs a test body on each, scratch files,
//! waiting for an outcome, reading histories, child test processes, and the agent workflow the
//! HTTP and client tests drive, and the held call of the flow-limit and queue tests. Not published; each crate's tests take it as a dev-dependency
//! and keep what only they need in their own `tests/common/`.
//!
//! ```no_run
//! use wf_testkit::{both, builder, Backend};
//!
//! async fn a_run_completes(backend: Backend) {
//!     let engine = builder(backend, "a_run_completes").build().await.unwrap();
//!     # drop(engine);
//! }
//! both!(a_run_completes);
//! # fn main() {}
//! ```

pub mod agent;
pub mod gate;
pub mod held;
mod history;
mod places;
mod process;
mod scratch;
mod stores;
mod wait;

pub use history::{count, kinds};
pub use places::{engine_at, new_place, store_at};
pub use process::{spawn_reporting_test_child, spawn_test_child};
pub use scratch::{scratch_dir, temp_db, temp_path};
pub use stores::{builder, open_store, postgres_available, postgres_schema, shared_store, Backend};
pub use wait::{eventually, eventually_for, until_recorded};
