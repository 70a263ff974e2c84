//! Dynamic handlers: one catch-all signal, query and update handler per workflow type, which
//! receives the messages no named handler takes, with their wire name and raw arguments
//! (Temporal's dynamic handlers).
//!
//! `#[signal(dynamic)]`, `#[query(dynamic)]`, `#[update(dynamic)]` and `#[validator(dynamic)]`
//! generate a [`DynamicHandlers`] table; a named handler always wins over the dynamic one.
//! The arguments arrive as the encoded argument tuple the sender sent: a handler decodes them
//! with [`Payload::decode`], e.g. `args.decode::<(String, u32)>()`.

use super::context::WorkflowContext;
use super::definition::{LocalBoxFuture, Role, Unfinished};
use crate::data::payload::{Payload, PayloadError};
use crate::error::{Rejection, UpdateError};

/// The dynamic handlers of a workflow type (see
/// [`WorkflowDefinition::dynamic_handlers`](super::WorkflowDefinition::dynamic_handlers)).
pub struct DynamicHandlers<W> {
    /// `#[signal(dynamic)]`: takes every signal no `#[signal]` method takes.
    pub signal: Option<DynamicSignal<W>>,
    /// `#[query(dynamic)]`: answers every query no `#[query]` method answers.
    pub query: Option<DynamicQueryFn<W>>,
    /// `#[update(dynamic)]`: runs every update no `#[update]` method runs.
    pub update: Option<DynamicUpdate<W>>,
}

impl<W> Default for DynamicHandlers<W> {
    fn default() -> Self {
        DynamicHandlers {
            signal: None,
            query: None,
            update: None,
        }
    }
}

impl<W> DynamicHandlers<W> {
    /// Whether a dynamic handler plays `role`.
    pub fn has(&self, role: Role) -> bool {
        match role {
            Role::Signal => self.signal.is_some(),
            Role::Query => self.query.is_some(),
            Role::Update => self.update.is_some(),
        }
    }
}

/// The dynamic signal handler.
pub struct DynamicSignal<W> {
    /// The handler itself.
    pub kind: DynamicSignalKind<W>,
    /// Policy when the run finishes while an async handler still runs.
    pub unfinished: Unfinished,
}

/// The dynamic signal handler forms, as the engine calls them: the signal's name, then its
/// encoded argument tuple.
pub enum DynamicSignalKind<W> {
    /// `#[signal(dynamic)] fn x(&mut self, name: String, args: Payload)`.
    Sync(fn(&mut W, String, Payload)),
    /// `#[signal(dynamic)] async fn x(ctx, name: String, args: Payload)`.
    Async(fn(WorkflowContext<W>, String, Payload) -> LocalBoxFuture<()>),
}

/// `#[query(dynamic)] fn x(&self, name: String, args: Payload) -> T`, its value encoded.
pub type DynamicQueryFn<W> = fn(&W, String, Payload) -> Result<Payload, PayloadError>;

/// The dynamic update handler, with its validator.
pub struct DynamicUpdate<W> {
    /// The handler itself.
    pub kind: DynamicUpdateKind<W>,
    /// `#[validator(dynamic)]`, if any.
    pub validator: Option<DynamicValidator<W>>,
    /// Policy when the run finishes while an async handler still runs.
    pub unfinished: Unfinished,
}

/// The dynamic update handler forms, as the engine calls them.
pub enum DynamicUpdateKind<W> {
    /// `#[update(dynamic)] fn x(&mut self, name: String, args: Payload) -> Result<T, UpdateError>`.
    Sync(fn(&mut W, String, Payload) -> Result<Payload, UpdateError>),
    /// `#[update(dynamic)] async fn x(ctx, name: String, args: Payload) -> Result<T, UpdateError>`.
    Async(DynamicAsyncUpdateFn<W>),
}

/// Starts the async dynamic update handler: `(ctx, name, args)` to its future.
pub type DynamicAsyncUpdateFn<W> =
    fn(WorkflowContext<W>, String, Payload) -> LocalBoxFuture<Result<Payload, UpdateError>>;

/// `#[validator(dynamic)] fn x(&self, name: &str, args: &Payload) -> Result<(), Rejection>`.
pub type DynamicValidator<W> = fn(&W, &str, &Payload) -> Result<(), Rejection>;
