//! Where an in-process message (a signal, an update, a cancellation request) goes, picked once
//! per call by [`pick`], sent by [`send`], and what the answer means, read in one place
//! ([`settle`]).
//!
//! The three routes:
//! - [`Route::Cached`]: the workflow id's running run is in this engine's cache. The message
//!   is checked against its type with no store read and handed to the workflow worker, whose
//!   next commit records it.
//! - [`Route::Here`]: the workflow id's latest run, as just read, is running, of a type this
//!   engine's worker runs, on its task queue. Handed over too: the worker rebuilds the run
//!   from its history first.
//! - [`Route::Store`]: written to the store's inbox (of one run, or of the workflow id's latest
//!   run), like a client of another process would; a worker's task consumes it later. A run an
//!   operator paused always takes this route: the read that finds the run says it is paused,
//!   and a worker could neither lease it nor commit to it (its lease is the pause's).
//!
//! **Dedupe ids.** Only the store keeps a chain's signal ids and update ids and answers a
//! repeated one with the first outcome; a hand-over records the message without looking. So a
//! message that carries a dedupe id is never handed over: it goes to the store's inbox, of the
//! run the cache holds if it does (`Store` pinned to that run, checked with no store read),
//! else of the latest run. An update the caller waits on only until it is accepted or admitted
//! goes the same way, as only its record in the store says when it got there. A message
//! without one is handed over wherever the worker can take it; if the worker cannot say
//! whether it recorded it (it stopped), a signal is answered `Interrupted` (resend it with an
//! id) and an update, which has an id by then, goes to the store, whose dedupe applies it once.
//!
//! **When the run closed first.** A route to one run whose answer is `RunFinished` learned
//! that the run closed before it took the message (a continue-as-new, say): nothing was
//! recorded, and the call routes again ([`Route::after_closed`]), ending at the latest run's
//! inbox, whose refusal is the answer. A run still running that refuses (`Cancelled`: its
//! cancellation was requested, and it takes no more signals) is the answer at once.

use super::{check_size, latest, no_run, Core};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::RunStatus;
use crate::data::update::UpdateState;
use crate::error::WfError;
use crate::replay::ErasedDefinition;
use crate::runtime::worker::{Direct, DirectReply};
use crate::store::{Delivery, RunRecord};
use crate::workflow::Role;
use std::sync::Arc;

/// Where one message goes (see the module's opening comment).
pub(super) enum Route {
    /// To the worker, which holds run `run_id` in its cache.
    Cached {
        run_id: String,
        def: Arc<dyn ErasedDefinition>,
    },
    /// To the worker, which rebuilds `run` (its row as just read) from its history.
    Here {
        run: Box<RunRecord>,
        def: Arc<dyn ErasedDefinition>,
    },
    /// To the store's inbox: of run `run_id` (the cached run, for a message that may not be
    /// handed over), or of the workflow id's latest run (`None`). `def`: the run's type, if this engine
    /// knows it.
    Store {
        run_id: Option<String>,
        def: Option<Arc<dyn ErasedDefinition>>,
    },
}

/// What a message is, as far as its route is concerned.
#[derive(Clone, Copy)]
pub(super) struct Outgoing<'a> {
    /// The handler it is for, checked against the run's type while the run runs: its role,
    /// name and arguments (`None`: a cancellation request).
    pub handler: Option<(Role, &'a str, &'a Payload)>,
    /// Whether the worker may take it in memory: false for a message with a dedupe id, and for
    /// an update waited on only to a stage before its completion.
    pub hand_over: bool,
    /// Whether to look in the cache first (a cancellation request always reads the run).
    pub cached: bool,
}

/// What the caller learns from the route it sent a message along.
#[derive(Debug)]
pub(super) enum Sent {
    /// The worker's commit recorded it in history.
    Recorded,
    /// An update reached this state in the worker (a final one: see [`outcome`]).
    Update(UpdateState),
    /// It is in the store's inbox: put there by this call, or by the worker, which could not
    /// run it (the run was busy, leased elsewhere, or gone). A caller that waits for an outcome
    /// waits on the store.
    Inbox,
    /// The run routed to closed before it took the message: nothing was recorded; route again.
    Closed,
    /// The worker went away without answering: it may or may not have recorded the message.
    Unknown,
}

impl Route {
    /// The run's workflow type, when this engine knows it.
    pub fn def(&self) -> Option<&Arc<dyn ErasedDefinition>> {
        match self {
            Route::Cached { def, .. } | Route::Here { def, .. } => Some(def),
            Route::Store { def, .. } => def.as_ref(),
        }
    }

