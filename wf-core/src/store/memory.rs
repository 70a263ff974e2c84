//! The in-memory store: every table is a map behind one mutex. Same semantics as
//! [`SqliteStore`](super::SqliteStore), nothing durable; for tests of the engine.
//!
//! Each method does all its work under the lock, so it is atomic and isolated. Methods that can
//! fail check everything that can fail first and only then change state, so a failed call leaves
//! the store as it was.

use super::{
    check_running, parent_in, ActivityTask, DeliverOutcome, Fallout, NewRun, RunClose, RunRecord,
    ScheduleRow, StartOutcome, StartRequest, Store, StoreError, StoreFuture, TaskCommit,
    WorkflowTask,
};
use crate::data::activity::ActivityFailure;
use crate::data::activity::{activity_lease, heartbeat_lease, ActivityResolution};
use crate::data::codec::encode_event;
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::message::{InboxMessage, Message};
use crate::data::payload::Payload;
use crate::data::run::ChildOutcome;
use crate::data::run::{IdConflictPolicy, ListFilter, RunStatus, TaskFailure};
use crate::data::update::{UpdateRecord, UpdateState};
use crate::error::BackendErrorKind;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

/// A [`Store`] that keeps everything in memory, for tests. Cheap to create; state is lost on
/// drop.
///
/// ```
/// use wf_core::store::{MemoryStore, Store};
/// let store = MemoryStore::new();
/// let _: &dyn Store = &store;
/// ```
#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Runs `f` under the lock and wraps its result in a ready future.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut State) -> Result<T, StoreError>,
    ) -> StoreFuture<'_, T> {
        let result = match self.lock() {
            Ok(mut state) => f(&mut state),
            Err(e) => Err(e),
        };
        Box::pin(std::future::ready(result))
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        // A panic while holding the lock may have left a change half done: refuse to go on.
        self.state
            .lock()
            .map_err(|_| StoreError::bug("memory store is poisoned: a panic interrupted a change"))
    }
}

/// All tables.
#[derive(Default)]
struct State {
    runs: HashMap<String, RunEntry>,
    /// Run ids of each workflow id, in creation order (the last is the latest run).
    by_workflow: HashMap<String, Vec<String>>,
    next_run_seq: u64,
    next_inbox_seq: u64,
    /// Pending activities by (run id, seq).
    activities: BTreeMap<(String, u32), ActivityRow>,
    /// Pending timers by (fire_at, run id, seq): the order in which they fire.
    timers: BTreeSet<(i64, String, u32)>,
    /// Updates by (chain id, update id), with their insertion order.
    updates: HashMap<(String, String), (u64, UpdateRecord)>,
    next_update_order: u64,
    /// Signal dedupe ids by (chain id, signal id).
    signal_ids: HashSet<(String, String)>,
    /// Schedules by id.
    schedules: BTreeMap<String, ScheduleRow>,
}

/// One run with its history, inbox and task state.
struct RunEntry {
    record: RunRecord,
    /// Creation order, across all runs.
    seq: u64,
    events: Vec<HistoryEvent>,
    inbox: BTreeMap<u64, Message>,
    /// Fire time of each pending timer, by seq.
    timers: BTreeMap<u32, i64>,
    ready_at: Option<i64>,
    lease: Option<Lease>,
}

struct Lease {
    owner: String,
    until: i64,
}

/// A pending activity: the task as returned to callers, plus its queue state.
struct ActivityRow {
    task: ActivityTask,
    visible_at: i64,
    lease_owner: Option<String>,
}

fn backend_encode(e: impl std::fmt::Display) -> StoreError {
    StoreError::backend(
        BackendErrorKind::Invalid,
        format!("could not encode a history event: {e}"),
    )
}

fn conflict(run_id: &str, reason: impl Into<String>) -> StoreError {
    StoreError::Conflict {
        run_id: run_id.to_string(),
        reason: reason.into(),
    }
}

impl State {
    fn run(&self, run_id: &str) -> Option<&RunEntry> {
        self.runs.get(run_id)
    }

    fn run_mut(&mut self, run_id: &str) -> Result<&mut RunEntry, StoreError> {
        self.runs
            .get_mut(run_id)
            .ok_or_else(|| StoreError::bug(format!("run {run_id} vanished mid-change")))
    }

    fn latest_run_id(&self, workflow_id: &str) -> Option<&str> {
        self.by_workflow
            .get(workflow_id)
            .and_then(|ids| ids.last())
            .map(String::as_str)
    }

    /// The run `run_id` of `workflow_id`, or its latest run.
    fn find_run(&self, workflow_id: &str, run_id: Option<&str>) -> Option<&RunEntry> {
        match run_id {
            Some(id) => self.run(id).filter(|r| r.record.workflow_id == workflow_id),
            None => self.latest_run_id(workflow_id).and_then(|id| self.run(id)),
        }
    }

