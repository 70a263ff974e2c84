//! Child workflows from the parent's side: starting one (atomically with the parent's
//! commit), its lifecycle in the parent, and the future that resolves to its result
//! (`ctx.child`). A handle on a started child (`ctx.start_child`) is in `child_handle.rs`.
//!
//! ```text
//! Started --(ChildClosed input)--> Closed --(result future polled)--> Taken
//! ```

use super::blocked::{BlockSlot, Wait};
use super::commands::Commands;
use super::context::WorkflowContext;
use super::definition::WorkflowDefinition;
use crate::data::blocked::BlockKind;
use crate::data::history::EventKind;
use crate::data::ids::child_run_id;
use crate::data::limits::Ident;
use crate::data::payload::{Payload, PayloadError};
use crate::data::run::{ChildOutcome, ParentClosePolicy};
use crate::error::ChildError;
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Lifecycle of one child run.
#[derive(Debug)]
pub(crate) enum ChildState {
    Started {
        workflow_id: String,
        policy: ParentClosePolicy,
        waker: Option<Waker>,
    },
    Closed(ChildOutcome),
    Taken,
}

impl Commands {
    /// Records a `ChildWorkflowStarted` command; returns its seq and the child's run id (a
    /// function of this run's id and the seq, so replay gives the recorded one).
    pub fn start_child(
        &mut self,
        workflow_type: String,
        workflow_id: String,
        input: Payload,
        policy: ParentClosePolicy,
        task_queue: Option<String>,
    ) -> (u32, String) {
        let seq = self.next_seq();
        let run_id = child_run_id(&self.run_id, seq);
        self.issued.push(EventKind::ChildWorkflowStarted {
            seq,
            workflow_id: workflow_id.clone(),
            workflow_type,
            run_id: run_id.clone(),
            input,
            parent_close_policy: policy,
            task_queue,
        });
        self.children.insert(
            seq,
            ChildState::Started {
                workflow_id,
                policy,
                waker: None,
            },
        );
        (seq, run_id)
    }

    /// The end of child `seq`, once it is known (and not yet taken): the outcome is taken, so
    /// one future gets it. Until then `cx` is woken when it comes.
    pub(super) fn poll_child_end(&mut self, seq: u32, cx: &Context<'_>) -> Poll<ChildOutcome> {
        let Some(state) = self.children.get_mut(&seq) else {
            return Poll::Pending;
        };
        match std::mem::replace(state, ChildState::Taken) {
            ChildState::Started {
                workflow_id,
                policy,
                ..
            } => {
                *state = ChildState::Started {
                    workflow_id,
                    policy,
                    waker: Some(cx.waker().clone()),
                };
                Poll::Pending
            }
            ChildState::Closed(outcome) => Poll::Ready(outcome),
            ChildState::Taken => Poll::Pending,
        }
    }

    /// Asks child `seq` to cancel (its handle's `cancel`, or its cancellation scope's), if it
    /// is still running as far as this run knows (its future waits for its end).
    pub(super) fn request_child_cancel(&mut self, seq: u32) {
        if self.tearing_down {
            return;
        }
        if let Some(ChildState::Started { workflow_id, .. }) = self.children.get(&seq) {
            let workflow_id = workflow_id.clone();
            self.issued
                .push(EventKind::ChildCancelRequested { seq, workflow_id });
        }
    }

    /// Applies a child's end (an input of the task).
    pub fn resolve_child(&mut self, seq: u32, outcome: ChildOutcome) {
        match self.children.get_mut(&seq) {
            Some(state @ ChildState::Started { .. }) => {
                if let ChildState::Started { waker: Some(w), .. } =
                    std::mem::replace(state, ChildState::Closed(outcome))
                {
                    w.wake();
                }
            }
            _ => self.record_mismatch(format!(
                "history closes child #{seq}, which the workflow code did not start (or already saw closed)"
            )),
        }
    }

    /// Children still running, with their parent close policies, in start order.
    pub fn open_children(&self) -> Vec<(String, ParentClosePolicy)> {
        let mut open: Vec<(u32, String, ParentClosePolicy)> = self
            .children
            .iter()
            .filter_map(|(seq, c)| match c {
                ChildState::Started {
                    workflow_id,
                    policy,
                    ..
                } => Some((*seq, workflow_id.clone(), *policy)),
                _ => None,
            })
            .collect();
        open.sort_by_key(|c| c.0);
        open.into_iter().map(|(_, id, p)| (id, p)).collect()
    }

