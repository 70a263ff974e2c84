//! One run in memory: its state, its tasks, and what a workflow task does.
//!
//! A workflow task is: apply the messages in arrival order (signals and updates run or start
//! their handlers, resolutions wake futures), then poll until every task is blocked. Its events
//! are the applied messages, then the commands in the order the code issued them, then a
//! `WorkflowTaskCompleted` marker carrying the task's time. Replay runs the same steps over the
//! recorded groups (see `rebuild.rs`).

use super::erased::Table;
use crate::data::feed::FeedDetail;
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::{ParentClosePolicy, ParentInfo, RunSummary};
use crate::data::update::{UpdateChange, UpdateOutcome, UpdateState};
use crate::error::{UpdateError, WfError, WorkflowError};
use crate::workflow::blocked::{self, InPart, SignalWaits, BLOCKED_QUERY};
use crate::workflow::commands::{Close, Commands};
use crate::workflow::executor::Executor;
use crate::workflow::{
    HandlerKind, LocalBoxFuture, LocalRequest, Role, Signal, Unfinished, WorkflowContext,
    WorkflowDefinition,
};
use std::borrow::Cow;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;
use tracing::Instrument;

/// Why a workflow task failed. The run is kept; the task is retried with backoff.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskError {
    /// Workflow code panicked.
    Panic(String),
    /// The code no longer matches the history.
    NonDeterminism(String),
    /// Something else (undecodable input, a busy loop).
    Other(String),
}

impl TaskError {
    pub fn message(&self) -> String {
        match self {
            TaskError::Panic(m) => format!("workflow code panicked: {m}"),
            TaskError::NonDeterminism(m) => format!("nondeterminism: {m}"),
            TaskError::Other(m) => m.clone(),
        }
    }

    /// The error a caller (a query on a run being rebuilt) sees.
    pub fn into_query_error(self) -> WfError {
        match self {
            TaskError::NonDeterminism(m) => WfError::NonDeterminism(m),
            other => WfError::QueryError(format!("could not rebuild the run: {}", other.message())),
        }
    }
}

/// History length at which `continue_as_new_suggested()` turns true (and a warning is logged).
pub(crate) const SUGGEST_CONTINUE_AS_NEW_EVENTS: u64 = 10_240;
/// History size at which `continue_as_new_suggested()` turns true.
pub(crate) const SUGGEST_CONTINUE_AS_NEW_BYTES: u64 = 10 * 1024 * 1024;

/// The facts a workflow task runs under, recorded in its `WorkflowTaskCompleted` marker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskMeta {
    pub time_ms: i64,
    pub suggest_continue_as_new: bool,
    pub build_id: Option<String>,
}

impl TaskMeta {
    /// The facts of a live task on a run with this history.
    pub fn live(
        time_ms: i64,
        next_event_id: u64,
        history_bytes: u64,
        build_id: Option<String>,
    ) -> Self {
        TaskMeta {
            time_ms,
            suggest_continue_as_new: next_event_id > SUGGEST_CONTINUE_AS_NEW_EVENTS
                || history_bytes >= SUGGEST_CONTINUE_AS_NEW_BYTES,
            build_id,
        }
    }
}

/// What a live workflow task produced.
#[derive(Debug)]
pub(crate) struct TaskOutput {
    /// Input events, commands, then the `WorkflowTaskCompleted` marker.
    pub events: Vec<EventKind>,
    pub update_states: Vec<UpdateChange>,
    pub close: Option<Close>,
    pub summary: RunSummary,
    /// Local activities the code called and the worker must run before the task commits
    /// (always empty on replay, where the history holds their outcomes).
    pub local_activities: Vec<LocalRequest>,
    /// After a live task, the signals its code waits for (names, earliest deadline) when
    /// those waits changed since the task before (a wait made again counts as new); for the
    /// feed's `signal_waiting` (never on replay, nor once the run closes).
    pub signal_waiting: Option<FeedDetail>,
}

