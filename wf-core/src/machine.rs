//! One run in memory: its state, its tasks, and the replay of its history.
//!
//! A workflow task is: apply the inputs in arrival order (signals and updates run or start
//! their handlers, resolutions wake futures), then poll until every task is blocked. Its events
//! are the input events, then the commands in the order the code issued them, then a
//! `WorkflowTaskCompleted` marker carrying the task's time. Replay runs the same steps over the
//! recorded groups and compares the commands with the recorded ones.

use crate::commands::{Close, Commands};
use crate::context::WorkflowContext;
use crate::definition::{Handler, HandlerKind, Unfinished, WorkflowDefinition};
use crate::error::{WfError, WorkflowError};
use crate::executor::Executor;
use crate::history::{
    ChildOutcome, EventKind, HistoryEvent, ParentClosePolicy, ParentInfo, UpdateOutcome,
};
use crate::payload::{Payload, PayloadError};
use crate::store::{ActivityResolution, InboxKind, UpdateState};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;

/// One input of a workflow task.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    Signal {
        name: String,
        args: Payload,
        signal_id: Option<String>,
    },
    /// A new update, validated before it is accepted.
    UpdateRequest {
        update_id: String,
        name: String,
        args: Payload,
    },
    /// An update accepted in the past (replay: no validation).
    UpdateAccepted {
        update_id: String,
        name: String,
        args: Payload,
    },
    ActivityResolved {
        seq: u32,
        resolution: ActivityResolution,
    },
    TimerFired {
        seq: u32,
    },
    CancelRequested {
        reason: String,
    },
    ChildClosed {
        seq: u32,
        outcome: ChildOutcome,
    },
}

impl From<InboxKind> for Input {
    fn from(kind: InboxKind) -> Self {
        match kind {
            InboxKind::Signal {
                name,
                args,
                signal_id,
            } => Input::Signal {
                name,
                args,
                signal_id,
            },
            InboxKind::Update {
                update_id,
                name,
                args,
            } => Input::UpdateRequest {
                update_id,
                name,
                args,
            },
            InboxKind::ActivityResolved { seq, resolution } => {
                Input::ActivityResolved { seq, resolution }
            }
            InboxKind::TimerFired { seq } => Input::TimerFired { seq },
            InboxKind::CancelRequested { reason } => Input::CancelRequested { reason },
            InboxKind::ChildClosed { seq, outcome } => Input::ChildClosed { seq, outcome },
        }
    }
}

impl Input {
    /// Whether `kind` records an input of a task (not a command).
    fn is_input(kind: &EventKind) -> bool {
        matches!(
            kind,
            EventKind::SignalReceived { .. }
                | EventKind::UpdateAccepted { .. }
                | EventKind::ActivityCompleted { .. }
                | EventKind::ActivityFailed { .. }
                | EventKind::ActivityTimedOut { .. }
                | EventKind::TimerFired { .. }
                | EventKind::CancelRequested { .. }
                | EventKind::ChildWorkflowClosed { .. }
        )
    }

    /// The recorded input event, if `kind` is one.
    fn from_event(kind: &EventKind) -> Option<Input> {
        Some(match kind.clone() {
            EventKind::SignalReceived {
                name,
                args,
                signal_id,
            } => Input::Signal {
                name,
                args,
                signal_id,
            },
            EventKind::UpdateAccepted {
                update_id,
                name,
                args,
            } => Input::UpdateAccepted {
                update_id,
                name,
                args,
            },
            EventKind::ActivityCompleted {
                seq,
                result,
                attempts,
            } => Input::ActivityResolved {
                seq,
                resolution: ActivityResolution::Completed { result, attempts },
            },
            EventKind::ActivityFailed {
                seq,
                failure,
                attempts,
            } => Input::ActivityResolved {
                seq,
                resolution: ActivityResolution::Failed { failure, attempts },
            },
            EventKind::ActivityTimedOut {
                seq,
                timeout,
                attempts,
            } => Input::ActivityResolved {
                seq,
                resolution: ActivityResolution::TimedOut { timeout, attempts },
            },
            EventKind::TimerFired { seq } => Input::TimerFired { seq },
            EventKind::CancelRequested { reason } => Input::CancelRequested { reason },
            EventKind::ChildWorkflowClosed { seq, outcome } => Input::ChildClosed { seq, outcome },
            _ => return None,
        })
    }

