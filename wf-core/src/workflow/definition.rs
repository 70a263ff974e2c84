//! What a workflow type is to the engine: the trait `#[workflow]` implements, and the dispatch
//! table of its handlers.
//!
//! The macro generates one [`WorkflowDefinition`] impl per workflow type: its wire name, its
//! input and output types, the init and run entry points, and a dispatch table of handlers
//! keyed by wire name. The engine knows nothing else about user code.

use super::context::WorkflowContext;
use super::dynamic::DynamicHandlers;
use crate::data::payload::{Payload, PayloadError};
use crate::error::{Rejection, UpdateError, WorkflowError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;

/// A `!Send` boxed future: workflow code runs on the engine's single-threaded executor.
pub type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// A workflow type. Implemented by `#[workflow]`; may be written by hand.
pub trait WorkflowDefinition: Sized + 'static {
    /// Wire name of the workflow type (`#[workflow(name = "..")]`, default the type name).
    const NAME: &'static str;
    /// The input of `run` (and of `#[init]`).
    type Input: Serialize + DeserializeOwned + 'static;
    /// The value `run` returns on success.
    type Output: Serialize + DeserializeOwned + 'static;
    /// Whether this is a dynamic workflow type (`#[workflow(dynamic)]`): an engine runs it
    /// for every workflow type name no other registration has, and it receives the type name
    /// with the raw input (see [`DynamicInput`](super::DynamicInput)). False by default.
    const DYNAMIC: bool = false;

    /// Decodes a run's encoded start input for a run of type `workflow_type`. By default the
    /// payload decodes as [`Input`](Self::Input); a dynamic workflow type keeps it raw, with
    /// the name.
    fn decode_input(workflow_type: &str, input: &Payload) -> Result<Self::Input, PayloadError> {
        let _ = workflow_type;
        input.decode()
    }

    /// Encodes an input as a run of this type receives it (the inverse of
    /// [`decode_input`](Self::decode_input)), for `ctx.continue_as_new`.
    fn encode_input(input: &Self::Input) -> Result<Payload, PayloadError> {
        Payload::encode(input)
    }

    /// Builds the initial state from the input (`#[init]`, or `Default`).
    fn init_state(input: &Self::Input) -> Self;

    /// Starts the main method; the future owns `ctx`.
    fn start_run(
        ctx: WorkflowContext<Self>,
        input: Self::Input,
    ) -> LocalBoxFuture<Result<Self::Output, WorkflowError>>;

    /// The handlers, by wire name. Called once when the type is registered.
    fn handlers() -> Vec<Handler<Self>>;

    /// The catch-all handlers (`#[signal(dynamic)]`, `#[query(dynamic)]`,
    /// `#[update(dynamic)]`), which take the messages no handler of
    /// [`handlers`](Self::handlers) takes. None by default.
    fn dynamic_handlers() -> DynamicHandlers<Self> {
        DynamicHandlers::default()
    }

    /// The input type's name as written in the workflow's code (`#[workflow]` records it;
    /// by default the full Rust path), for tools that describe the type (`GET /{type}`).
    fn input_type_name() -> &'static str {
        std::any::type_name::<Self::Input>()
    }

    /// The result type's name as written in the workflow's code (see
    /// [`input_type_name`](Self::input_type_name)).
    fn output_type_name() -> &'static str {
        std::any::type_name::<Self::Output>()
    }

    /// Re-encodes an encoded result with struct fields by name (see
    /// [`Payload::encode_named`]), for readers without the Rust types.
    fn output_with_names(output: &Payload) -> Result<Payload, PayloadError> {
        Payload::encode_named(&output.decode::<Self::Output>()?)
    }
}

/// What the engine does when a run finishes while this handler is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unfinished {
    /// Log a warning naming the handler (the default).
    #[default]
    Warn,
    /// Say nothing (`unfinished = "abandon"`).
    Abandon,
}

/// One message handler of a workflow type.
pub struct Handler<W> {
    /// Wire name.
    pub name: &'static str,
    /// Checks that encoded arguments decode as the handler's argument tuple.
    pub check_args: fn(&Payload) -> Result<(), PayloadError>,
    /// The handler itself.
    pub kind: HandlerKind<W>,
    /// Policy when the run finishes while the handler runs.
    pub unfinished: Unfinished,
    /// The handler's parameters (after the context or receiver), in order, as written.
    pub params: &'static [Param],
    /// The type of the value a query or update returns, as written (`"()"` for signals).
    pub returns: &'static str,
}