/// A run in memory, whatever its workflow type.
pub(crate) trait Instance {
    /// Runs one workflow task over `messages`. On replay, `recorded` holds the commands the
    /// history records for this task (so `ctx.patched` can see which branch was taken), the
    /// updates among the messages were accepted in the past (no validation), and the output's
    /// events are only the commands the code issued (no inputs, no marker).
    fn run_task(
        &mut self,
        messages: Vec<Message>,
        meta: TaskMeta,
        recorded: Option<&[HistoryEvent]>,
    ) -> Result<TaskOutput, TaskError>;
    /// Runs one recorded workflow task again: `inputs` are its recorded input events (in
    /// arrival order), `recorded` its recorded commands. As [`run_task`](Self::run_task) on
    /// replay, with the messages read in place from the history (a signal's name and
    /// arguments are not copied to be applied).
    fn replay_task(
        &mut self,
        inputs: &[HistoryEvent],
        meta: TaskMeta,
        recorded: &[HistoryEvent],
    ) -> Result<TaskOutput, TaskError>;
    /// Answers a query from the current state.
    fn query(&self, name: &str, args: &Payload) -> Result<Payload, WfError>;
    /// The history position this instance has reached.
    fn next_event_id(&self) -> u64;
    /// Records the history position after a commit.
    fn set_next_event_id(&mut self, next_event_id: u64);
    /// The parent of this run, if it is a child.
    fn parent(&self) -> Option<ParentInfo>;
    /// Children still running, with their parent close policies.
    fn open_children(&self) -> Vec<(String, ParentClosePolicy)>;
    /// Whether the run's cancellation was requested (it takes no more signals).
    fn cancel_requested(&self) -> bool;
    /// Whether the run takes a resolution of activity `seq` now: scheduled and not resolved
    /// (or cancelled, whose late result it ignores).
    fn awaits_activity(&self, seq: u32) -> bool;
}

/// The in-memory run of workflow type `W`.
pub(crate) struct RunMachine<W: WorkflowDefinition> {
    def: Arc<Table<W>>,
    pub(super) core: Rc<RefCell<Commands>>,
    pub(super) state: Rc<RefCell<W>>,
    executor: Executor,
    /// The run's input until the main method starts (in the first task).
    input: Option<W::Input>,
    next_event_id: u64,
    /// The signal waits at the end of the last task, replayed or live.
    signal_waits: SignalWaits,
}

impl<W: WorkflowDefinition> Drop for RunMachine<W> {
    fn drop(&mut self) {
        self.core.borrow_mut().tearing_down = true;
        self.executor.clear();
    }
}

impl<W: WorkflowDefinition> RunMachine<W> {
    /// A run before its first task: `#[init]` has built its state from `input`.
    pub fn new(
        def: Arc<Table<W>>,
        workflow_id: &str,
        run_id: &str,
        random_seed: u64,
        parent: Option<ParentInfo>,
        attempt: u32,
        input: W::Input,
    ) -> Result<Self, TaskError> {
        let state = catch_unwind(AssertUnwindSafe(|| W::init_state(&input)))
            .map_err(|p| TaskError::Panic(format!("in #[init]: {}", panic_message(&*p))))?;
        let mut commands = Commands::new(workflow_id.into(), run_id.into(), random_seed);
        commands.parent = parent;
        commands.attempt = attempt;
        Ok(RunMachine {
            def,
            core: Rc::new(RefCell::new(commands)),
            state: Rc::new(RefCell::new(state)),
            executor: Executor::default(),
            input: Some(input),
            next_event_id: 2,
            signal_waits: SignalWaits::default(),
        })
    }

    pub(super) fn ctx(&self) -> WorkflowContext<W> {
        WorkflowContext {
            core: self.core.clone(),
            state: self.state.clone(),
        }
    }

    /// Applies one message; returns its history event for a live task (`replaying` false),
    /// none for a rejected update or on replay (the history has it already).
    fn apply(&mut self, message: Message, replaying: bool) -> Option<EventKind> {
        let event = (!replaying).then(|| message.to_event());
        match message {
            Message::Signal {
                name,
                args,
                sent_at,
                ..
            } => self.apply_signal(Cow::Owned(name), Cow::Owned(args), sent_at),
            Message::Update {
                update_id,
                name,
                args,
            } => {
                if !self.apply_update(update_id, name, args, !replaying) {
                    return None;
                }
            }
            Message::ActivityResolved { seq, resolution } => {
                self.core.borrow_mut().resolve_activity(seq, resolution)
            }
            Message::TimerFired { seq } => self.core.borrow_mut().fire_timer(seq),
            Message::CancelRequested { reason } => self.core.borrow_mut().request_cancel(reason),
            Message::ChildClosed { seq, outcome } => {
                self.core.borrow_mut().resolve_child(seq, outcome)
            }
            Message::LocalActivityResolved {
                seq,
                name,
                outcome,
                attempts,
            } => self
                .core
                .borrow_mut()
                .resolve_local_activity(seq, name, outcome, attempts),
        }
        event
    }