    /// The run this route goes to, if one (else the workflow id's latest run).
    pub fn run_id(&self) -> Option<&str> {
        match self {
            Route::Cached { run_id, .. } => Some(run_id),
            Route::Here { run, .. } => Some(&run.run_id),
            Route::Store { run_id, .. } => run_id.as_deref(),
        }
    }

    /// Whether the worker takes the message in memory (and the caller waits for its reply).
    pub fn hands_over(&self) -> bool {
        matches!(self, Route::Cached { .. } | Route::Here { .. })
    }

    /// The route after this one's run closed before it took the message: a run the cache
    /// held is forgotten and the workflow id's latest run read again; after a run just read,
    /// the latest run's inbox.
    pub async fn after_closed(
        self,
        core: &Core,
        workflow_id: &str,
        message: &Outgoing<'_>,
    ) -> Result<Route, WfError> {
        match self {
            // A run the cache holds (a pinned delivery goes to one too).
            Route::Cached { run_id, .. }
            | Route::Store {
                run_id: Some(run_id),
                ..
            } => {
                core.worker.forget_run(workflow_id, &run_id);
                pick(
                    core,
                    workflow_id,
                    &Outgoing {
                        cached: false,
                        ..*message
                    },
                )
                .await
            }
            other => Ok(other.into_inbox()),
        }
    }

    /// The latest run's inbox, keeping what this route knew of the run's type: where a
    /// message goes when the worker could not say whether it took it.
    pub fn into_inbox(self) -> Route {
        Route::Store {
            run_id: None,
            def: self.def().cloned(),
        }
    }
}

/// Picks the route of `message` for `workflow_id`, and checks the message against the run's
/// type where this engine knows it.
pub(super) async fn pick(
    core: &Core,
    workflow_id: &str,
    message: &Outgoing<'_>,
) -> Result<Route, WfError> {
    if let Some((role, _, args)) = message.handler {
        check_size(role.as_str(), args)?;
    }
    if let Some((run_id, def)) = message.cached.then(|| hot_run(core, workflow_id)).flatten() {
        check(&def, message)?;
        return Ok(if message.hand_over {
            Route::Cached { run_id, def }
        } else {
            Route::Store {
                run_id: Some(run_id),
                def: Some(def),
            }
        });
    }
    let (run, paused) = core
        .store
        .admin()
        .latest_run_paused(workflow_id)
        .await?
        .ok_or_else(|| no_run(workflow_id))?;
    let def = core.catalog.get(&run.workflow_type).cloned();
    // A closed run refuses every message (or answers a known dedupe id with its first
    // outcome): the store says which.
    if let (Some(def), RunStatus::Running) = (&def, run.status) {
        check(def, message)?;
    }
    match def {
        Some(def) if message.hand_over && !paused && runs_here(core, &run) => Ok(Route::Here {
            run: Box::new(run),
            def,
        }),
        def => Ok(Route::Store { run_id: None, def }),
    }
}

/// Sends `message` to `workflow_id` along `route`, the store's deliveries made durable before
/// they answer if `durable` (else buffered, see `Store::deliver`).
pub(super) async fn send(
    core: &Core,
    workflow_id: &str,
    route: &Route,
    message: Message,
    durable: bool,
) -> Result<Sent, WfError> {
    let answer = match route {
        Route::Cached { run_id, .. } => hand_over(core, run_id, workflow_id, None, message).await,
        Route::Here { run, .. } => {
            hand_over(core, &run.run_id, workflow_id, Some(run), message).await
        }
        Route::Store { run_id, .. } => {
            let delivered = deliver(core, workflow_id, run_id.as_deref(), message, durable).await;
            return settle(core, workflow_id, route, delivered.map(|()| Sent::Inbox)).await;
        }
    };
    let sent = match answer {
        Some(DirectReply::Recorded) => Ok(Sent::Recorded),
        Some(DirectReply::Update(state)) => Ok(Sent::Update(state)),
        Some(DirectReply::Fallback) => Ok(Sent::Inbox),
        Some(DirectReply::Failed(e)) => Err(e),
        None => Ok(Sent::Unknown),
    };
    settle(core, workflow_id, route, sent).await
}

/// The one reading of a route's answer: a `RunFinished` from one run means it closed first
/// ([`Sent::Closed`]), unless the run still runs and refuses (its cancellation was requested).
async fn settle(
    core: &Core,
    workflow_id: &str,
    route: &Route,
    sent: Result<Sent, WfError>,
) -> Result<Sent, WfError> {
    match (sent, route.run_id()) {
        (Err(e @ WfError::RunFinished { status, .. }), Some(run_id)) => {
            if status == RunStatus::Cancelled && !closed(core, workflow_id, run_id).await? {
                return Err(e);
            }
            Ok(Sent::Closed)
        }
        (sent, _) => sent,
    }
}