    /// Asks running children (but abandoned ones) to cancel: the run's cancellation was
    /// requested. In start order, so replay issues the same commands.
    pub(super) fn request_children_cancel(&mut self) {
        let mut children: Vec<(u32, String)> = self
            .children
            .iter()
            .filter_map(|(seq, c)| match c {
                ChildState::Started {
                    workflow_id,
                    policy,
                    ..
                } if *policy != ParentClosePolicy::Abandon => Some((*seq, workflow_id.clone())),
                _ => None,
            })
            .collect();
        children.sort_unstable();
        for (seq, workflow_id) in children {
            self.issued
                .push(EventKind::ChildCancelRequested { seq, workflow_id });
        }
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Starts a child workflow run of type `C` with workflow id `workflow_id` (started
    /// atomically with this task's commit) and resolves to its result. When this run closes
    /// first, the child is terminated (change with
    /// [`.parent_close_policy(..)`](ChildCall::parent_close_policy)). A workflow id or task
    /// queue out of the limits (`wf_core::data::limits`) starts nothing: the call fails with
    /// [`ChildError::InvalidArgument`]. To signal or cancel the child while it runs, start it
    /// with [`start_child`](Self::start_child) (or [`ChildCall::start`]) instead.
    #[track_caller]
    pub fn child<C: WorkflowDefinition>(
        &self,
        workflow_id: impl Into<String>,
        input: &C::Input,
    ) -> ChildCall<C> {
        ChildCall {
            core: self.core.clone(),
            workflow_id: workflow_id.into(),
            input: Payload::encode(input),
            policy: ParentClosePolicy::default(),
            task_queue: None,
            seq: None,
            block: BlockSlot::at(std::panic::Location::caller()),
            _c: PhantomData,
        }
    }
}

/// Future of [`WorkflowContext::child`]: the child's result.
pub struct ChildCall<C: WorkflowDefinition> {
    pub(super) core: Rc<RefCell<Commands>>,
    workflow_id: String,
    input: Result<Payload, PayloadError>,
    policy: ParentClosePolicy,
    task_queue: Option<String>,
    seq: Option<u32>,
    /// Its entry in what the run is blocked on (see `blocked.rs`).
    block: BlockSlot,
    _c: PhantomData<fn() -> C>,
}

impl<C: WorkflowDefinition> Unpin for ChildCall<C> {}

impl<C: WorkflowDefinition> Drop for ChildCall<C> {
    fn drop(&mut self) {
        self.block.release(&self.core);
    }
}

impl<C: WorkflowDefinition> ChildCall<C> {
    /// Runs the child on another task queue (default: this run's), i.e. on the engines that
    /// serve that queue.
    pub fn task_queue(mut self, name: impl Into<String>) -> Self {
        self.task_queue = Some(name.into());
        self
    }

    /// What happens to the child if this run closes first (default: terminate it).
    pub fn parent_close_policy(mut self, policy: ParentClosePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The child's workflow id, type and task queue against their limits (its type is not
    /// necessarily registered here, where registration would have checked it).
    fn check_names(&self) -> Result<(), ChildError> {
        Ident::WorkflowId.check(&self.workflow_id)?;
        Ident::WorkflowType.check(C::NAME)?;
        if let Some(queue) = &self.task_queue {
            Ident::TaskQueue.check(queue)?;
        }
        Ok(())
    }

    /// Issues the start command: the child's seq, workflow id and run id. Bad input or names
    /// start nothing and issue no command, on replay alike.
    pub(super) fn issue(&mut self) -> Result<(u32, String, String), ChildError> {
        let input = self.input.clone().map_err(ChildError::Payload)?;
        self.check_names()?;
        let (seq, run_id) = self.core.borrow_mut().start_child(
            C::NAME.to_string(),
            self.workflow_id.clone(),
            input,
            self.policy,
            self.task_queue.clone(),
        );
        self.seq = Some(seq);
        Ok((seq, self.workflow_id.clone(), run_id))
    }
}

/// A child's end as its parent's code sees it (and the parent's cancellation as received, for
/// a child that ended cancelled).
pub(super) fn child_result<C: WorkflowDefinition>(
    core: &mut Commands,
    outcome: ChildOutcome,
) -> Result<C::Output, ChildError> {
    match outcome {
        ChildOutcome::Completed(p) => p.decode().map_err(ChildError::Payload),
        ChildOutcome::Failed(m) => Err(ChildError::Failed(m)),
        ChildOutcome::Cancelled(m) => {
            core.cancel_received();
            Err(ChildError::Cancelled(m))
        }
        ChildOutcome::Terminated(m) => Err(ChildError::Terminated(m)),
        ChildOutcome::StartFailed(m) => Err(ChildError::StartFailed(m)),
    }
}

impl<C: WorkflowDefinition> Future for ChildCall<C> {
    type Output = Result<C::Output, ChildError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let seq = match self.seq {
            Some(seq) => seq,
            None => match self.issue() {
                Ok((seq, _, _)) => seq,
                Err(e) => return Poll::Ready(Err(e)),
            },
        };
        let this = &mut *self;
        let mut core = this.core.borrow_mut();
        let poll = core
            .poll_child_end(seq, cx)
            .map(|outcome| child_result::<C>(&mut core, outcome));
        let name = &this.workflow_id;
        this.block.track(&mut core, poll, || child_wait(name, seq))
    }
}

/// What a pending child call is blocked on.
pub(super) fn child_wait(workflow_id: &str, seq: u32) -> Wait {
    Wait {
        name: workflow_id.to_string(),
        seq: Some(seq),
        ..Wait::of(BlockKind::Child)
    }
}
