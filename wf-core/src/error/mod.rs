//! The errors of every layer, converted at the boundaries: the store's ([`StoreError`]), the
//! client's ([`WfError`]), workflow code's ([`WorkflowError`] and the errors of its awaits),
//! update handlers' and validators' ([`UpdateError`], [`Rejection`]) and activities'
//! ([`ActivityError`], [`ActivityCallError`]).
//!
//! May import: `data`.

mod activity;
mod client;
mod store;
mod update;
mod workflow;

pub use activity::{ActivityCallError, ActivityError};
pub use client::WfError;
pub use store::{BackendError, BackendErrorKind, StoreError};
pub use update::{Rejection, UpdateError};
pub use workflow::{
    Cancelled, ChildError, SignalExternalError, SignalWaitError, WaitKind, WaitTimeout,
    WorkflowError,
};