    fn to_event(&self) -> Option<EventKind> {
        Some(match self.clone() {
            Input::Signal {
                name,
                args,
                signal_id,
            } => EventKind::SignalReceived {
                name,
                args,
                signal_id,
            },
            Input::UpdateRequest { .. } => return None,
            Input::UpdateAccepted {
                update_id,
                name,
                args,
            } => EventKind::UpdateAccepted {
                update_id,
                name,
                args,
            },
            Input::ActivityResolved { seq, resolution } => match resolution {
                ActivityResolution::Completed { result, attempts } => {
                    EventKind::ActivityCompleted {
                        seq,
                        result,
                        attempts,
                    }
                }
                ActivityResolution::Failed { failure, attempts } => EventKind::ActivityFailed {
                    seq,
                    failure,
                    attempts,
                },
                ActivityResolution::TimedOut { timeout, attempts } => EventKind::ActivityTimedOut {
                    seq,
                    timeout,
                    attempts,
                },
            },
            Input::TimerFired { seq } => EventKind::TimerFired { seq },
            Input::CancelRequested { reason } => EventKind::CancelRequested { reason },
            Input::ChildClosed { seq, outcome } => EventKind::ChildWorkflowClosed { seq, outcome },
        })
    }
}

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
}

/// What `describe()` shows of a run's in-memory state; stored with each commit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Signals received with no handler for their name, oldest first.
    pub buffered_signals: Vec<String>,
    /// Async handlers still running ("update change_goal (id u-1)", "signal note").
    pub running_handlers: Vec<String>,
    /// Children still running, with their parent close policies (applied when the run is
    /// terminated from outside).
    #[serde(default)]
    pub open_children: Vec<(String, ParentClosePolicy)>,
}

/// History length at which `continue_as_new_suggested()` turns true (and a warning is logged).
pub const SUGGEST_CONTINUE_AS_NEW_EVENTS: u64 = 10_240;
/// History size at which `continue_as_new_suggested()` turns true.
pub const SUGGEST_CONTINUE_AS_NEW_BYTES: u64 = 10 * 1024 * 1024;

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

/// The name of the marker `ctx.patched(id)` records.
pub(crate) fn patch_marker_name(id: &str) -> String {
    format!("patch:{id}")
}

fn is_patch_marker(kind: &EventKind) -> bool {
    matches!(kind, EventKind::MarkerRecorded { name, .. } if name.starts_with("patch:"))
}

/// A patch marker written by `deprecate_patch` (value `true`): optional on replay.
fn is_deprecated_patch_marker(kind: &EventKind) -> bool {
    matches!(kind, EventKind::MarkerRecorded { name, value, .. }
        if name.starts_with("patch:") && value.decode::<bool>().unwrap_or(false))
}

/// What a live workflow task produced.
#[derive(Debug)]
pub(crate) struct TaskOutput {
    /// Input events, commands, then the `WorkflowTaskCompleted` marker.
    pub events: Vec<EventKind>,
    pub update_states: Vec<(String, String, UpdateState)>,
    pub close: Option<Close>,
    pub summary: RunSummary,
}

/// A run in memory, whatever its workflow type.
pub(crate) trait Instance {
    /// Runs one workflow task over `inputs`. On replay, `recorded` holds the commands the
    /// history records for this task (so `ctx.patched` can see which branch was taken), and
    /// the output's events are only the commands the code issued (no inputs, no marker).
    fn run_task(
        &mut self,
        inputs: Vec<Input>,
        meta: TaskMeta,
        recorded: Option<&[HistoryEvent]>,
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
}

/// A registered workflow type, whatever it is.
pub(crate) trait ErasedDefinition: Send + Sync {
    fn name(&self) -> &'static str;
    fn new_instance(
        &self,
        workflow_id: &str,
        run_id: &str,
        started: &HistoryEvent,
    ) -> Result<Box<dyn Instance>, TaskError>;
    fn check_input(&self, input: &Payload) -> Result<(), PayloadError>;
    /// Checks that `name` is a handler of role `role` and that `args` decode for it.
    fn check_message(&self, role: &'static str, name: &str, args: &Payload) -> Result<(), WfError>;
}

/// A registered workflow type: its handler table, shared by all its runs.
pub(crate) struct Definition<W: WorkflowDefinition> {
    table: Arc<Table<W>>,
}

impl<W: WorkflowDefinition> Definition<W> {
    pub fn new() -> Result<Self, String> {
        Ok(Definition {
            table: Arc::new(Table::new()?),
        })
    }