    /// The run's workflow id and run id, for a span's fields (read only when it is enabled).
    fn ids(&self) -> (String, String) {
        match self.core.try_borrow() {
            Ok(c) => (c.workflow_id.clone(), c.run_id.clone()),
            Err(_) => Default::default(),
        }
    }

    /// Applies one recorded input event on replay (commands and markers are no messages).
    fn apply_recorded(&mut self, kind: &EventKind) {
        match kind {
            EventKind::SignalReceived {
                name,
                args,
                sent_at,
                ..
            } => self.apply_signal(Cow::Borrowed(name), Cow::Borrowed(args), *sent_at),
            other => {
                if let Some(message) = Message::from_event(other) {
                    self.apply(message, true);
                }
            }
        }
    }

    /// Runs a signal's handler; a signal no handler takes is buffered. Borrowed from the
    /// history on replay: copied only where it is kept (buffered, or given to a dynamic handler).
    fn apply_signal(&mut self, name: Cow<'_, str>, args: Cow<'_, Payload>, sent_at: Option<i64>) {
        let def = self.def.clone();
        let handler = def.handler(&name, Role::Signal);
        if handler.is_none() && def.dynamic().signal.is_none() {
            self.core.borrow_mut().buffer_signal(Signal::new(
                name.into_owned(),
                args.into_owned(),
                sent_at,
            ));
            return;
        }
        let span = tracing::debug_span!(
            "signal",
            workflow_id = %self.ids().0,
            run_id = %self.ids().1,
            handler = %name,
        );
        let _entered = span.enter();
        let Some(handler) = handler else {
            let dynamic = def.dynamic().signal.as_ref().expect("checked above");
            return self.apply_dynamic_signal(dynamic, name.into_owned(), args.into_owned(), &span);
        };
        match &handler.kind {
            HandlerKind::SyncSignal(f) => {
                if let Err(e) = f(&mut self.state.borrow_mut(), &args) {
                    tracing::warn!(signal = %name, error = %e, "signal arguments do not decode; signal ignored");
                }
                self.core.borrow_mut().state_changed();
            }
            HandlerKind::AsyncSignal(f) => match f(self.ctx(), &args) {
                Ok(fut) => self.spawn_signal(&name, handler.unfinished, fut, &span),
                Err(e) => {
                    tracing::warn!(signal = %name, error = %e, "signal arguments do not decode; signal ignored")
                }
            },
            HandlerKind::Query(_)
            | HandlerKind::SyncUpdate { .. }
            | HandlerKind::AsyncUpdate { .. } => {
                unreachable!("Table::handler returned a handler of another role")
            }
        }
    }

    /// Runs an async signal handler as a task of the run.
    pub(super) fn spawn_signal(
        &mut self,
        name: &str,
        unfinished: Unfinished,
        fut: LocalBoxFuture<()>,
        span: &tracing::Span,
    ) {
        let id = self
            .core
            .borrow_mut()
            .handler_started(format!("signal {name}"), unfinished);
        let core = self.core.clone();
        let fut = async move {
            fut.await;
            core.borrow_mut().handler_finished(id);
        };
        let fut = InPart::new(id, self.core.clone(), fut);
        self.executor
            .spawn_handler(Box::pin(fut.instrument(span.clone())));
    }

