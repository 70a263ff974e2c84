//! How a run applies a message to its dynamic handler (`#[signal(dynamic)]`,
//! `#[update(dynamic)]`): the message's name and raw arguments go to the handler, which
//! decodes them itself. Only messages no named handler takes arrive here (`machine.rs`).

use super::machine::RunMachine;
use crate::data::payload::Payload;
use crate::data::update::UpdateOutcome;
use crate::workflow::{
    DynamicSignal, DynamicSignalKind, DynamicUpdate, DynamicUpdateKind, WorkflowDefinition,
};

impl<W: WorkflowDefinition> RunMachine<W> {
    /// Runs the dynamic signal handler (sync: at once; async: as a task).
    pub(super) fn apply_dynamic_signal(
        &mut self,
        handler: &DynamicSignal<W>,
        name: String,
        args: Payload,
        span: &tracing::Span,
    ) {
        match handler.kind {
            DynamicSignalKind::Sync(f) => {
                f(&mut self.state.borrow_mut(), name, args);
                self.core.borrow_mut().state_changed();
            }
            DynamicSignalKind::Async(f) => {
                let fut = f(self.ctx(), name.clone(), args);
                self.spawn_signal(&name, handler.unfinished, fut, span);
            }
        }
    }

    /// Validates (if `validate`) and starts an update on the dynamic update handler; false if
    /// its validator rejected it. The lifecycle is the named handlers' (`apply_update`).
    pub(super) fn apply_dynamic_update(
        &mut self,
        handler: &DynamicUpdate<W>,
        update_id: String,
        name: String,
        args: Payload,
        validate: bool,
        span: &tracing::Span,
    ) -> bool {
        if let (true, Some(validator)) = (validate, handler.validator) {
            let verdict = validator(&self.state.borrow(), &name, &args);
            if let Err(rejection) = verdict {
                return self.reject_update(update_id, name, rejection.message);
            }
        }
        self.accept_update(&update_id, &name);
        match handler.kind {
            DynamicUpdateKind::Sync(f) => {
                let outcome = match f(&mut self.state.borrow_mut(), name.clone(), args) {
                    Ok(p) => UpdateOutcome::Completed(p),
                    Err(e) => UpdateOutcome::Failed(e.message),
                };
                self.complete_sync_update(update_id, name, outcome);
            }
            DynamicUpdateKind::Async(f) => {
                let fut = f(self.ctx(), name.clone(), args);
                self.spawn_update(update_id, name, handler.unfinished, fut, span);
            }
        }
        true
    }
}