/// The caller's answer for an update that reached `state` in run `run_id`; `None` while it is
/// not final (the caller waits for its record).
pub(super) async fn outcome(
    core: &Core,
    workflow_id: &str,
    run_id: &str,
    state: UpdateState,
) -> Option<Result<Payload, WfError>> {
    use crate::data::update::UpdateOutcome;
    match state {
        UpdateState::Completed(UpdateOutcome::Completed(p)) => Some(Ok(p)),
        UpdateState::Completed(UpdateOutcome::Failed(msg)) => Some(Err(WfError::UpdateFailed(msg))),
        UpdateState::Rejected(msg) => Some(Err(WfError::Rejected(msg))),
        UpdateState::Abandoned => Some(Err(abandoned(core, workflow_id, run_id).await)),
        UpdateState::Requested | UpdateState::Accepted => None,
    }
}

/// The error for an update its run closed on before the update completed: `RunFinished` with
/// the run's own status (`ContinuedAsNew` if a later run of the workflow id exists).
async fn abandoned(core: &Core, workflow_id: &str, run_id: &str) -> WfError {
    let run = match latest(core, workflow_id).await {
        Ok(run) => run,
        Err(e) => return e,
    };
    let status = if run.run_id == run_id {
        run.status
    } else {
        RunStatus::ContinuedAsNew
    };
    WfError::RunFinished {
        workflow_id: workflow_id.to_string(),
        run_id: run_id.to_string(),
        status,
    }
}

/// Checks a message against its run's type.
fn check(def: &Arc<dyn ErasedDefinition>, message: &Outgoing<'_>) -> Result<(), WfError> {
    match message.handler {
        Some((role, name, args)) => def.check_message(role, name, args),
        None => Ok(()),
    }
}

/// The running run of `workflow_id` held in this engine's cache, with its definition: a
/// message for it needs no store read to be checked and handed to the worker.
pub(super) fn hot_run(
    core: &Core,
    workflow_id: &str,
) -> Option<(String, Arc<dyn ErasedDefinition>)> {
    let (run_id, workflow_type) = core.worker.hot(workflow_id)?;
    let def = core.catalog.get(workflow_type.as_str())?;
    Some((run_id, def.clone()))
}

/// Whether this engine's workflow worker runs `run` (running, of a registered type, on this
/// engine's task queue).
fn runs_here(core: &Core, run: &RunRecord) -> bool {
    core.config.run_workers
        && run.status == RunStatus::Running
        && run.task_queue == core.config.task_queue
        && core.catalog.get(&run.workflow_type).is_some()
}

/// Whether run `run_id` of `workflow_id` is closed (else its cancellation was requested).
async fn closed(core: &Core, workflow_id: &str, run_id: &str) -> Result<bool, WfError> {
    Ok(core
        .store
        .get_run(workflow_id, Some(run_id))
        .await?
        .is_none_or(|r| r.status != RunStatus::Running))
}

/// Hands a message for run `run_id` to this engine's workflow worker (`known`: the run's row
/// as just read, which lets the worker run it without a lease if it is not in memory); `None`
/// if the worker is gone (or went away without answering).
async fn hand_over(
    core: &Core,
    run_id: &str,
    workflow_id: &str,
    known: Option<&RunRecord>,
    message: Message,
) -> Option<DirectReply> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let direct = Direct::Message {
        run_id: run_id.to_string(),
        workflow_id: workflow_id.to_string(),
        known: known.cloned().map(Box::new),
        message,
        reply,
    };
    core.worker.hand_over(direct).ok()?;
    answer.await.ok()
}

/// Delivers a message to the inbox of run `run_id` (`None`: the latest run) and wakes the
/// worker if it was queued. A signal marks its workflow id first: a query answered from this
/// engine's cache must look in the inbox (see `worker/marks.rs`).
async fn deliver(
    core: &Core,
    workflow_id: &str,
    run_id: Option<&str>,
    message: Message,
    durable: bool,
) -> Result<(), WfError> {
    let mark = (core.config.run_workers && matches!(message, Message::Signal { .. }))
        .then(|| core.worker.marks.deliver(workflow_id));
    let mut delivery = Delivery::new(workflow_id, message, core.now_ms());
    if let Some(run_id) = run_id {
        delivery = delivery.to_run(run_id);
    }
    let outcome = if durable {
        core.store.deliver_durable(delivery).await
    } else {
        core.store.deliver(delivery).await
    };
    drop(mark);
    if matches!(outcome?, crate::store::DeliverOutcome::Enqueued { .. }) {
        core.wake.workflow.notify_one();
    }
    Ok(())
}
