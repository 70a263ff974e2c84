//! The in-memory store: every table is a map, all of them behind one mutex. The same rules as
//! every store (`store::rules`) over map primitives; nothing durable; for tests of the engine.
//!
//! A call runs its rule under the lock, so it is atomic and isolated. Every map records what
//! each change replaced (`undo.rs`): a rule that fails is rolled back, so a failed call leaves
//! the store as it was, as a SQL transaction would.
//!
//! Files: `tables.rs` holds the tables and what spans them (wake-ups, savepoints), one file per
//! table implements its primitives. May import: `crate::data`, `crate::error`, the store's
//! records and rules.

mod activities;
mod builds;
mod engines;
mod events;
mod feed;
mod flow;
mod inbox;
mod purge;
mod queues;
mod runs;
mod schedules;
mod search;
mod starts;
mod streams;
mod tables;
mod timers;
mod undo;
mod updates;

use super::backend::{run_ready, Answer, Backend, Durability, TxOp};
use super::StoreFuture;
use crate::error::StoreError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
pub use tables::MemoryTx;

/// A [`Store`](super::Store) that keeps everything in memory, for tests. Cheap to create;
/// state is lost on drop.
///
/// ```
/// use wf_core::store::{MemoryStore, Store};
/// let store = MemoryStore::new();
/// let _: &dyn Store = &store;
/// ```
#[derive(Default)]
pub struct MemoryStore {
    tables: Mutex<MemoryTx>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Runs `op` under the lock: kept if it succeeds, undone if it fails (or panics).
    fn run<T>(&self, op: impl TxOp<MemoryTx, T>) -> Result<T, StoreError> {
        let mut tables = self.tables.lock().map_err(|_| {
            StoreError::bug("memory store is poisoned: a panic interrupted a change")
        })?;
        // A panicking rule is undone like a failing one, so the store stays usable (the SQLite
        // store does the same with its savepoint).
        let result = catch_unwind(AssertUnwindSafe(|| run_ready(op(&mut tables))))
            .unwrap_or_else(|_| Err(StoreError::bug("a store rule panicked; it was undone")));
        match &result {
            Ok(_) => tables.keep(),
            Err(_) => tables.undo(),
        }
        result
    }
}

impl Backend for MemoryStore {
    type Tx = MemoryTx;

    fn write<T: Answer>(&self, _: Durability, op: impl TxOp<MemoryTx, T>) -> StoreFuture<'_, T> {
        Box::pin(std::future::ready(self.run(op)))
    }

    fn read<T: Answer>(&self, op: impl TxOp<MemoryTx, T>) -> StoreFuture<'_, T> {
        Box::pin(std::future::ready(self.run(op)))
    }
}