    fn handler(&self, name: &str) -> Option<&Handler<W>> {
        self.table.handler(name)
    }

    fn names_of(&self, role: &str) -> String {
        self.table.names_of(role)
    }
}

/// A workflow type's handlers, by wire name.
pub(crate) struct Table<W: WorkflowDefinition> {
    handlers: Vec<Handler<W>>,
    index: HashMap<&'static str, usize>,
}

impl<W: WorkflowDefinition> Table<W> {
    fn new() -> Result<Self, String> {
        let handlers = W::handlers();
        let mut index = HashMap::new();
        for (i, h) in handlers.iter().enumerate() {
            if index.insert(h.name, i).is_some() {
                return Err(format!(
                    "workflow {} has two handlers named {:?}",
                    W::NAME,
                    h.name
                ));
            }
        }
        Ok(Table { handlers, index })
    }

    fn handler(&self, name: &str) -> Option<&Handler<W>> {
        self.index.get(name).map(|&i| &self.handlers[i])
    }

    fn names_of(&self, role: &str) -> String {
        let names: Vec<&str> = self
            .handlers
            .iter()
            .filter(|h| h.kind.role() == role)
            .map(|h| h.name)
            .collect();
        if names.is_empty() {
            format!("; {} has no {role} handlers", W::NAME)
        } else {
            format!("; {} has {role}s: {}", W::NAME, names.join(", "))
        }
    }
}

impl<W: WorkflowDefinition> ErasedDefinition for Definition<W> {
    fn name(&self) -> &'static str {
        W::NAME
    }

    fn new_instance(
        &self,
        workflow_id: &str,
        run_id: &str,
        started: &HistoryEvent,
    ) -> Result<Box<dyn Instance>, TaskError> {
        let EventKind::WorkflowStarted {
            input,
            random_seed,
            parent,
            ..
        } = &started.kind
        else {
            return Err(TaskError::Other(format!(
                "run {run_id}: history starts with {} instead of WorkflowStarted",
                started.kind.name()
            )));
        };
        let input: W::Input = input.decode().map_err(|e| {
            TaskError::Other(format!(
                "run {run_id}: the start input does not decode: {e}"
            ))
        })?;
        let state = catch_unwind(AssertUnwindSafe(|| W::init_state(&input)))
            .map_err(|p| TaskError::Panic(format!("in #[init]: {}", panic_message(&*p))))?;
        let mut commands = Commands::new(workflow_id.into(), run_id.into(), *random_seed);
        commands.parent = parent.clone();
        Ok(Box::new(RunMachine::<W> {
            def: self.table.clone(),
            core: Rc::new(RefCell::new(commands)),
            state: Rc::new(RefCell::new(state)),
            executor: Executor::default(),
            input: Some(input),
            next_event_id: 2,
        }))
    }

    fn check_input(&self, input: &Payload) -> Result<(), PayloadError> {
        input.decode::<W::Input>().map(|_| ())
    }

    fn check_message(&self, role: &'static str, name: &str, args: &Payload) -> Result<(), WfError> {
        match self.handler(name) {
            Some(h) if h.kind.role() == role => (h.check_args)(args).map_err(WfError::from),
            // A signal with no handler is kept and buffered: `ctx.wait_for_signal` takes it,
            // or a later version of the code with a handler for it.
            None if role == "signal" => Ok(()),
            _ if role == "query" => Err(WfError::QueryError(format!(
                "unknown query {name:?}{}",
                self.names_of(role)
            ))),
            _ => Err(WfError::Unknown {
                kind: role,
                name: name.to_string(),
                hint: self.names_of(role),
            }),
        }
    }
}

/// The in-memory run of workflow type `W`.
struct RunMachine<W: WorkflowDefinition> {
    def: Arc<Table<W>>,
    core: Rc<RefCell<Commands>>,
    state: Rc<RefCell<W>>,
    executor: Executor,
    /// The run's input until the main method starts (in the first task).
    input: Option<W::Input>,
    next_event_id: u64,
}

impl<W: WorkflowDefinition> Drop for RunMachine<W> {
    fn drop(&mut self) {
        self.core.borrow_mut().tearing_down = true;
        self.executor.clear();
    }
}

impl<W: WorkflowDefinition> RunMachine<W> {
    fn ctx(&self) -> WorkflowContext<W> {
        WorkflowContext {
            core: self.core.clone(),
            state: self.state.clone(),
        }
    }