    /// Validates (if `validate`) and starts an update; false if it was rejected.
    ///
    /// ```text
    /// Requested --(validator refuses, or no such update)--> Rejected      (nothing recorded)
    /// Requested --(validator accepts)--> Accepted --(handler returns)--> Completed
    /// ```
    fn apply_update(
        &mut self,
        update_id: String,
        name: String,
        args: Payload,
        validate: bool,
    ) -> bool {
        let def = self.def.clone();
        let span = tracing::debug_span!(
            "update",
            workflow_id = %self.ids().0,
            run_id = %self.ids().1,
            handler = %name,
            update_id = %update_id,
            validate,
        );
        let _entered = span.enter();
        let Some(handler) = def.handler(&name, Role::Update) else {
            return match &def.dynamic().update {
                Some(dynamic) => {
                    self.apply_dynamic_update(dynamic, update_id, name, args, validate, &span)
                }
                None => {
                    let msg = format!("unknown update {name:?}{}", def.names_of(Role::Update));
                    self.reject_update(update_id, name, msg)
                }
            };
        };
        if validate {
            let verdict =
                (handler.check_args)(&args).and_then(|()| match handler.kind.validator() {
                    Some(v) => v(&self.state.borrow(), &args),
                    None => Ok(Ok(())),
                });
            match verdict {
                Ok(Ok(())) => {}
                Ok(Err(rejection)) => {
                    return self.reject_update(update_id, name, rejection.message)
                }
                Err(e) => return self.reject_update(update_id, name, e.to_string()),
            }
        }
        self.accept_update(&update_id, &name);
        match &handler.kind {
            HandlerKind::SyncUpdate { handler: f, .. } => {
                let outcome = match f(&mut self.state.borrow_mut(), &args) {
                    Ok(Ok(p)) => UpdateOutcome::Completed(p),
                    Ok(Err(e)) => UpdateOutcome::Failed(e.message),
                    Err(e) => UpdateOutcome::Failed(e.to_string()),
                };
                self.complete_sync_update(update_id, name, outcome);
            }
            HandlerKind::AsyncUpdate { handler: f, .. } => match f(self.ctx(), &args) {
                Ok(fut) => self.spawn_update(update_id, name, handler.unfinished, fut, &span),
                Err(e) => self.core.borrow_mut().complete_update(
                    update_id,
                    name,
                    UpdateOutcome::Failed(e.to_string()),
                ),
            },
            HandlerKind::SyncSignal(_) | HandlerKind::AsyncSignal(_) | HandlerKind::Query(_) => {
                unreachable!("Table::handler returned a handler of another role")
            }
        }
        true
    }

    /// Records a rejected update (nothing goes to history); returns false.
    pub(super) fn reject_update(&self, update_id: String, name: String, msg: String) -> bool {
        self.core
            .borrow_mut()
            .update_state(update_id, name, UpdateState::Rejected(msg));
        false
    }

    /// Records that an update passed validation.
    pub(super) fn accept_update(&self, update_id: &str, name: &str) {
        self.core.borrow_mut().update_state(
            update_id.to_string(),
            name.to_string(),
            UpdateState::Accepted,
        );
    }

    /// Records the outcome of a sync update handler.
    pub(super) fn complete_sync_update(
        &self,
        update_id: String,
        name: String,
        outcome: UpdateOutcome,
    ) {
        let mut core = self.core.borrow_mut();
        core.complete_update(update_id, name, outcome);
        core.state_changed();
    }

    /// Runs an async update handler as a task of the run; its outcome completes the update.
    pub(super) fn spawn_update(
        &mut self,
        update_id: String,
        name: String,
        unfinished: Unfinished,
        fut: LocalBoxFuture<Result<Payload, UpdateError>>,
        span: &tracing::Span,
    ) {
        let id = self
            .core
            .borrow_mut()
            .handler_started(format!("update {name} (id {update_id})"), unfinished);
        let core = self.core.clone();
        let fut = async move {
            let outcome = match fut.await {
                Ok(p) => UpdateOutcome::Completed(p),
                Err(e) => UpdateOutcome::Failed(e.message),
            };
            let mut core = core.borrow_mut();
            core.complete_update(update_id, name, outcome);
            core.handler_finished(id);
        };
        let fut = InPart::new(id, self.core.clone(), fut);
        self.executor
            .spawn_handler(Box::pin(fut.instrument(span.clone())));
    }

    fn start_main(&mut self) {
        let Some(input) = self.input.take() else {
            return;
        };
        let fut = W::start_run(self.ctx(), input);
        let core = self.core.clone();
        self.executor.spawn_main(Box::pin(async move {
            let close = match fut.await {
                Ok(v) => match Payload::encode(&v) {
                    Ok(p) => Close::Completed(p),
                    Err(e) => {
                        Close::Failed(format!("the result could not be encoded: {e}"), "payload")
                    }
                },
                Err(WorkflowError::ContinueAsNew(input)) => Close::ContinuedAsNew(input),
                Err(e) => match core.borrow().cancel_requested.clone() {
                    Some(reason) if e.is_cancellation() => Close::Cancelled(reason),
                    _ => Close::Failed(e.to_string(), e.code()),
                },
            };
            core.borrow_mut().close_run(close);
        }));
    }