    fn not_found(workflow_id: &str, run_id: Option<&str>) -> StoreError {
        StoreError::NotFound {
            workflow_id: workflow_id.to_string(),
            run_id: run_id.map(str::to_string),
        }
    }

    /// Marks a run's workflow task ready at `now_ms` unless it is ready earlier already.
    fn make_ready(&mut self, run_id: &str, now_ms: i64) {
        if let Some(run) = self.runs.get_mut(run_id) {
            run.ready_at = Some(run.ready_at.map_or(now_ms, |t| t.min(now_ms)));
        }
    }

    fn push_inbox(&mut self, run_id: &str, kind: Message) -> Result<(), StoreError> {
        self.next_inbox_seq += 1;
        let seq = self.next_inbox_seq;
        self.run_mut(run_id)?.inbox.insert(seq, kind);
        Ok(())
    }

    /// Checks that a run can be created and encodes its first event: (event bytes length).
    fn prepare_run(&self, new: &NewRun, now_ms: i64) -> Result<u64, StoreError> {
        if self.runs.contains_key(&new.run_id) {
            return Err(StoreError::backend(
                BackendErrorKind::Invalid,
                format!(
                    "run id {} already exists; run ids must be fresh",
                    new.run_id
                ),
            ));
        }
        let started = new.started_event();
        Ok(encode_event(now_ms, &started)
            .map_err(backend_encode)?
            .len() as u64)
    }

    /// Creates a run ready at `now_ms`; `prepare_run` must have succeeded.
    fn create_run(&mut self, new: &NewRun, chain_id: String, event_bytes: u64, now_ms: i64) {
        self.next_run_seq += 1;
        let record = new.created_record(&chain_id, event_bytes, now_ms);
        let started = HistoryEvent {
            event_id: 1,
            time_ms: now_ms,
            kind: new.started_event(),
        };
        self.runs.insert(
            new.run_id.clone(),
            RunEntry {
                record,
                seq: self.next_run_seq,
                events: vec![started],
                inbox: BTreeMap::new(),
                timers: BTreeMap::new(),
                ready_at: Some(now_ms),
                lease: None,
            },
        );
        self.by_workflow
            .entry(new.workflow_id.clone())
            .or_default()
            .push(new.run_id.clone());
    }

    /// Delivers a message to a run (dedupe, closed check, inbox, ready).
    fn deliver_to(
        &mut self,
        run_id: &str,
        message: Message,
        now_ms: i64,
    ) -> Result<DeliverOutcome, StoreError> {
        let run = self
            .run(run_id)
            .ok_or_else(|| StoreError::bug(format!("run {run_id} vanished mid-change")))?;
        let chain = run.record.chain_id.clone();
        if let Message::Update { update_id, .. } = &message {
            if let Some((_, rec)) = self.updates.get(&(chain.clone(), update_id.clone())) {
                return Ok(DeliverOutcome::DuplicateUpdate(rec.clone()));
            }
        }
        if run.record.status != RunStatus::Running {
            return Err(StoreError::RunFinished {
                workflow_id: run.record.workflow_id.clone(),
                run_id: run_id.to_string(),
                status: run.record.status,
            });
        }
        let kind = match message {
            Message::Signal {
                name,
                args,
                signal_id,
            } => {
                if let Some(id) = &signal_id {
                    if !self.signal_ids.insert((chain, id.clone())) {
                        return Ok(DeliverOutcome::DuplicateSignal {
                            run_id: run_id.to_string(),
                        });
                    }
                }
                Message::Signal {
                    name,
                    args,
                    signal_id,
                }
            }
            Message::Update {
                update_id,
                name,
                args,
            } => {
                self.next_update_order += 1;
                let record = UpdateRecord {
                    update_id: update_id.clone(),
                    run_id: run_id.to_string(),
                    name: name.clone(),
                    state: UpdateState::Requested,
                };
                self.updates
                    .insert((chain, update_id.clone()), (self.next_update_order, record));
                Message::Update {
                    update_id,
                    name,
                    args,
                }
            }
            other => other,
        };
        self.push_inbox(run_id, kind)?;
        self.make_ready(run_id, now_ms);
        Ok(DeliverOutcome::Enqueued {
            run_id: run_id.to_string(),
        })
    }

    /// Drops a closed run's pending work and abandons its unfinished updates.
    fn clear_closed_run(&mut self, run_id: &str) {
        if let Some(run) = self.runs.get_mut(run_id) {
            run.inbox.clear();
            run.ready_at = None;
            run.lease = None;
            for (seq, fire_at) in std::mem::take(&mut run.timers) {
                self.timers.remove(&(fire_at, run_id.to_string(), seq));
            }
        }
        self.activities.retain(|(r, _), _| r != run_id);
        for (_, rec) in self.updates.values_mut() {
            if rec.run_id == run_id && !rec.state.is_final() {
                rec.state = UpdateState::Abandoned;
            }
        }
    }