    /// Applies one input; returns its history event (None for a rejected update).
    /// Applies one input; returns its history event when `record` (live tasks; replay
    /// already has it).
    fn apply(&mut self, input: Input, record: bool) -> Option<EventKind> {
        let event = if record { input.to_event() } else { None };
        match input {
            Input::Signal { name, args, .. } => self.apply_signal(name, args),
            Input::UpdateRequest {
                update_id,
                name,
                args,
            } => {
                return self.apply_update(update_id, name, args, true);
            }
            Input::UpdateAccepted {
                update_id,
                name,
                args,
            } => {
                self.apply_update(update_id, name, args, false);
            }
            Input::ActivityResolved { seq, resolution } => {
                self.core.borrow_mut().resolve_activity(seq, resolution)
            }
            Input::TimerFired { seq } => self.core.borrow_mut().fire_timer(seq),
            Input::CancelRequested { reason } => self.core.borrow_mut().request_cancel(reason),
            Input::ChildClosed { seq, outcome } => {
                self.core.borrow_mut().resolve_child(seq, outcome)
            }
        }
        event
    }

    fn apply_signal(&mut self, name: String, args: Payload) {
        let def = self.def.clone();
        let handler = match def.handler(&name) {
            Some(h) if h.kind.role() == "signal" => h,
            _ => {
                let mut core = self.core.borrow_mut();
                core.buffered_signals.push((name, args));
                core.state_changed();
                return;
            }
        };
        match &handler.kind {
            HandlerKind::SyncSignal(f) => {
                if let Err(e) = f(&mut self.state.borrow_mut(), &args) {
                    tracing::warn!(signal = %name, error = %e, "signal arguments do not decode; signal ignored");
                }
                self.core.borrow_mut().state_changed();
            }
            HandlerKind::AsyncSignal(f) => match f(self.ctx(), &args) {
                Ok(fut) => {
                    let id = self
                        .core
                        .borrow_mut()
                        .handler_started(format!("signal {name}"), handler.unfinished);
                    let core = self.core.clone();
                    self.executor.spawn_handler(Box::pin(async move {
                        fut.await;
                        core.borrow_mut().handler_finished(id);
                    }));
                }
                Err(e) => {
                    tracing::warn!(signal = %name, error = %e, "signal arguments do not decode; signal ignored")
                }
            },
            _ => unreachable!("role checked above"),
        }
    }

    /// Validates (if `validate`) and starts an update. Returns its `UpdateAccepted` event.
    fn apply_update(
        &mut self,
        update_id: String,
        name: String,
        args: Payload,
        validate: bool,
    ) -> Option<EventKind> {
        let def = self.def.clone();
        let reject = |core: &Rc<RefCell<Commands>>, msg: String| {
            core.borrow_mut().update_states.push((
                update_id.clone(),
                name.clone(),
                UpdateState::Rejected(msg),
            ));
            None
        };
        let Some(handler) = def.handler(&name).filter(|h| h.kind.role() == "update") else {
            return reject(
                &self.core,
                format!("unknown update {name:?}{}", def.names_of("update")),
            );
        };
        if validate {
            let validator = match &handler.kind {
                HandlerKind::SyncUpdate { validator, .. }
                | HandlerKind::AsyncUpdate { validator, .. } => *validator,
                _ => None,
            };
            if let Err(e) = (handler.check_args)(&args) {
                return reject(&self.core, e.to_string());
            }
            if let Some(v) = validator {
                match v(&self.state.borrow(), &args) {
                    Ok(Ok(())) => {}
                    Ok(Err(rejection)) => return reject(&self.core, rejection.message),
                    Err(e) => return reject(&self.core, e.to_string()),
                }
            }
        }
        self.core.borrow_mut().update_states.push((
            update_id.clone(),
            name.clone(),
            UpdateState::Accepted,
        ));
        let event = EventKind::UpdateAccepted {
            update_id: update_id.clone(),
            name: name.clone(),
            args: args.clone(),
        };
        match &handler.kind {
            HandlerKind::SyncUpdate { handler: f, .. } => {
                let outcome = match f(&mut self.state.borrow_mut(), &args) {
                    Ok(Ok(p)) => UpdateOutcome::Completed(p),
                    Ok(Err(e)) => UpdateOutcome::Failed(e.message),
                    Err(e) => UpdateOutcome::Failed(e.to_string()),
                };
                let mut core = self.core.borrow_mut();
                core.complete_update(update_id, name, outcome);
                core.state_changed();
            }
            HandlerKind::AsyncUpdate { handler: f, .. } => match f(self.ctx(), &args) {
                Ok(fut) => {
                    let id = self.core.borrow_mut().handler_started(
                        format!("update {name} (id {update_id})"),
                        handler.unfinished,
                    );
                    let core = self.core.clone();
                    self.executor.spawn_handler(Box::pin(async move {
                        let outcome = match fut.await {
                            Ok(p) => UpdateOutcome::Completed(p),
                            Err(e) => UpdateOutcome::Failed(e.message),
                        };
                        let mut core = core.borrow_mut();
                        core.complete_update(update_id, name, outcome);
                        core.handler_finished(id);
                    }));
                }
                Err(e) => self.core.borrow_mut().complete_update(
                    update_id,
                    name,
                    UpdateOutcome::Failed(e.to_string()),
                ),
            },
            _ => unreachable!("role checked above"),
        }
        Some(event)
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
                    Err(e) => Close::Failed(format!("the result could not be encoded: {e}")),
                },
                Err(WorkflowError::ContinueAsNew(input)) => Close::ContinuedAsNew(input),
                Err(e) => match core.borrow().cancel_requested.clone() {
                    Some(reason) if e.is_cancellation() => Close::Cancelled(reason),
                    _ => Close::Failed(e.to_string()),
                },
            };
            core.borrow_mut().close_run(close);
        }));
    }

    fn summary(&self) -> RunSummary {
        let core = self.core.borrow();
        RunSummary {
            buffered_signals: core
                .buffered_signals
                .iter()
                .map(|(n, _)| n.clone())
                .collect(),
            running_handlers: core
                .live_handlers
                .iter()
                .map(|h| h.description.clone())
                .collect(),
            open_children: core.open_children(),
        }
    }
}

