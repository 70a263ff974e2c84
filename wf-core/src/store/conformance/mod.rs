//! The store conformance suite (feature `conformance`): every property of the
//! [`Store`](crate::store::Store) contract, written once and run against every
//! implementation. A new store is done when it passes it.
//!
//! Each property is a public `async fn` in the module of its group, taking the store under
//! test, and panics (an assertion) where the store breaks the contract. A store's crate runs
//! them all with one macro call in its `tests/`, which makes one test per property:
//!
//! ```ignore
//! // wf-postgres/tests/conformance.rs
//! wf_core::store_conformance_tests!(wf_postgres::testing::database);
//! ```
//!
//! where the factory takes the property's name and returns a [`StoreUnderTest`], which opens
//! stores on a database of that property's own (see [`memory`] and [`sqlite_file`]).
//!
//! Files: `harness.rs` (the store under test, the runners, the macro), `fixtures.rs` (the
//! building blocks of properties), one file per group of properties. May import: the store
//! and `crate::data`; tokio for concurrent callers.

mod fixtures;
mod harness;

pub mod activities;
pub mod atomicity;
pub mod complete;
pub mod continue_as_new;
pub mod deliver_dedupe;
pub mod fairness;
pub mod feed;
pub mod flow;
pub mod large_payloads;
pub mod liveness;
pub mod persistence;
pub mod purge;
pub mod queue_usage;
pub mod queues;
pub mod repair;
pub mod run_limits;
pub mod search;
pub mod start;
pub mod start_delay;
pub mod start_requests;
pub mod terminate;
pub mod timers;
pub mod versioning;
pub mod workflow_tasks;

pub use fixtures::*;
pub use harness::{
    check, check_durable, memory, sqlite_file, MemoryUnderTest, OpenFuture, SqliteFile,
    StoreUnderTest,
};

#[cfg(test)]
mod tests {
    /// Every `pub async fn` of a group is a property the macro runs (a property left out of
    /// the list would silently never run).
    #[test]
    fn every_property_is_listed() {
        let listed = crate::__store_conformance_properties!(names());
        let groups = [
            ("activities", include_str!("activities.rs")),
            ("atomicity", include_str!("atomicity.rs")),
            ("complete", include_str!("complete.rs")),
            ("continue_as_new", include_str!("continue_as_new.rs")),
            ("deliver_dedupe", include_str!("deliver_dedupe.rs")),
            ("fairness", include_str!("fairness.rs")),
            ("feed", include_str!("feed.rs")),
            ("flow", include_str!("flow.rs")),
            ("large_payloads", include_str!("large_payloads.rs")),
            ("liveness", include_str!("liveness.rs")),
            ("persistence", include_str!("persistence.rs")),
            ("purge", include_str!("purge.rs")),
            ("repair", include_str!("repair.rs")),
            ("queue_usage", include_str!("queue_usage.rs")),
            ("queues", include_str!("queues.rs")),
            ("run_limits", include_str!("run_limits.rs")),
            ("search", include_str!("search.rs")),
            ("start", include_str!("start.rs")),
            ("start_delay", include_str!("start_delay.rs")),
            ("start_requests", include_str!("start_requests.rs")),
            ("terminate", include_str!("terminate.rs")),
            ("timers", include_str!("timers.rs")),
            ("versioning", include_str!("versioning.rs")),
            ("workflow_tasks", include_str!("workflow_tasks.rs")),
        ];
        let mut defined = Vec::new();
        for (group, source) in groups {
            for line in source.lines() {
                if let Some(rest) = line.strip_prefix("pub async fn ") {
                    let name = rest.split(['(', '<']).next().unwrap_or_default();
                    defined.push(format!("{group}::{name}"));
                }
            }
        }
        let mut listed: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
        listed.sort();
        defined.sort();
        assert_eq!(listed, defined);
    }
}