    /// Terminates a running run and applies its [`Fallout`] (recursively for children it
    /// terminates).
    fn terminate_run(&mut self, run_id: &str, reason: &str, now_ms: i64) -> Result<(), StoreError> {
        let mut work = vec![(run_id.to_string(), reason.to_string())];
        while let Some((run_id, reason)) = work.pop() {
            self.close_terminated(&run_id, &reason, now_ms)?;
            let run = self.run_mut(&run_id)?;
            let parent = parent_in(run.events.first().map(|e| &e.kind));
            let fallout = Fallout::of(&run.record, parent, &reason);
            if let Some((parent, kind)) = fallout.parent {
                self.notify_run(&parent, kind, now_ms)?;
            }
            for (child, why) in fallout.terminate {
                if let Some(child) = self.child_run(&child, &run_id) {
                    work.push((child, why));
                }
            }
            for (child, message) in fallout.cancel {
                if let Some(child) = self.child_run(&child, &run_id) {
                    self.deliver_to(&child, message, now_ms)?;
                }
            }
        }
        Ok(())
    }

    /// The running latest run of `workflow_id`, if it is a child of run `parent_run_id`.
    fn child_run(&self, workflow_id: &str, parent_run_id: &str) -> Option<String> {
        let run = self
            .find_run(workflow_id, None)
            .filter(|r| r.record.status == RunStatus::Running)?;
        let parent = parent_in(run.events.first().map(|e| &e.kind))?;
        (parent.run_id == parent_run_id).then(|| run.record.run_id.clone())
    }

    /// Appends `WorkflowTerminated` and closes the run. Encodes first so that a failure
    /// changes nothing.
    fn close_terminated(
        &mut self,
        run_id: &str,
        reason: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let kind = EventKind::WorkflowTerminated {
            reason: reason.to_string(),
        };
        let size = encode_event(now_ms, &kind).map_err(backend_encode)?.len() as u64;
        let run = self.run_mut(run_id)?;
        let event_id = run.record.next_event_id;
        run.events.push(HistoryEvent {
            event_id,
            time_ms: now_ms,
            kind,
        });
        run.record.next_event_id += 1;
        run.record.history_bytes += size;
        run.record.status = RunStatus::Terminated;
        run.record.closed_ms = Some(now_ms);
        run.record.failure = Some(reason.to_string());
        self.clear_closed_run(run_id);
        Ok(())
    }

    fn start_run(&mut self, req: StartRequest) -> Result<StartOutcome, StoreError> {
        let StartRequest {
            run,
            policy,
            messages,
            now_ms,
        } = req;
        let running = self
            .find_run(&run.workflow_id, None)
            .filter(|r| r.record.status == RunStatus::Running)
            .map(|r| r.record.run_id.clone());
        if let Some(existing) = &running {
            match policy {
                IdConflictPolicy::Fail => {
                    return Err(StoreError::AlreadyStarted {
                        workflow_id: run.workflow_id.clone(),
                        run_id: existing.clone(),
                    })
                }
                IdConflictPolicy::UseExisting => {
                    let mut outcomes = Vec::with_capacity(messages.len());
                    for m in messages {
                        outcomes.push(self.deliver_to(existing, m, now_ms)?);
                    }
                    return Ok(StartOutcome {
                        run_id: existing.clone(),
                        started: false,
                        messages: outcomes,
                    });
                }
                IdConflictPolicy::TerminateExisting => {}
            }
        }
        let bytes = self.prepare_run(&run, now_ms)?;
        if let Some(existing) = &running {
            self.terminate_run(existing, "terminated by a new start", now_ms)?;
        }
        self.create_run(&run, run.run_id.clone(), bytes, now_ms);
        let mut outcomes = Vec::with_capacity(messages.len());
        for m in messages {
            outcomes.push(self.deliver_to(&run.run_id, m, now_ms)?);
        }
        Ok(StartOutcome {
            run_id: run.run_id,
            started: true,
            messages: outcomes,
        })
    }