    /// Ends the run as cancelled when its main method is blocked on a wait the cancellation
    /// request interrupted (see `workflow/cancel.rs`): as if the wait had returned a
    /// cancellation error and `?` had passed it up.
    fn end_if_interrupted(&mut self) {
        let reason = {
            let core = self.core.borrow();
            match &core.cancel_requested {
                Some(reason) if core.close.is_none() && core.interrupted_main_waits > 0 => {
                    reason.clone()
                }
                _ => return,
            }
        };
        // Dropping it cancels what it still waited on (timers, for instance) first.
        if self.executor.drop_main() {
            self.core.borrow_mut().close_run(Close::Cancelled(reason));
        }
    }

    fn summary(&self) -> RunSummary {
        let core = self.core.borrow();
        RunSummary {
            buffered_signals: core
                .buffered_signals
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            running_handlers: core
                .live_handlers
                .iter()
                .map(|h| h.description.clone())
                .collect(),
            open_children: core.open_children(),
            cancel_requested: core.cancel_requested.is_some(),
        }
    }

    /// Prepares the command log for a task: its time, a fresh command list, the patch markers
    /// the history recorded for it (on replay).
    fn begin_task(
        &self,
        meta: &TaskMeta,
        recorded: Option<&[HistoryEvent]>,
    ) -> Result<(), TaskError> {
        let mut core = self.core.borrow_mut();
        core.replay_patches = recorded.map(|r| {
            r.iter()
                .enumerate()
                .filter_map(|(i, e)| match &e.kind {
                    EventKind::MarkerRecorded { name, .. }
                        if crate::workflow::patch::is_patch_marker(&e.kind) =>
                    {
                        Some((i, name.clone()))
                    }
                    _ => None,
                })
                .collect()
        });
        if core.close.is_some() {
            return Err(TaskError::Other("the run already closed in memory".into()));
        }
        core.task_time_ms = meta.time_ms;
        core.issued.clear();
        core.update_states.clear();
        core.local_requests.clear();
        if meta.suggest_continue_as_new && !core.suggest_continue_as_new {
            tracing::warn!(run_id = %core.run_id, events = core.history_len, "history is large; continue as new");
        }
        core.suggest_continue_as_new = meta.suggest_continue_as_new;
        Ok(())
    }

    /// Logs a warning per handler still running when the run closes (unless abandoned).
    fn warn_unfinished(core: &Commands) {
        for h in core
            .live_handlers
            .iter()
            .filter(|h| h.unfinished == Unfinished::Warn)
        {
            tracing::warn!(
                workflow_id = %core.workflow_id,
                run_id = %core.run_id,
                handler = %h.description,
                "the run finished while a handler was still running; wait with ctx.handlers_drained() \
                 before returning, or mark the handler unfinished = \"abandon\""
            );
        }
    }

    /// One workflow task (see the module's opening comment): `apply_inputs` applies its
    /// messages and returns the events they record (none on replay).
    fn task(
        &mut self,
        meta: TaskMeta,
        recorded: Option<&[HistoryEvent]>,
        apply_inputs: impl FnOnce(&mut Self) -> Vec<EventKind>,
    ) -> Result<TaskOutput, TaskError> {
        let replaying = recorded.is_some();
        self.begin_task(&meta, recorded)?;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _polling = blocked::polling(&self.core);
            let events = apply_inputs(self);
            self.start_main();
            let core = self.core.clone();
            let busy = self
                .executor
                .run_until_blocked(&|| core.borrow().close.is_some(), &|main| {
                    core.borrow_mut().polling_main = main
                });
            self.end_if_interrupted();
            (events, busy)
        }));
        let (mut events, busy) = result.map_err(|p| TaskError::Panic(panic_message(&*p)))?;
        if busy.is_err() {
            return Err(TaskError::Other(
                "workflow code kept waking itself without blocking (a busy loop); it must await an activity, timer or condition".into(),
            ));
        }
        let mut core = self.core.borrow_mut();
        if let Some(m) = core.mismatch.take() {
            return Err(TaskError::NonDeterminism(m));
        }
        // Taken, not drained: a run kept in the cache (a closed one too) would hold the
        // list's capacity for as long as it stays there.
        let issued = std::mem::take(&mut core.issued);
        if events.is_empty() {
            events = issued;
        } else {
            events.extend(issued);
        }
        let local_activities = match replaying {
            true => Vec::new(),
            false => core.take_local_requests(),
        };
        // A task that recorded nothing (e.g. it only rejected an update) leaves no trace:
        // replay without it reaches the same state. One that called local activities ends
        // here even so: their outcomes come as inputs of the next group of events.
        if (!events.is_empty() || !local_activities.is_empty()) && !replaying {
            events.push(EventKind::WorkflowTaskCompleted {
                task_time_ms: meta.time_ms,
                suggest_continue_as_new: meta.suggest_continue_as_new,
                build_id: meta.build_id.clone(),
            });
        }
        let close = core.close.clone();
        if close.is_some() {
            Self::warn_unfinished(&core);
        }
        let update_states = std::mem::take(&mut core.update_states);
        let waits = core.blocked.signal_waits();
        drop(core);
        let changed = waits.keys != self.signal_waits.keys;
        let signal_waiting = (changed && !replaying && close.is_none() && !waits.names.is_empty())
            .then(|| FeedDetail {
                signals: waits.names.clone(),
                deadline_ms: waits.deadline_ms,
                ..FeedDetail::default()
            });
        self.signal_waits = waits;
        Ok(TaskOutput {
            events,
            update_states,
            close,
            summary: self.summary(),
            local_activities,
            signal_waiting,
        })
    }
}

