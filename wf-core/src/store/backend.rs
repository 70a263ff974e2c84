//! A store is a [`Backend`] — transactions over its tables — and the rules: every store that
//! implements [`Backend`] is a [`Store`], through the one impl here, which runs each
//! [`Operation`]'s rule (or primitive) in one transaction ([`Operation::run_on`]).

use super::operation::{Operation, Outcome};
use super::rules::tx::Tx;
use super::{Store, StoreFuture};
use crate::error::StoreError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A rule running in a transaction: the future an operation passed to [`Backend::write`] or
/// [`Backend::read`] returns for the transaction it is given.
pub type TxFuture<'t, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 't>>;

/// Whether a write must reach the disk before its caller is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Durable before the caller is answered (an fsync, for a file).
    Durable,
    /// Survives a process crash; an OS crash or power loss may lose it, which only reverts to
    /// a state the engine redoes (leases, heartbeats, retry bookkeeping, internal steps).
    /// A backend makes a soft write durable no later than the next durable write that
    /// follows it (as a write-ahead log does), which the rules rely on: an update's delivery
    /// is soft because its caller is answered only after a durable commit.
    Soft,
}

/// An operation a store call runs in one transaction: a rule with its arguments, given the
/// transaction. Any closure of that shape is one.
///
/// It is `Clone` (its arguments are) so that a store may run it again after a transient
/// failure rolled its transaction back: a PostgreSQL deadlock or serialization failure, or a
/// connection lost before the commit was sent. A store that never needs to never clones it.
///
/// Why a closure returning a boxed future rather than an `AsyncFnOnce(&mut Tx)`: a backend
/// whose transaction is asynchronous (PostgreSQL) awaits the rule inside the `Send` future that
/// every [`Store`] method returns, so the rule's future must be `Send`, and stable Rust cannot
/// require that of an async closure's future (its type cannot be named in a bound). The box is
/// one small allocation per call, beside the request's own.
pub trait TxOp<X, T>:
    for<'t> FnOnce(&'t mut X) -> TxFuture<'t, T> + Clone + Send + 'static
{
}

impl<X, T, F> TxOp<X, T> for F where
    F: for<'t> FnOnce(&'t mut X) -> TxFuture<'t, T> + Clone + Send + 'static
{
}

/// What a store call answers: a value that can be sent to the caller's thread.
pub trait Answer: Send + 'static {}

impl<T: Send + 'static> Answer for T {}

/// What a store must provide for the generic [`Store`] impl: transactions over its tables.
///
/// `write` runs `op` in a transaction that commits if `op` succeeds and is rolled back if it
/// fails (a failed call leaves the store as it was); `read` runs it on a consistent snapshot.
/// A call is queued or done when the method is called, not when its future is first polled:
/// dropping the future does not withdraw it.
///
/// A store whose transactions are asynchronous (PostgreSQL) opens one and awaits
/// `op(&mut tx)` inside the future it returns; a store whose primitives never wait (SQLite on
/// its writer thread, memory under its lock) runs `op` to its end with one poll.
///
/// ```
/// use wf_core::store::{Backend, MemoryStore, SqliteStore};
/// fn is_backend<B: Backend>() {}
/// is_backend::<MemoryStore>();
/// is_backend::<SqliteStore>();
/// ```
pub trait Backend: Send + Sync + 'static {
    /// One transaction on the tables.
    type Tx: Tx;

    /// Runs `op` in a write transaction, answered once it is committed (and, if `how` says so,
    /// durable).
    fn write<T: Answer>(&self, how: Durability, op: impl TxOp<Self::Tx, T>) -> StoreFuture<'_, T>;

    /// [`write`](Backend::write) for an `op` whose first read is the latest run of
    /// `workflow_id` (a start, a message to a workflow id): a backend whose reads cost a round
    /// trip may read it together with those of the writes it commits with. The default is
    /// `write`.
    fn write_for<T: Answer>(
        &self,
        how: Durability,
        workflow_id: &str,
        op: impl TxOp<Self::Tx, T>,
    ) -> StoreFuture<'_, T> {
        let _ = workflow_id;
        self.write(how, op)
    }

    /// Runs `op` in a read transaction (it must not write).
    fn read<T: Answer>(&self, op: impl TxOp<Self::Tx, T>) -> StoreFuture<'_, T>;

    /// Makes the store's files whole before its last handle goes (see [`Store::close`]); the
    /// default has nothing to do.
    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    /// See [`Store::changes`]; the default is `None`.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// See [`Store::takes_assumed_rows`]; the default is `false`.
    fn takes_assumed_rows(&self) -> bool {
        false
    }

    /// See [`Store::metrics`]; the default is `None`.
    fn metrics(&self) -> Option<std::sync::Arc<crate::metrics::StoreMetrics>> {
        None
    }
}

/// Runs a rule whose primitives never wait (SQLite, memory) to its end: it is ready on its
/// first poll. One that is not is a bug of the store, reported as such rather than a panic.
pub(crate) fn run_ready<T>(rule: TxFuture<'_, T>) -> Result<T, StoreError> {
    let mut rule = rule;
    match rule.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(StoreError::bug(
            "a store rule waited on a primitive of a store whose primitives never wait",
        )),
    }
}

impl<B: Backend> Store for B {
    fn execute(&self, op: Operation) -> StoreFuture<'_, Outcome> {
        op.run_on(self)
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Backend::changes(self)
    }

    fn metrics(&self) -> Option<std::sync::Arc<crate::metrics::StoreMetrics>> {
        Backend::metrics(self)
    }

    fn takes_assumed_rows(&self) -> bool {
        Backend::takes_assumed_rows(self)
    }
}