    fn commit(&mut self, c: TaskCommit) -> Result<RunRecord, StoreError> {
        let run_id = c.run_id.as_str();
        let run = self
            .run(run_id)
            .ok_or_else(|| conflict(run_id, "no such run"))?;
        if c.without_lease {
            check_unleased(run, c.now_ms)?;
            if !run.inbox.is_empty() {
                return Err(StoreError::NewMessages {
                    run_id: run_id.to_string(),
                });
            }
        } else {
            check_task_owner(run, &c.worker_id)?;
        }
        if run.record.next_event_id != c.expected_next_event_id {
            return Err(conflict(
                run_id,
                format!(
                    "the workflow task expected next event id {}, but the history is at {}",
                    c.expected_next_event_id, run.record.next_event_id
                ),
            ));
        }
        let has_unconsumed = match c.consumed_through {
            Some(through) => run.inbox.range(through + 1..).next().is_some(),
            None => !run.inbox.is_empty(),
        };
        if c.close.is_some() && has_unconsumed {
            return Err(StoreError::NewMessages {
                run_id: run_id.to_string(),
            });
        }
        // Everything that can fail, before any change.
        let mut sizes = Vec::with_capacity(c.events.len());
        for (time_ms, kind) in &c.events {
            sizes.push(encode_event(*time_ms, kind).map_err(backend_encode)?.len() as u64);
        }
        for (i, a) in c.new_activities.iter().enumerate() {
            let repeated = c.new_activities[..i].iter().any(|b| b.seq == a.seq);
            if repeated || self.activities.contains_key(&(run_id.to_string(), a.seq)) {
                return Err(StoreError::backend(
                    BackendErrorKind::Invalid,
                    format!("run {run_id}: activity seq {} is already pending", a.seq),
                ));
            }
        }
        for (seq, attempt) in &c.resolve_activities {
            let current = self
                .activities
                .get(&(run_id.to_string(), *seq))
                .is_some_and(|r| r.task.attempt == *attempt);
            if !current {
                return Err(conflict(
                    run_id,
                    format!("activity #{seq} attempt {attempt} is no longer pending"),
                ));
            }
        }
        for (i, (seq, _)) in c.new_timers.iter().enumerate() {
            if run.timers.contains_key(seq) || c.new_timers[..i].iter().any(|t| t.0 == *seq) {
                return Err(StoreError::backend(
                    BackendErrorKind::Invalid,
                    format!("run {run_id}: timer seq {seq} is already pending"),
                ));
            }
        }
        let continued = match &c.close {
            Some(RunClose::ContinuedAsNew(new)) => {
                if new.workflow_id != run.record.workflow_id {
                    return Err(conflict(
                        run_id,
                        format!(
                            "continue-as-new must keep workflow id {:?}, got {:?}",
                            run.record.workflow_id, new.workflow_id
                        ),
                    ));
                }
                let mut new = new.clone();
                new.continued_from = Some(run_id.to_string());
                let bytes = self.prepare_run(&new, c.now_ms)?;
                Some((new, bytes))
            }
            _ => None,
        };
        let chain = run.record.chain_id.clone();
        let workflow_id = run.record.workflow_id.clone();

        // Apply.
        let now = c.now_ms;
        let run = self.run_mut(run_id)?;
        for ((time_ms, kind), size) in c.events.into_iter().zip(sizes) {
            let event_id = run.record.next_event_id;
            run.events.push(HistoryEvent {
                event_id,
                time_ms,
                kind,
            });
            run.record.next_event_id += 1;
            run.record.history_bytes += size;
        }
        if let Some(through) = c.consumed_through {
            run.inbox = run.inbox.split_off(&(through + 1));
        }
        run.record.summary = c.summary;
        run.record.task_failure = None;
        run.lease = None;
        run.ready_at = if run.inbox.is_empty() {
            None
        } else {
            Some(now)
        };
        for (seq, fire_at) in &c.new_timers {
            run.timers.insert(*seq, *fire_at);
        }
        let cancelled_timers: Vec<(u32, i64)> = c
            .cancel_timers
            .iter()
            .filter_map(|seq| run.timers.remove(seq).map(|at| (*seq, at)))
            .collect();
        for (seq, fire_at) in &c.new_timers {
            self.timers.insert((*fire_at, run_id.to_string(), *seq));
        }
        for (seq, fire_at) in cancelled_timers {
            self.timers.remove(&(fire_at, run_id.to_string(), seq));
        }
        for a in c.new_activities {
            let task = ActivityTask {
                run_id: run_id.to_string(),
                workflow_id: workflow_id.clone(),
                seq: a.seq,
                name: a.name,
                input: a.input,
                options: a.options,
                attempt: 1,
                scheduled_ms: now,
                started_ms: None,
                attempt_deadline_ms: None,
                lease_until_ms: None,
                heartbeat: None,
                last_failure: None,
            };
            let mut task = task;
            let lease_owner = c.lease_activities_to.clone();
            if lease_owner.is_some() {
                let (attempt_deadline, lease_until) = activity_lease(&task.options, now, now);
                task.started_ms = Some(now);
                task.attempt_deadline_ms = Some(attempt_deadline);
                task.lease_until_ms = Some(lease_until);
            }
            let row = ActivityRow {
                task,
                visible_at: now,
                lease_owner,
            };
            self.activities.insert((run_id.to_string(), a.seq), row);
        }
        for seq in c
            .cancel_activities
            .iter()
            .chain(c.resolve_activities.iter().map(|(seq, _)| seq))
        {
            self.activities.remove(&(run_id.to_string(), *seq));
        }
        for (update_id, name, state) in c.updates {
            let key = (chain.clone(), update_id.clone());
            match self.updates.get_mut(&key) {
                Some((_, rec)) => {
                    rec.name = name;
                    rec.state = state;
                }
                None => {
                    self.next_update_order += 1;
                    let rec = UpdateRecord {
                        update_id,
                        run_id: run_id.to_string(),
                        name,
                        state,
                    };
                    self.updates.insert(key, (self.next_update_order, rec));
                }
            }
        }
        if let Some(close) = c.close {
            let run = self.run_mut(run_id)?;
            run.record.closed_ms = Some(now);
            match close {
                RunClose::Completed(result) => {
                    run.record.status = RunStatus::Completed;
                    run.record.result = Some(result);
                }
                RunClose::Failed(message) => {
                    run.record.status = RunStatus::Failed;
                    run.record.failure = Some(message);
                }
                RunClose::Cancelled(message) => {
                    run.record.status = RunStatus::Cancelled;
                    run.record.failure = Some(message);
                }
                RunClose::ContinuedAsNew(_) => run.record.status = RunStatus::ContinuedAsNew,
            }
            self.clear_closed_run(run_id);
            if let Some((new, bytes)) = continued {
                self.create_run(&new, chain, bytes, now);
            }
        }
        self.apply_side_effects(
            run_id,
            c.start_children,
            c.deliver,
            c.terminate,
            c.notify,
            now,
        )?;
        Ok(self.run_mut(run_id)?.record.clone())
    }

