//! Dynamic workflow types (Temporal's dynamic workflows): one registration, made with
//! `#[workflow(dynamic)]`, that runs every workflow type name no other registration of the
//! engine has. Its `run` receives the run's type name and the raw input the starter sent, and
//! decodes the input itself; its message handlers are the dynamic ones (`#[signal(dynamic)]`,
//! ...) or named ones, as on any workflow.
//!
//! A dynamic type's [`WorkflowDefinition::Input`](super::WorkflowDefinition::Input) is
//! [`DynamicInput`]: the engine builds it from the run's type and its encoded input
//! (`decode_input`), and `ctx.continue_as_new(&input)` sends on the raw input only
//! (`encode_input`), so the new run keeps the type name and gets the same kind of input.

use crate::data::payload::{Payload, PayloadError};
use serde::{Deserialize, Serialize};

/// What a dynamic workflow type's run starts with: the workflow type it runs as and the raw
/// input (the encoded value the starter sent, which the code decodes with
/// [`Payload::decode`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicInput {
    /// The run's workflow type name, as the starter named it.
    pub workflow_type: String,
    /// The raw input.
    pub args: Payload,
}

impl DynamicInput {
    /// The input of a run of `workflow_type` whose encoded input is `args`.
    pub fn new(workflow_type: impl Into<String>, args: Payload) -> Self {
        DynamicInput {
            workflow_type: workflow_type.into(),
            args,
        }
    }

    /// [`WorkflowDefinition::decode_input`](super::WorkflowDefinition::decode_input) of a
    /// dynamic type: the input stays raw (a dynamic type takes any input).
    pub fn decode(workflow_type: &str, args: &Payload) -> Result<Self, PayloadError> {
        Ok(DynamicInput::new(workflow_type, args.clone()))
    }

    /// [`WorkflowDefinition::encode_input`](super::WorkflowDefinition::encode_input) of a
    /// dynamic type: the raw input, for `ctx.continue_as_new`.
    pub fn encode(&self) -> Result<Payload, PayloadError> {
        Ok(self.args.clone())
    }
}
