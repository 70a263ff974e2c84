//! Messages to other workflows: `ctx.signal_external` (delivered atomically with this task's
//! commit, exactly once) and the parent a child run reports to.

use super::commands::Commands;
use super::context::WorkflowContext;
use crate::data::history::EventKind;
use crate::data::limits::Ident;
use crate::data::payload::Payload;
use crate::data::run::ParentInfo;
use crate::error::SignalExternalError;
use serde::Serialize;

impl Commands {
    /// Records an `ExternalSignalSent` command; `chain` (a child's first run id) restricts
    /// delivery to that child's runs.
    pub fn signal_external(
        &mut self,
        workflow_id: String,
        name: String,
        args: Payload,
        chain: Option<String>,
    ) -> u32 {
        let seq = self.next_seq();
        self.issued.push(EventKind::ExternalSignalSent {
            seq,
            workflow_id,
            name,
            args,
            run_id: chain,
        });
        seq
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Sends a signal (arguments as a tuple, e.g. `&(42,)`) to another workflow, such as a
    /// child or the parent ([`parent`](Self::parent)). It is delivered atomically with this
    /// task's commit, exactly once; a missing or finished target drops it. An id or a name out
    /// of the limits (`wf_core::data::limits`), or arguments that do not encode, send nothing
    /// and return the error (`?` turns it into a [`WorkflowError`](crate::WorkflowError)).
    pub fn signal_external<A: Serialize>(
        &self,
        workflow_id: &str,
        name: &str,
        args: &A,
    ) -> Result<(), SignalExternalError> {
        Ident::WorkflowId.check(workflow_id)?;
        Ident::SignalName.check(name)?;
        let args = Payload::encode(args)?;
        self.core.borrow_mut().signal_external(
            workflow_id.to_string(),
            name.to_string(),
            args,
            None,
        );
        Ok(())
    }

    /// The parent run, if this run is a child.
    pub fn parent(&self) -> Option<ParentInfo> {
        self.core.borrow().parent.clone()
    }
}