    /// What a workflow task does to other runs: child starts, outgoing messages, parent close
    /// policies, a child's result for its parent.
    fn apply_side_effects(
        &mut self,
        run_id: &str,
        start_children: Vec<(u32, NewRun)>,
        deliver: Vec<(String, Message)>,
        terminate: Vec<(String, String)>,
        notify: Vec<(String, Message)>,
        now: i64,
    ) -> Result<(), StoreError> {
        for (seq, child) in start_children {
            let running = self
                .find_run(&child.workflow_id, None)
                .filter(|r| r.record.status == RunStatus::Running)
                .map(|r| r.record.run_id.clone());
            match running {
                Some(existing) => {
                    let outcome = ChildOutcome::StartFailed(format!(
                        "workflow {:?} is already running (run {existing})",
                        child.workflow_id
                    ));
                    self.push_inbox(run_id, Message::ChildClosed { seq, outcome })?;
                    self.make_ready(run_id, now);
                }
                None => {
                    let bytes = self.prepare_run(&child, now)?;
                    let chain = child.run_id.clone();
                    self.create_run(&child, chain, bytes, now);
                }
            }
        }
        for (workflow_id, message) in deliver {
            if let Some(target) = self
                .find_run(&workflow_id, None)
                .map(|r| r.record.run_id.clone())
            {
                match self.deliver_to(&target, message, now) {
                    Ok(_) | Err(StoreError::RunFinished { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        for (workflow_id, reason) in terminate {
            let target = self
                .find_run(&workflow_id, None)
                .filter(|r| r.record.status == RunStatus::Running)
                .map(|r| r.record.run_id.clone());
            if let Some(target) = target {
                self.terminate_run(&target, &reason, now)?;
            }
        }
        for (target, kind) in notify {
            self.notify_run(&target, kind, now)?;
        }
        Ok(())
    }

    /// Puts a message in a running run's inbox; false if it is closed or unknown.
    fn notify_run(&mut self, run_id: &str, kind: Message, now: i64) -> Result<bool, StoreError> {
        if self
            .run(run_id)
            .is_some_and(|r| r.record.status == RunStatus::Running)
        {
            self.push_inbox(run_id, kind)?;
            self.make_ready(run_id, now);
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn poll_workflow_tasks(
        &mut self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        types: Option<&[String]>,
        queues: Option<&[String]>,
    ) -> Result<Vec<WorkflowTask>, StoreError> {
        let s = self;
        {
            let mut ready: Vec<(i64, u64, String)> = s
                .runs
                .values()
                .filter(|r| r.record.status == RunStatus::Running)
                .filter(|r| types.is_none_or(|t| t.contains(&r.record.workflow_type)))
                .filter(|r| queues.is_none_or(|q| q.contains(&r.record.task_queue)))
                .filter(|r| r.lease.as_ref().is_none_or(|l| l.until <= now_ms))
                .filter_map(|r| match r.ready_at {
                    Some(at) if at <= now_ms => Some((at, r.seq, r.record.run_id.clone())),
                    _ => None,
                })
                .collect();
            ready.sort();
            let mut tasks = Vec::new();
            for (_, _, run_id) in ready.into_iter().take(max) {
                let run = s.run_mut(&run_id)?;
                run.lease = Some(Lease {
                    owner: worker_id.to_string(),
                    until: now_ms + lease_ms,
                });
                let messages = run
                    .inbox
                    .iter()
                    .map(|(seq, kind)| InboxMessage {
                        seq: *seq,
                        message: kind.clone(),
                    })
                    .collect();
                tasks.push(WorkflowTask {
                    run: run.record.clone(),
                    messages,
                });
            }
            Ok(tasks)
        }
    }

    fn poll_activity_tasks(
        &mut self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
        names: Option<&[String]>,
    ) -> Result<Vec<ActivityTask>, StoreError> {
        let s = self;
        {
            let mut due: Vec<(i64, String, u32)> = s
                .activities
                .values()
                .filter(|row| row.lease_owner.is_none() && row.visible_at <= now_ms)
                .filter(|row| names.is_none_or(|n| n.contains(&row.task.name)))
                .filter(|row| row.task.schedule_deadline_ms().is_none_or(|d| d > now_ms))
                .map(|row| (row.visible_at, row.task.run_id.clone(), row.task.seq))
                .collect();
            due.sort();
            let mut out = Vec::new();
            for (_, run_id, seq) in due.into_iter().take(max) {
                if let Some(row) = s.activities.get_mut(&(run_id, seq)) {
                    let (deadline, lease) =
                        activity_lease(&row.task.options, row.task.scheduled_ms, now_ms);
                    row.lease_owner = Some(worker_id.to_string());
                    row.task.started_ms = Some(now_ms);
                    row.task.attempt_deadline_ms = Some(deadline);
                    row.task.lease_until_ms = Some(lease);
                    out.push(row.task.clone());
                }
            }
            Ok(out)
        }
    }

    fn activity_row(&mut self, run_id: &str, seq: u32, attempt: u32) -> Option<&mut ActivityRow> {
        self.activities
            .get_mut(&(run_id.to_string(), seq))
            .filter(|row| row.task.attempt == attempt)
    }
}

/// Checks that a running run is free of leases (or its lease expired), for a commit without one.
fn check_unleased(run: &RunEntry, now_ms: i64) -> Result<(), StoreError> {
    let run_id = &run.record.run_id;
    check_running(&run.record)?;
    match &run.lease {
        Some(lease) if lease.until > now_ms => Err(conflict(
            run_id,
            format!(
                "worker {:?} holds the workflow task lease; drop the task",
                lease.owner
            ),
        )),
        _ => Ok(()),
    }
}

/// Checks that `worker_id` holds the workflow task lease of a running run.
fn check_task_owner(run: &RunEntry, worker_id: &str) -> Result<(), StoreError> {
    let run_id = &run.record.run_id;
    check_running(&run.record)?;
    match &run.lease {
        Some(lease) if lease.owner == worker_id => Ok(()),
        Some(lease) => Err(conflict(
            run_id,
            format!(
                "worker {worker_id:?} lost the workflow task lease to {:?}; drop the task",
                lease.owner
            ),
        )),
        None => Err(conflict(
            run_id,
            format!("worker {worker_id:?} holds no workflow task lease on this run; drop the task"),
        )),
    }
}

impl Store for MemoryStore {
    fn start_run(&self, req: StartRequest) -> StoreFuture<'_, StartOutcome> {
        self.with(|s| s.start_run(req))
    }

    fn deliver(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome> {
        self.with(|s| {
            let target = s
                .find_run(workflow_id, run_id)
                .map(|r| r.record.run_id.clone())
                .ok_or_else(|| State::not_found(workflow_id, run_id))?;
            s.deliver_to(&target, message, now_ms)
        })
    }

    fn poll_workflow_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        self.with(|s| s.poll_workflow_tasks(worker_id, now_ms, lease_ms, max, None, None))
    }

    fn poll_workflow_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        workflow_types: Vec<String>,
        task_queues: Vec<String>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        self.with(|s| {
            s.poll_workflow_tasks(
                worker_id,
                now_ms,
                lease_ms,
                max,
                Some(&workflow_types),
                Some(&task_queues),
            )
        })
    }

    fn lease_run(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> StoreFuture<'_, Option<WorkflowTask>> {
        self.with(|s| {
            let Some(run) = s.runs.get_mut(run_id) else {
                return Ok(None);
            };
            let free = run.lease.as_ref().is_none_or(|l| l.until <= now_ms);
            if run.record.status != RunStatus::Running || !free {
                return Ok(None);
            }
            run.lease = Some(Lease {
                owner: worker_id.to_string(),
                until: now_ms + lease_ms,
            });
            let messages = run
                .inbox
                .iter()
                .map(|(seq, kind)| InboxMessage {
                    seq: *seq,
                    message: kind.clone(),
                })
                .collect();
            Ok(Some(WorkflowTask {
                run: run.record.clone(),
                messages,
            }))
        })
    }

    fn commit_workflow_task(&self, commit: TaskCommit) -> StoreFuture<'_, RunRecord> {
        self.with(|s| s.commit(commit))
    }

    fn fail_workflow_task(
        &self,
        run_id: &str,
        worker_id: &str,
        failure: TaskFailure,
    ) -> StoreFuture<'_, ()> {
        self.with(|s| {
            let run = s
                .run(run_id)
                .ok_or_else(|| conflict(run_id, "no such run"))?;
            check_task_owner(run, worker_id)?;
            let run = s.run_mut(run_id)?;
            run.lease = None;
            run.ready_at = Some(failure.retry_at_ms);
            run.record.task_failure = Some(failure);
            Ok(())
        })
    }

    fn release_workflow_task(&self, run_id: &str, worker_id: &str) -> StoreFuture<'_, ()> {
        self.with(|s| {
            if let Some(run) = s.runs.get_mut(run_id) {
                if run.lease.as_ref().is_some_and(|l| l.owner == worker_id) {
                    // A leased run was ready when it was polled, and `ready_at` only moves
                    // earlier while leased: keeping it makes the run ready at once (the
                    // trait gives no clock here).
                    run.lease = None;
                    run.ready_at = Some(run.ready_at.unwrap_or(0));
                }
            }
            Ok(())
        })
    }

    fn poll_activity_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.with(|s| s.poll_activity_tasks(worker_id, now_ms, max, None))
    }

    fn poll_activity_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
        names: Vec<String>,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.with(|s| s.poll_activity_tasks(worker_id, now_ms, max, Some(&names)))
    }

