//! The rules of the store contract, written once for every store: dedupe, id conflicts, lease
//! and commit checks, what a commit or a termination does to other runs, activity attempts
//! (and those held for asynchronous completion), timers, run limits (timeouts and retries),
//! flow limits on activity attempts, retention's purge, worker versioning's builds, an operator's repairs of one run, durable streams, the feed of what runs do. Each rule is an `async fn` generic over
//! [`Tx`], the table
//! primitives a store provides (one statement of SQL, or one map operation, each); the generic
//! [`Store`](crate::store::Store) impl runs each rule in one transaction of its
//! [`Backend`](crate::store::Backend).
//!
//! A rule decides; a primitive only reads or writes. A rule does its checks in the order that
//! reads the least, and a failing rule leaves nothing behind: its transaction is rolled back.
//!
//! May import: `crate::data`, `crate::error`, the store's records and this folder.

pub(crate) mod activities;
pub(crate) mod builds;
pub(crate) mod commit;
pub(crate) mod complete;
pub(crate) mod debounce;
pub(crate) mod deliver;
pub(crate) mod engines;
pub(crate) mod fairness;
pub(crate) mod feed;
pub(crate) mod feed_table;
pub(crate) mod flow;
pub(crate) mod flow_table;
pub(crate) mod leases;
pub(crate) mod pause;
pub(crate) mod purge;
pub(crate) mod queue_table;
pub(crate) mod queue_usage;
pub(crate) mod queues;
pub(crate) mod reads;
pub(crate) mod repair;
pub(crate) mod run_limits;
pub(crate) mod schedules;
pub(crate) mod search;
pub(crate) mod start;
pub(crate) mod stream_table;
pub(crate) mod streams;
pub(crate) mod task_query;
pub(crate) mod terminate;
pub(crate) mod timers;
pub(crate) mod tx;

use crate::data::payload::PayloadError;
use crate::error::{BackendErrorKind, StoreError};

/// A history event that does not encode: the caller's data is invalid, nothing is written.
pub(crate) fn encode_failed(e: PayloadError) -> StoreError {
    StoreError::backend(
        BackendErrorKind::Invalid,
        format!("could not encode a history event: {e}"),
    )
}
