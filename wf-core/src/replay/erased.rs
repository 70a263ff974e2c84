//! The registered workflow types of an engine, type-erased: each knows its handler table,
//! checks messages against it, and builds in-memory runs.

use super::machine::{Instance, RunMachine, TaskError};
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::payload::{Payload, PayloadError};
use crate::data::run_limits::RunLimits;
use crate::error::WfError;
use crate::workflow::{DynamicHandlers, Handler, Role, WorkflowDefinition, WorkflowType};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A registered workflow type, whatever it is.
pub(crate) trait ErasedDefinition: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether this is a dynamic workflow type (`#[workflow(dynamic)]`).
    fn is_dynamic(&self) -> bool;
    fn new_instance(
        &self,
        workflow_id: &str,
        run_id: &str,
        started: &HistoryEvent,
    ) -> Result<Box<dyn Instance>, TaskError>;
    fn check_input(&self, input: &Payload) -> Result<(), PayloadError>;
    /// Checks that `name` is a handler of `role` and that `args` decode for it. A signal with
    /// no handler is fine: it is kept and buffered (for `ctx.wait_for_signal`, or a later
    /// version of the code with a handler for it). A message for the dynamic handler of its
    /// role is fine too: that handler decodes its arguments itself.
    fn check_message(&self, role: Role, name: &str, args: &Payload) -> Result<(), WfError>;
    /// Whether the type has a handler `name` of `role`, or a dynamic one that takes it.
    fn has_handler(&self, role: Role, name: &str) -> bool;
    /// The type's public shape: input, output, handlers with their parameters.
    fn shape(&self) -> WorkflowType;
}

/// A registered workflow type: its handler table, shared by all its runs.
pub(crate) struct Definition<W: WorkflowDefinition> {
    table: Arc<Table<W>>,
}

impl<W: WorkflowDefinition> Definition<W> {
    /// The definition of `W`; an error names a duplicate handler name.
    pub fn new() -> Result<Self, String> {
        Ok(Definition {
            table: Arc::new(Table::new()?),
        })
    }
}

/// A workflow type's handlers, by wire name.
pub(crate) struct Table<W: WorkflowDefinition> {
    handlers: Vec<Handler<W>>,
    index: HashMap<&'static str, usize, BuildHasherDefault<NameHasher>>,
    dynamic: DynamicHandlers<W>,
}

impl<W: WorkflowDefinition> Table<W> {
    fn new() -> Result<Self, String> {
        let handlers = W::handlers();
        let mut index = HashMap::default();
        for (i, h) in handlers.iter().enumerate() {
            if index.insert(h.name, i).is_some() {
                return Err(format!(
                    "workflow {} has two handlers named {:?}",
                    W::NAME,
                    h.name
                ));
            }
        }
        Ok(Table {
            handlers,
            index,
            dynamic: W::dynamic_handlers(),
        })
    }

    /// The catch-all handlers, for messages no named handler takes.
    pub fn dynamic(&self) -> &DynamicHandlers<W> {
        &self.dynamic
    }

    /// The handler named `name` if it plays `role`.
    pub fn handler(&self, name: &str, role: Role) -> Option<&Handler<W>> {
        self.index
            .get(name)
            .map(|&i| &self.handlers[i])
            .filter(|h| h.kind.role() == role)
    }

    /// "T has signals: a, b", for error messages that say what exists.
    pub fn names_of(&self, role: Role) -> String {
        let names: Vec<&str> = self
            .handlers
            .iter()
            .filter(|h| h.kind.role() == role)
            .map(|h| h.name)
            .collect();
        if names.is_empty() {
            format!("{} has no {role} handlers", W::NAME)
        } else {
            format!("{} has {}: {}", W::NAME, role.plural(), names.join(", "))
        }
    }

    /// The error for a query name this type does not have.
    pub fn unknown_query(&self, name: &str) -> WfError {
        WfError::QueryError(format!(
            "unknown query {name:?}; {}",
            self.names_of(Role::Query)
        ))
    }
}

/// FNV-1a, for the handler index: every signal, update and query looks its handler up by
/// name (on replay too, once per recorded message), and names are short. The keys are the
/// type's own handler names, fixed when it is registered; names from outside are only looked
/// up, never inserted, so they cannot crowd a bucket (what SipHash's keys guard against).
#[derive(Clone, Copy)]
struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> Self {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl<W: WorkflowDefinition> ErasedDefinition for Definition<W> {
    fn name(&self) -> &'static str {
        W::NAME
    }

    fn is_dynamic(&self) -> bool {
        W::DYNAMIC
    }

    fn new_instance(
        &self,
        workflow_id: &str,
        run_id: &str,
        started: &HistoryEvent,
    ) -> Result<Box<dyn Instance>, TaskError> {
        let EventKind::WorkflowStarted {
            workflow_type,
            input,
            random_seed,
            parent,
            limits,
            ..
        } = &started.kind
        else {
            return Err(TaskError::Other(format!(
                "run {run_id}: history starts with {} instead of WorkflowStarted",
                started.kind.name()
            )));
        };
        let input = W::decode_input(workflow_type, input).map_err(|e| {
            TaskError::Other(format!(
                "run {run_id}: the start input does not decode: {e}"
            ))
        })?;
        let machine = RunMachine::<W>::new(
            self.table.clone(),
            workflow_id,
            run_id,
            *random_seed,
            parent.clone(),
            RunLimits::attempt_of(limits.as_ref()),
            input,
        )?;
        Ok(Box::new(machine))
    }

    fn check_input(&self, input: &Payload) -> Result<(), PayloadError> {
        W::decode_input(W::NAME, input).map(|_| ())
    }

    fn check_message(&self, role: Role, name: &str, args: &Payload) -> Result<(), WfError> {
        match self.table.handler(name, role) {
            Some(h) => (h.check_args)(args).map_err(WfError::from),
            None if role == Role::Signal || self.table.dynamic.has(role) => Ok(()),
            None if role == Role::Query => Err(self.table.unknown_query(name)),
            None => Err(WfError::Unknown {
                kind: role.as_str(),
                name: name.to_string(),
                hint: self.table.names_of(role),
            }),
        }
    }

    fn has_handler(&self, role: Role, name: &str) -> bool {
        self.table.handler(name, role).is_some() || self.table.dynamic.has(role)
    }

    fn shape(&self) -> WorkflowType {
        WorkflowType::of::<W>()
    }
}
