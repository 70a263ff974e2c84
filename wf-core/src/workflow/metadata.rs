//! What a registered workflow type looks like from outside: its input and result types and
//! its handlers with their parameters, as written in the code. Tools read it to describe the
//! type (`GET /{type}` in wf-http) and to check arguments that arrive as JSON.

use super::definition::{Param, Role, WorkflowDefinition};
use crate::data::payload::{Payload, PayloadError};

/// A workflow type's public shape (see [`Engine::workflow_types`](crate::Engine::workflow_types)).
#[derive(Debug, Clone)]
pub struct WorkflowType {
    /// Wire name.
    pub name: &'static str,
    /// The input type of `run`, as written.
    pub input: &'static str,
    /// The type `run` returns on success, as written.
    pub output: &'static str,
    /// Signals, queries and updates, in declaration order.
    pub handlers: Vec<HandlerInfo>,
    /// Which catch-all handlers the type has.
    pub dynamic: DynamicInfo,
    /// Whether this is a dynamic workflow type (`#[workflow(dynamic)]`), which runs every
    /// workflow type name no other registration has; its `name` is not a type name of runs.
    pub dynamic_workflow: bool,
    output_with_names: fn(&Payload) -> Result<Payload, PayloadError>,
    check_input: fn(&Payload) -> Result<(), PayloadError>,
}

/// One handler of a [`WorkflowType`].
#[derive(Debug, Clone)]
pub struct HandlerInfo {
    /// Wire name.
    pub name: &'static str,
    /// Signal, query or update.
    pub role: Role,
    /// Parameters, in order, as written.
    pub params: &'static [Param],
    /// The type a query or update returns, as written (`"()"` for signals).
    pub returns: &'static str,
    /// Whether an update has a validator.
    pub validated: bool,
    check_args: fn(&Payload) -> Result<(), PayloadError>,
}

/// The catch-all handlers of a [`WorkflowType`]: which roles have one (it takes every message
/// of that role no named handler takes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DynamicInfo {
    /// `#[signal(dynamic)]`.
    pub signal: bool,
    /// `#[query(dynamic)]`.
    pub query: bool,
    /// `#[update(dynamic)]`.
    pub update: bool,
    /// `#[validator(dynamic)]`.
    pub update_validated: bool,
}

impl DynamicInfo {
    /// Whether a dynamic handler plays `role`.
    pub fn has(&self, role: Role) -> bool {
        match role {
            Role::Signal => self.signal,
            Role::Query => self.query,
            Role::Update => self.update,
        }
    }
}

impl WorkflowType {
    /// The shape of `W`.
    pub fn of<W: WorkflowDefinition>() -> WorkflowType {
        let handlers = W::handlers()
            .into_iter()
            .map(|h| HandlerInfo {
                name: h.name,
                role: h.kind.role(),
                params: h.params,
                returns: h.returns,
                validated: h.kind.validator().is_some(),
                check_args: h.check_args,
            })
            .collect();
        let dynamic = W::dynamic_handlers();
        WorkflowType {
            name: W::NAME,
            input: W::input_type_name(),
            output: W::output_type_name(),
            handlers,
            dynamic: DynamicInfo {
                signal: dynamic.signal.is_some(),
                query: dynamic.query.is_some(),
                update: dynamic.update.is_some(),
                update_validated: dynamic.update.is_some_and(|u| u.validator.is_some()),
            },
            dynamic_workflow: W::DYNAMIC,
            output_with_names: W::output_with_names,
            check_input: |input| W::decode_input(W::NAME, input).map(|_| ()),
        }
    }

    /// Checks that `input` decodes as the input of `run`.
    pub fn check_input(&self, input: &Payload) -> Result<(), PayloadError> {
        (self.check_input)(input)
    }

    /// Re-encodes an encoded result of `run` with struct fields by name.
    pub fn output_with_names(&self, output: &Payload) -> Result<Payload, PayloadError> {
        (self.output_with_names)(output)
    }

    /// The handler named `name` that plays `role`.
    pub fn handler(&self, name: &str, role: Role) -> Option<&HandlerInfo> {
        self.handlers
            .iter()
            .find(|h| h.name == name && h.role == role)
    }
}

impl HandlerInfo {
    /// Checks that `args` (the encoded argument tuple) decodes as this handler's parameters.
    pub fn check_args(&self, args: &Payload) -> Result<(), PayloadError> {
        (self.check_args)(args)
    }
}