impl<W: WorkflowDefinition> Instance for RunMachine<W> {
    fn run_task(
        &mut self,
        messages: Vec<Message>,
        meta: TaskMeta,
        recorded: Option<&[HistoryEvent]>,
    ) -> Result<TaskOutput, TaskError> {
        let replaying = recorded.is_some();
        self.task(meta, recorded, |machine| {
            let mut events = Vec::with_capacity(messages.len() + 2);
            for message in messages {
                events.extend(machine.apply(message, replaying));
            }
            events
        })
    }

    fn replay_task(
        &mut self,
        inputs: &[HistoryEvent],
        meta: TaskMeta,
        recorded: &[HistoryEvent],
    ) -> Result<TaskOutput, TaskError> {
        self.task(meta, Some(recorded), |machine| {
            for input in inputs {
                machine.apply_recorded(&input.kind);
            }
            Vec::new()
        })
    }

    fn query(&self, name: &str, args: &Payload) -> Result<Payload, WfError> {
        let _span = tracing::debug_span!(
            "query",
            workflow_id = %self.ids().0,
            run_id = %self.ids().1,
            handler = %name,
        )
        .entered();
        if name == BLOCKED_QUERY {
            let core = self.core.borrow();
            let main = self.executor.main_running() && core.close.is_none();
            return Ok(Payload::encode(
                &core.blocked.parts(main, &core.live_handlers),
            )?);
        }
        let named = match self.def.handler(name, Role::Query).map(|h| &h.kind) {
            Some(HandlerKind::Query(f)) => Some(*f),
            Some(_) => unreachable!("Table::handler returned a handler of another role"),
            None => None,
        };
        // A named query wins; the dynamic one answers the others.
        let dynamic = self.def.dynamic().query;
        if named.is_none() && dynamic.is_none() {
            return Err(self.def.unknown_query(name));
        }
        let state = self
            .state
            .try_borrow()
            .map_err(|_| WfError::QueryError("the workflow state is being changed".into()))?;
        let answer = || match (named, dynamic) {
            (Some(f), _) => f(&state, args),
            (None, Some(f)) => f(&state, name.to_string(), args.clone()),
            (None, None) => unreachable!("checked above"),
        };
        match catch_unwind(AssertUnwindSafe(answer)) {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(e)) => Err(WfError::PayloadError(e)),
            Err(p) => Err(WfError::QueryError(format!(
                "query {name} panicked: {}",
                panic_message(&*p)
            ))),
        }
    }

    fn next_event_id(&self) -> u64 {
        self.next_event_id
    }

    fn set_next_event_id(&mut self, next_event_id: u64) {
        self.next_event_id = next_event_id;
        self.core.borrow_mut().history_len = next_event_id.saturating_sub(1);
    }

    fn parent(&self) -> Option<ParentInfo> {
        self.core.borrow().parent.clone()
    }

    fn open_children(&self) -> Vec<(String, ParentClosePolicy)> {
        self.core.borrow().open_children()
    }

    fn cancel_requested(&self) -> bool {
        self.core.borrow().cancel_requested.is_some()
    }

    fn awaits_activity(&self, seq: u32) -> bool {
        self.core.borrow().awaits_activity(seq)
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}