    fn heartbeat_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        details: Option<Payload>,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        self.with(|s| {
            let Some(row) = s.activity_row(run_id, seq, attempt) else {
                return Ok(false);
            };
            let (Some(deadline), Some(lease)) =
                (row.task.attempt_deadline_ms, row.task.lease_until_ms)
            else {
                return Ok(false);
            };
            if row.lease_owner.is_none() || lease <= now_ms {
                return Ok(false);
            }
            if details.is_some() {
                row.task.heartbeat = details;
            }
            row.task.lease_until_ms = Some(heartbeat_lease(&row.task.options, deadline, now_ms));
            Ok(true)
        })
    }

    fn resolve_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        resolution: ActivityResolution,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        self.with(|s| {
            if s.activity_row(run_id, seq, attempt).is_none() {
                return Ok(false);
            }
            if !s.runs.contains_key(run_id) {
                return Err(StoreError::backend(
                    BackendErrorKind::Invalid,
                    format!("activity {seq} belongs to unknown run {run_id}"),
                ));
            }
            s.activities.remove(&(run_id.to_string(), seq));
            s.push_inbox(run_id, Message::ActivityResolved { seq, resolution })?;
            s.make_ready(run_id, now_ms);
            Ok(true)
        })
    }

    fn retry_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        visible_at_ms: i64,
        failure: ActivityFailure,
    ) -> StoreFuture<'_, bool> {
        self.with(|s| {
            let Some(row) = s.activity_row(run_id, seq, attempt) else {
                return Ok(false);
            };
            row.task.attempt += 1;
            row.visible_at = visible_at_ms;
            row.lease_owner = None;
            row.task.started_ms = None;
            row.task.attempt_deadline_ms = None;
            row.task.lease_until_ms = None;
            row.task.last_failure = Some(failure);
            Ok(true)
        })
    }

    fn release_activity(&self, run_id: &str, seq: u32, attempt: u32) -> StoreFuture<'_, ()> {
        self.with(|s| {
            if let Some(row) = s.activity_row(run_id, seq, attempt) {
                // visible_at was due when the attempt was leased, so it is due now.
                row.lease_owner = None;
                row.task.started_ms = None;
                row.task.attempt_deadline_ms = None;
                row.task.lease_until_ms = None;
            }
            Ok(())
        })
    }

    fn expired_activities(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.with(|s| {
            Ok(s.activities
                .values()
                .filter(|row| {
                    let lease_expired = row.lease_owner.is_some()
                        && row.task.lease_until_ms.is_some_and(|t| t <= now_ms);
                    let past_deadline =
                        row.task.schedule_deadline_ms().is_some_and(|d| d <= now_ms);
                    lease_expired || past_deadline
                })
                .take(max)
                .map(|row| row.task.clone())
                .collect())
        })
    }

    fn fire_due_timers(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<(String, u32)>> {
        self.with(|s| {
            let due: Vec<(i64, String, u32)> = s
                .timers
                .iter()
                .take_while(|t| t.0 <= now_ms)
                .take(max)
                .cloned()
                .collect();
            let mut fired = Vec::with_capacity(due.len());
            for key in due {
                s.timers.remove(&key);
                let (_, run_id, seq) = key;
                s.run_mut(&run_id)?.timers.remove(&seq);
                s.push_inbox(&run_id, Message::TimerFired { seq })?;
                s.make_ready(&run_id, now_ms);
                fired.push((run_id, seq));
            }
            Ok(fired)
        })
    }

    fn next_wakeup(&self, now_ms: i64) -> StoreFuture<'_, Option<i64>> {
        self.with(|s| {
            let mut times: Vec<i64> = s.timers.iter().map(|t| t.0).collect();
            for run in s
                .runs
                .values()
                .filter(|r| r.record.status == RunStatus::Running)
            {
                times.extend(run.ready_at);
                times.extend(run.lease.as_ref().map(|l| l.until));
            }
            for row in s.activities.values() {
                if row.lease_owner.is_none() {
                    times.push(row.visible_at);
                } else {
                    times.extend(row.task.lease_until_ms);
                }
                times.extend(row.task.schedule_deadline_ms());
            }
            times.extend(s.schedules.values().filter_map(|r| r.next_check_ms));
            Ok(times.into_iter().filter(|t| *t > now_ms).min())
        })
    }

    fn get_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<RunRecord>> {
        self.with(|s| Ok(s.find_run(workflow_id, run_id).map(|r| r.record.clone())))
    }

    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>> {
        self.with(|s| {
            Ok(s.run(run_id)
                .map(|r| {
                    r.events
                        .iter()
                        .filter(|e| e.event_id >= from_event_id)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default())
        })
    }

    fn list_runs(&self, filter: ListFilter) -> StoreFuture<'_, Vec<RunRecord>> {
        self.with(|s| {
            let mut runs: Vec<&RunEntry> = s
                .runs
                .values()
                .filter(|r| {
                    !filter.latest_only
                        || s.latest_run_id(&r.record.workflow_id) == Some(r.record.run_id.as_str())
                })
                .filter(|r| {
                    filter
                        .workflow_type
                        .as_ref()
                        .is_none_or(|t| *t == r.record.workflow_type)
                })
                .filter(|r| filter.status.is_none_or(|st| st == r.record.status))
                .collect();
            runs.sort_by_key(|r| std::cmp::Reverse(r.seq));
            let limit = if filter.limit == 0 {
                usize::MAX
            } else {
                filter.limit
            };
            Ok(runs
                .into_iter()
                .take(limit)
                .map(|r| r.record.clone())
                .collect())
        })
    }

    fn get_update(
        &self,
        workflow_id: &str,
        update_id: &str,
    ) -> StoreFuture<'_, Option<UpdateRecord>> {
        self.with(|s| {
            let Some(run) = s.find_run(workflow_id, None) else {
                return Ok(None);
            };
            let key = (run.record.chain_id.clone(), update_id.to_string());
            Ok(s.updates.get(&key).map(|(_, rec)| rec.clone()))
        })
    }

    fn pending_updates(&self, run_id: &str) -> StoreFuture<'_, Vec<UpdateRecord>> {
        self.with(|s| {
            let mut pending: Vec<&(u64, UpdateRecord)> = s
                .updates
                .values()
                .filter(|(_, rec)| rec.run_id == run_id && !rec.state.is_final())
                .collect();
            pending.sort_by_key(|(order, _)| *order);
            Ok(pending.into_iter().map(|(_, rec)| rec.clone()).collect())
        })
    }

    fn pending_activities(&self, run_id: &str) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.with(|s| {
            Ok(s.activities
                .range((run_id.to_string(), 0)..=(run_id.to_string(), u32::MAX))
                .map(|(_, row)| row.task.clone())
                .collect())
        })
    }

    fn create_schedule(&self, row: ScheduleRow) -> StoreFuture<'_, ()> {
        self.with(|s| {
            if s.schedules.contains_key(&row.schedule_id) {
                return Err(StoreError::ScheduleExists(row.schedule_id));
            }
            s.schedules
                .insert(row.schedule_id.clone(), ScheduleRow { version: 1, ..row });
            Ok(())
        })
    }

    fn update_schedule(
        &self,
        schedule_id: &str,
        expected_version: u64,
        data: Payload,
        next_check_ms: Option<i64>,
    ) -> StoreFuture<'_, bool> {
        self.with(|s| match s.schedules.get_mut(schedule_id) {
            Some(row) if row.version == expected_version => {
                row.data = data;
                row.next_check_ms = next_check_ms;
                row.version += 1;
                Ok(true)
            }
            _ => Ok(false),
        })
    }

    fn get_schedule(&self, schedule_id: &str) -> StoreFuture<'_, Option<ScheduleRow>> {
        self.with(|s| Ok(s.schedules.get(schedule_id).cloned()))
    }

    fn list_schedules(&self) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.with(|s| Ok(s.schedules.values().cloned().collect()))
    }

    fn delete_schedule(&self, schedule_id: &str) -> StoreFuture<'_, bool> {
        self.with(|s| Ok(s.schedules.remove(schedule_id).is_some()))
    }

    fn due_schedules(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.with(|s| {
            let mut due: Vec<ScheduleRow> = s
                .schedules
                .values()
                .filter(|r| r.next_check_ms.is_some_and(|t| t <= now_ms))
                .cloned()
                .collect();
            due.sort_by_key(|r| r.next_check_ms);
            due.truncate(max);
            Ok(due)
        })
    }

    fn terminate(
        &self,
        workflow_id: &str,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, RunRecord> {
        self.with(|s| {
            let run = s
                .find_run(workflow_id, None)
                .ok_or_else(|| State::not_found(workflow_id, None))?;
            let run_id = run.record.run_id.clone();
            if run.record.status != RunStatus::Running {
                return Err(StoreError::RunFinished {
                    workflow_id: workflow_id.to_string(),
                    run_id,
                    status: run.record.status,
                });
            }
            s.terminate_run(&run_id, reason, now_ms)?;
            Ok(s.run_mut(&run_id)?.record.clone())
        })
    }
}
