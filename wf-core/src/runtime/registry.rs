//! What an engine runs: its registered workflow types (by wire name) and activities.

use crate::activity::ActivityRegistry;
use crate::error::WfError;
use crate::replay::ErasedDefinition;
use std::collections::HashMap;
use std::sync::Arc;

/// The workflow types and activities registered with one engine.
#[derive(Default)]
pub(crate) struct Registry {
    pub workflows: HashMap<&'static str, Arc<dyn ErasedDefinition>>,
    pub activities: ActivityRegistry,
}

impl Registry {
    /// The registered definition of `workflow_type`, or an error that says how to register it.
    pub fn definition(&self, workflow_type: &str) -> Result<&Arc<dyn ErasedDefinition>, WfError> {
        self.workflows
            .get(workflow_type)
            .ok_or_else(|| WfError::Unknown {
                kind: "workflow type",
                name: workflow_type.to_string(),
                hint: "; register it with Engine::builder().workflow::<T>()".into(),
            })
    }

    /// The registered workflow types' names.
    pub fn workflow_types(&self) -> Vec<String> {
        self.workflows.keys().map(|t| t.to_string()).collect()
    }
}