impl<W: WorkflowDefinition> Instance for RunMachine<W> {
    fn run_task(
        &mut self,
        inputs: Vec<Input>,
        meta: TaskMeta,
        recorded: Option<&[HistoryEvent]>,
    ) -> Result<TaskOutput, TaskError> {
        let replaying = recorded.is_some();
        {
            let mut core = self.core.borrow_mut();
            core.replay_patches = recorded.map(|r| {
                r.iter()
                    .enumerate()
                    .filter_map(|(i, e)| match &e.kind {
                        EventKind::MarkerRecorded { name, .. } if name.starts_with("patch:") => {
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
            if meta.suggest_continue_as_new && !core.suggest_continue_as_new {
                tracing::warn!(run_id = %core.run_id, events = core.history_len, "history is large; continue as new");
            }
            core.suggest_continue_as_new = meta.suggest_continue_as_new;
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut events = Vec::with_capacity(inputs.len() + 2);
            for input in inputs {
                if let Some(e) = self.apply(input, !replaying) {
                    events.push(e);
                }
            }
            self.start_main();
            let core = self.core.clone();
            let busy = self
                .executor
                .run_until_blocked(&|| core.borrow().close.is_some());
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
        events.append(&mut core.issued);
        // A task that recorded nothing (e.g. it only rejected an update) leaves no trace:
        // replay without it reaches the same state.
        if !events.is_empty() && !replaying {
            events.push(EventKind::WorkflowTaskCompleted {
                task_time_ms: meta.time_ms,
                suggest_continue_as_new: meta.suggest_continue_as_new,
                build_id: meta.build_id.clone(),
            });
        }
        let close = core.close.clone();
        if close.is_some() {
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
        let update_states = std::mem::take(&mut core.update_states);
        drop(core);
        Ok(TaskOutput {
            events,
            update_states,
            close,
            summary: self.summary(),
        })
    }

    fn query(&self, name: &str, args: &Payload) -> Result<Payload, WfError> {
        let handler = self
            .def
            .handler(name)
            .filter(|h| h.kind.role() == "query")
            .ok_or_else(|| {
                WfError::QueryError(format!(
                    "unknown query {name:?}{}",
                    self.def.names_of("query")
                ))
            })?;
        let HandlerKind::Query(f) = &handler.kind else {
            unreachable!("role checked above")
        };
        let state = self
            .state
            .try_borrow()
            .map_err(|_| WfError::QueryError("the workflow state is being changed".into()))?;
        match catch_unwind(AssertUnwindSafe(|| f(&state, args))) {
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

    fn parent(&self) -> Option<ParentInfo> {
        self.core.borrow().parent.clone()
    }

    fn open_children(&self) -> Vec<(String, ParentClosePolicy)> {
        self.core.borrow().open_children()
    }

    fn set_next_event_id(&mut self, next_event_id: u64) {
        self.next_event_id = next_event_id;
        self.core.borrow_mut().history_len = next_event_id - 1;
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

/// Whether the code's command `actual` is the recorded command `recorded`.
fn same_command(recorded: &EventKind, actual: &EventKind) -> bool {
    use EventKind::*;
    match (recorded, actual) {
        (
            ActivityScheduled {
                seq: a, name: n, ..
            },
            ActivityScheduled {
                seq: b, name: m, ..
            },
        ) => a == b && n == m,
        (TimerStarted { seq: a, .. }, TimerStarted { seq: b, .. }) => a == b,
        (TimerCancelled { seq: a }, TimerCancelled { seq: b }) => a == b,
        (
            MarkerRecorded {
                seq: a, name: n, ..
            },
            MarkerRecorded {
                seq: b, name: m, ..
            },
        ) => a == b && n == m,
        (UpdateCompleted { update_id: a, .. }, UpdateCompleted { update_id: b, .. }) => a == b,
        (
            ChildWorkflowStarted {
                seq: a,
                workflow_id: n,
                ..
            },
            ChildWorkflowStarted {
                seq: b,
                workflow_id: m,
                ..
            },
        ) => a == b && n == m,
        (
            ExternalSignalSent {
                seq: a,
                workflow_id: n,
                name: x,
                ..
            },
            ExternalSignalSent {
                seq: b,
                workflow_id: m,
                name: y,
                ..
            },
        ) => a == b && n == m && x == y,
        (ActivityCancelled { seq: a }, ActivityCancelled { seq: b }) => a == b,
        (
            ChildCancelRequested {
                seq: a,
                workflow_id: n,
            },
            ChildCancelRequested {
                seq: b,
                workflow_id: m,
            },
        ) => a == b && n == m,
        (WorkflowCancelled { .. }, WorkflowCancelled { .. }) => true,
        (WorkflowCompleted { .. }, WorkflowCompleted { .. })
        | (WorkflowFailed { .. }, WorkflowFailed { .. })
        | (ContinuedAsNew { .. }, ContinuedAsNew { .. }) => true,
        _ => false,
    }
}

fn describe_command(kind: &EventKind) -> String {
    format!("{} {}", kind.name(), kind.details())
}

/// Checks the commands the code issued in one replayed task against the recorded ones.
/// Patch markers are matched leniently: a recorded patch marker the code no longer issues (a
/// removed `deprecate_patch`) is skipped, and so is a `deprecate_patch` marker missing from an
/// older history.
fn compare_commands(
    run_id: &str,
    recorded: &[HistoryEvent],
    actual: &[EventKind],
    marker_event_id: u64,
) -> Result<(), TaskError> {
    let (mut r, mut a) = (0, 0);
    loop {
        match (recorded.get(r), actual.get(a)) {
            (None, None) => return Ok(()),
            (Some(rec), Some(act)) if same_command(&rec.kind, act) => {
                r += 1;
                a += 1;
            }
            (Some(rec), _) if is_patch_marker(&rec.kind) => r += 1,
            (_, Some(act)) if is_deprecated_patch_marker(act) => a += 1,
            // Histories recorded before cancellation reached children lack these requests.
            (_, Some(EventKind::ChildCancelRequested { .. })) => a += 1,
            (Some(rec), Some(act)) => {
                return Err(TaskError::NonDeterminism(format!(
                    "run {run_id}: history event {} is `{}` but the workflow code now issues `{}`; \
                     deploy code that replays this history, or guard the change with ctx.patched(..)",
                    rec.event_id,
                    describe_command(&rec.kind),
                    describe_command(act)
                )))
            }
            (Some(rec), None) => {
                return Err(TaskError::NonDeterminism(format!(
                    "run {run_id}: history event {} is `{}` but the workflow code no longer issues it",
                    rec.event_id,
                    describe_command(&rec.kind)
                )))
            }
            (None, Some(act)) => {
                return Err(TaskError::NonDeterminism(format!(
                    "run {run_id}: the workflow code issues `{}` where the history (before event \
                     {marker_event_id}) records nothing",
                    describe_command(act)
                )))
            }
        }
    }
}

/// Rebuilds a run from its history. Fails with `NonDeterminism` when the code issues other
/// commands than the history records.
pub(crate) fn replay(
    def: &dyn ErasedDefinition,
    workflow_id: &str,
    run_id: &str,
    history: &[HistoryEvent],
) -> Result<Box<dyn Instance>, TaskError> {
    let Some(first) = history.first() else {
        return Err(TaskError::Other(format!(
            "run {run_id} has an empty history"
        )));
    };
    let mut instance = def.new_instance(workflow_id, run_id, first)?;
    let mut group_start = 1;
    for (i, event) in history.iter().enumerate().skip(1) {
        let EventKind::WorkflowTaskCompleted {
            task_time_ms,
            suggest_continue_as_new,
            ref build_id,
        } = event.kind
        else {
            continue;
        };
        let group = &history[group_start..i];
        group_start = i + 1;
        let split = group
            .iter()
            .position(|e| !Input::is_input(&e.kind))
            .unwrap_or(group.len());
        let inputs: Vec<Input> = group[..split]
            .iter()
            .filter_map(|e| Input::from_event(&e.kind))
            .collect();
        let recorded = &group[split..];
        if let Some(stray) = recorded.iter().find(|e| Input::is_input(&e.kind)) {
            return Err(TaskError::Other(format!(
                "run {run_id}: history event {} ({}) follows a command inside one workflow task; the history is corrupt",
                stray.event_id,
                stray.kind.name()
            )));
        }
        instance.set_next_event_id(group.first().map(|e| e.event_id).unwrap_or(event.event_id));
        let meta = TaskMeta {
            time_ms: task_time_ms,
            suggest_continue_as_new,
            build_id: build_id.clone(),
        };
        let output = instance
            .run_task(inputs, meta, Some(recorded))
            .map_err(|e| match e {
                TaskError::NonDeterminism(m) => {
                    TaskError::NonDeterminism(format!("run {run_id}: {m}"))
                }
                other => other,
            })?;
        // On replay a task returns only the commands the code issued.
        compare_commands(run_id, recorded, &output.events, event.event_id)?;
        instance.set_next_event_id(event.event_id + 1);
    }
    Ok(instance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histories_from_before_child_cancel_requests_still_replay() {
        let event = |event_id, kind| HistoryEvent {
            event_id,
            time_ms: 0,
            kind,
        };
        let request = EventKind::ChildCancelRequested {
            seq: 2,
            workflow_id: "child".into(),
        };
        let code = [EventKind::TimerCancelled { seq: 1 }, request.clone()];
        let old = [event(5, EventKind::TimerCancelled { seq: 1 })];
        assert!(compare_commands("r", &old, &code, 6).is_ok());
        let new = [
            event(5, EventKind::TimerCancelled { seq: 1 }),
            event(6, request),
        ];
        assert!(compare_commands("r", &new, &code, 7).is_ok());
        // Another child's request is still a mismatch.
        let other = EventKind::ChildCancelRequested {
            seq: 3,
            workflow_id: "other".into(),
        };
        let wrong = [
            event(5, EventKind::TimerCancelled { seq: 1 }),
            event(6, other),
        ];
        assert!(compare_commands("r", &wrong, &code, 7).is_err());
    }

    #[test]
    fn is_input_agrees_with_from_event() {
        let p = || Payload::encode(&()).unwrap();
        let kinds = vec![
            EventKind::SignalReceived {
                name: "s".into(),
                args: p(),
                signal_id: None,
            },
            EventKind::TimerFired { seq: 1 },
            EventKind::CancelRequested { reason: "r".into() },
            EventKind::ChildWorkflowClosed {
                seq: 2,
                outcome: ChildOutcome::Failed("x".into()),
            },
            EventKind::TimerStarted {
                seq: 1,
                fire_at_ms: 5,
            },
            EventKind::UpdateCompleted {
                update_id: "u".into(),
                outcome: UpdateOutcome::Failed("f".into()),
            },
            EventKind::WorkflowTaskCompleted {
                task_time_ms: 1,
                suggest_continue_as_new: false,
                build_id: None,
            },
            EventKind::WorkflowCompleted { result: p() },
        ];
        for k in kinds {
            assert_eq!(
                Input::is_input(&k),
                Input::from_event(&k).is_some(),
                "{}",
                k.name()
            );
        }
    }
}