/// One parameter of a handler, as written in the workflow's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name (`arg0`, `arg1`.. for a pattern that is not a plain name).
    pub name: &'static str,
    /// Its Rust type, as written (`String`, `Vec<Item>`).
    pub ty: &'static str,
}

/// The handler forms, as the engine calls them. Arguments arrive as an encoded tuple.
pub enum HandlerKind<W> {
    /// `#[signal] fn x(&mut self, ..)`: runs atomically when applied.
    SyncSignal(fn(&mut W, &Payload) -> Result<(), PayloadError>),
    /// `#[signal] async fn x(ctx, ..)`: runs as a task interleaved at `.await`.
    AsyncSignal(fn(WorkflowContext<W>, &Payload) -> Result<LocalBoxFuture<()>, PayloadError>),
    /// `#[query] fn x(&self, ..) -> T`.
    Query(fn(&W, &Payload) -> Result<Payload, PayloadError>),
    /// `#[update] fn x(&mut self, ..) -> Result<T, UpdateError>`, with its validator.
    SyncUpdate {
        /// The handler; the outer error is an argument decoding failure.
        handler: SyncUpdateFn<W>,
        /// `#[validator(x)]`, if any.
        validator: Option<Validator<W>>,
    },
    /// `#[update] async fn x(ctx, ..) -> Result<T, UpdateError>`, with its validator.
    AsyncUpdate {
        /// Starts the handler; the error is an argument decoding failure.
        handler: AsyncUpdateFn<W>,
        /// `#[validator(x)]`, if any.
        validator: Option<Validator<W>>,
    },
}

/// A sync update handler; the outer error is an argument decoding failure.
pub type SyncUpdateFn<W> =
    fn(&mut W, &Payload) -> Result<Result<Payload, UpdateError>, PayloadError>;

/// Starts an async update handler; the error is an argument decoding failure.
pub type AsyncUpdateFn<W> =
    fn(
        WorkflowContext<W>,
        &Payload,
    ) -> Result<LocalBoxFuture<Result<Payload, UpdateError>>, PayloadError>;

/// A validator: `Ok(Err(r))` rejects the update; the outer error is an argument decoding
/// failure (which also rejects it).
pub type Validator<W> = fn(&W, &Payload) -> Result<Result<(), Rejection>, PayloadError>;

/// The three roles a handler plays, as clients address them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// An asynchronous write, recorded in history.
    Signal,
    /// A read that never touches history.
    Query,
    /// A tracked write with a validator and a result.
    Update,
}

impl Role {
    /// `"signal"`, `"query"` or `"update"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Signal => "signal",
            Role::Query => "query",
            Role::Update => "update",
        }
    }

    /// `"signals"`, `"queries"` or `"updates"`, for messages that list handlers.
    pub fn plural(self) -> &'static str {
        match self {
            Role::Signal => "signals",
            Role::Query => "queries",
            Role::Update => "updates",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<W> HandlerKind<W> {
    /// The role this handler plays.
    pub fn role(&self) -> Role {
        match self {
            HandlerKind::SyncSignal(_) | HandlerKind::AsyncSignal(_) => Role::Signal,
            HandlerKind::Query(_) => Role::Query,
            HandlerKind::SyncUpdate { .. } | HandlerKind::AsyncUpdate { .. } => Role::Update,
        }
    }

    /// The update's validator, for an update with one.
    pub fn validator(&self) -> Option<Validator<W>> {
        match self {
            HandlerKind::SyncUpdate { validator, .. }
            | HandlerKind::AsyncUpdate { validator, .. } => *validator,
            _ => None,
        }
    }
}

/// Encodes a handler result, turning an encoding failure into an update error.
pub fn encode_update_result<T: Serialize>(
    value: Result<T, UpdateError>,
) -> Result<Payload, UpdateError> {
    match value {
        Ok(v) => Payload::encode(&v).map_err(|e| UpdateError::new(e.to_string())),
        Err(e) => Err(e),
    }
}
