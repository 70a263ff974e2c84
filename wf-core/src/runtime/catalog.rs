//! The engine's catalog, what it runs: its registered workflow types (by wire name), its dynamic workflow
//! type if it has one (it runs every other type name), and its activities.

use crate::activity::ActivityRegistry;
use crate::error::WfError;
use crate::replay::ErasedDefinition;
use std::collections::HashMap;
use std::sync::Arc;

/// The workflow types and activities registered with one engine.
#[derive(Default)]
pub(crate) struct Catalog {
    pub workflows: HashMap<&'static str, Arc<dyn ErasedDefinition>>,
    /// The `#[workflow(dynamic)]` type: it runs the runs of every type not in `workflows`.
    pub dynamic: Option<Arc<dyn ErasedDefinition>>,
    pub activities: ActivityRegistry,
}

impl Catalog {
    /// Registers a workflow type: a dynamic one takes the one dynamic slot (a second one is an
    /// error naming both), any other its name.
    pub fn register(&mut self, def: Arc<dyn ErasedDefinition>) -> Result<(), String> {
        if !def.is_dynamic() {
            self.workflows.insert(def.name(), def);
            return Ok(());
        }
        match &self.dynamic {
            Some(first) if first.name() != def.name() => Err(format!(
                "two dynamic workflow types are registered, {} and {}: an engine has at most \
                 one (it runs every workflow type no other registration names); register one \
                 of them only",
                first.name(),
                def.name()
            )),
            _ => {
                self.dynamic = Some(def);
                Ok(())
            }
        }
    }

    /// The definition that runs `workflow_type`: its registration, else the dynamic type.
    pub fn get(&self, workflow_type: &str) -> Option<&Arc<dyn ErasedDefinition>> {
        self.workflows.get(workflow_type).or(self.dynamic.as_ref())
    }

    /// The definition that runs `workflow_type`, or an error that says how to register it.
    pub fn definition(&self, workflow_type: &str) -> Result<&Arc<dyn ErasedDefinition>, WfError> {
        self.get(workflow_type).ok_or_else(|| WfError::Unknown {
            kind: "workflow type",
            name: workflow_type.to_string(),
            hint: "register it with Engine::builder().workflow::<T>() (or register a \
                   #[workflow(dynamic)] type, which runs every type name)"
                .into(),
        })
    }

    /// The registered workflow types' names.
    pub fn workflow_types(&self) -> Vec<String> {
        self.workflows.keys().map(|t| t.to_string()).collect()
    }

    /// The workflow types this engine's worker leases runs of: the registered names, or
    /// `None` (any type) when a dynamic type runs the others.
    pub fn leased_types(&self) -> Option<Vec<String>> {
        match self.dynamic {
            Some(_) => None,
            None => Some(self.workflow_types()),
        }
    }
}
