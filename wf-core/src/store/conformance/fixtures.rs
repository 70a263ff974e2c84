//! Building blocks of the properties: a base time, runs, messages, workflow tasks, and a
//! populated store with a snapshot of everything observable in it. A store's own extra tests
//! may use them too.

use crate::data::update::UpdateChange;
use crate::store::{
    ActivityAttempt, ActivityOptions, ActivityPoll, ActivityTask, Delivery, EventKind, FiredTimer,
    HistoryEvent, IdConflictPolicy, IdReusePolicy, ListFilter, Message, NewActivityTask, NewEvent,
    NewRun, NewTimer, Payload, RunRecord, RunStart, Store, StoreFuture, TaskCommit, TaskFilter,
    TaskPoll, UpdateRecord, UpdateState, WorkflowTask,
};
use std::time::Duration;

/// A base engine-clock time, far from zero so that "before" is representable.
pub const T0: i64 = 1_000_000;

/// Polls that take anything ready, whatever its type, queue or build: what the properties
/// lease with (an engine always polls for what it can run, with a [`TaskFilter`]).
pub trait PollAny {
    /// Leases up to `max` ready workflow tasks of runs without a build, of any type on any
    /// queue ([`Store::poll_workflow_tasks`] with the default filter).
    fn poll_workflow_tasks_any(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<WorkflowTask>>;

    /// Leases up to `max` visible activity tasks of any name ([`Store::poll_activity_tasks`]
    /// without names).
    fn poll_activity_tasks_any(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>>;
}

impl<S: Store + ?Sized> PollAny for S {
    fn poll_workflow_tasks_any(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        self.poll_workflow_tasks(TaskPoll {
            worker_id: worker_id.into(),
            now_ms,
            lease_ms,
            max,
            filter: TaskFilter::default(),
        })
    }

    fn poll_activity_tasks_any(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.poll_activity_tasks(ActivityPoll {
            worker_id: worker_id.into(),
            now_ms,
            max,
            names: None,
            task_queues: None,
        })
    }
}

/// Event `kind` at `time_ms`, as a commit appends it.
pub fn event(time_ms: i64, kind: EventKind) -> NewEvent {
    NewEvent { time_ms, kind }
}

/// Timer `seq`, firing at `fire_at_ms`, as a commit starts it.
pub fn timer(seq: u32, fire_at_ms: i64) -> NewTimer {
    NewTimer { seq, fire_at_ms }
}

/// Timer `seq` of `run_id`, as `fire_due_timers` reports it.
pub fn fired(run_id: &str, seq: u32) -> FiredTimer {
    FiredTimer {
        run_id: run_id.into(),
        seq,
    }
}

/// Update `update_id` (`name`) moved to `state`, as a commit records it.
pub fn update_change(update_id: &str, name: &str, state: UpdateState) -> UpdateChange {
    UpdateChange {
        update_id: update_id.into(),
        name: name.into(),
        state,
    }
}

/// Attempt `attempt` of activity `seq` of `run_id`.
pub fn attempt_of(run_id: &str, seq: u32, attempt: u32) -> ActivityAttempt {
    ActivityAttempt {
        run_id: run_id.into(),
        seq,
        attempt,
    }
}

/// A payload of `value`.
pub fn payload<T: serde::Serialize>(value: T) -> Payload {
    Payload::encode(&value).expect("encode a test payload")
}

/// Run `run_id` of `workflow_id`: type `order`, a small input, the default task queue.
pub fn new_run(workflow_id: &str, run_id: &str) -> NewRun {
    NewRun {
        workflow_id: workflow_id.into(),
        run_id: run_id.into(),
        workflow_type: "order".into(),
        input: payload(("input", run_id)),
        random_seed: 7,
        continued_from: None,
        parent: None,
        task_queue: "default".into(),
        memo: Default::default(),
        limits: None,
    }
}

/// A start of [`new_run`] at `now_ms` that fails if the id is running.
pub fn start_request(workflow_id: &str, run_id: &str, now_ms: i64) -> RunStart {
    RunStart {
        run: new_run(workflow_id, run_id),
        policy: IdConflictPolicy::Fail,
        reuse: IdReusePolicy::AllowDuplicate,
        request_id: None,
        messages: Vec::new(),
        now_ms,
        start_at_ms: None,
        debounce: None,
        queue: None,
    }
}

/// Starts a run and returns its record.
pub async fn start(store: &dyn Store, workflow_id: &str, run_id: &str, now_ms: i64) -> RunRecord {
    let out = store
        .start_run(start_request(workflow_id, run_id, now_ms))
        .await
        .expect("start");
    assert!(out.started);
    store
        .get_run(workflow_id, Some(run_id))
        .await
        .expect("get_run")
        .expect("run exists")
}

/// A signal `name` with one argument, and this dedupe id.
pub fn signal(name: &str, signal_id: Option<&str>) -> Message {
    Message::Signal {
        name: name.into(),
        args: payload((name,)),
        signal_id: signal_id.map(Into::into),
        sent_at: None,
    }
}

/// An update `name` with id `update_id`.
pub fn update(update_id: &str, name: &str) -> Message {
    Message::Update {
        update_id: update_id.into(),
        name: name.into(),
        args: payload((update_id,)),
    }
}

/// Leases exactly one workflow task.
pub async fn lease_one(store: &dyn Store, worker: &str, now_ms: i64) -> WorkflowTask {
    let mut tasks = store
        .poll_workflow_tasks_any(worker, now_ms, 10_000, 10)
        .await
        .expect("poll");
    assert_eq!(
        tasks.len(),
        1,
        "expected one ready workflow task, got {tasks:?}"
    );
    tasks.remove(0)
}

/// A commit of `task` that consumes its whole inbox and appends one `WorkflowTaskCompleted`.
pub fn commit_for(task: &WorkflowTask, worker: &str, now_ms: i64) -> TaskCommit {
    TaskCommit {
        run_id: task.run.run_id.clone(),
        worker_id: worker.into(),
        without_lease: false,
        expected_next_event_id: task.run.next_event_id,
        events: vec![event(
            now_ms,
            EventKind::WorkflowTaskCompleted {
                task_time_ms: now_ms,
                suggest_continue_as_new: false,
                build_id: None,
            },
        )],
        consumed_through: task.messages.last().map(|m| m.seq),
        new_activities: Vec::new(),
        cancel_activities: Vec::new(),
        lease_activities_to: None,
        lease_admitted: false,
        resolve_activities: Vec::new(),
        new_timers: Vec::new(),
        cancel_timers: Vec::new(),
        start_children: Vec::new(),
        deliver: Vec::new(),
        terminate: Vec::new(),
        notify: Vec::new(),
        updates: Vec::new(),
        failure_type: None,
        close: None,
        summary: Payload::default(),
        sync: true,
        now_ms,
        build: None,
        assumed: None,
        signal_waiting: None,
    }
}

/// An activity `charge` with command seq `seq`.
pub fn activity(seq: u32, options: ActivityOptions) -> NewActivityTask {
    NewActivityTask {
        seq,
        name: "charge".into(),
        input: payload(("charge", seq)),
        options,
    }
}

/// Leases the run's workflow task and commits it with `edit` applied: a one-call workflow task.
pub async fn run_task(
    store: &dyn Store,
    now_ms: i64,
    edit: impl FnOnce(&WorkflowTask, &mut TaskCommit),
) -> RunRecord {
    let task = lease_one(store, "w-task", now_ms).await;
    let mut commit = commit_for(&task, "w-task", now_ms);
    edit(&task, &mut commit);
    store.commit_workflow_task(commit).await.expect("commit")
}

/// Everything observable about the workflows of [`populate`], read without changing anything.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    /// Every run, newest first.
    pub runs: Vec<RunRecord>,
    /// Each run's history.
    pub histories: Vec<Vec<HistoryEvent>>,
    /// Each run's pending activities.
    pub activities: Vec<Vec<ActivityTask>>,
    /// Each run's pending updates.
    pub updates: Vec<Vec<UpdateRecord>>,
    /// Update `u-1` of `wf-1`.
    pub update: Option<UpdateRecord>,
    /// The activities expired long after [`T0`].
    pub expired: Vec<ActivityTask>,
    /// The next wake-up after [`T0`].
    pub wakeup: Option<i64>,
}

/// What [`Snapshot`] holds, read from `store`.
pub async fn snapshot(store: &dyn Store) -> Snapshot {
    let runs = store
        .admin()
        .list_runs(ListFilter::default())
        .await
        .unwrap();
    let mut histories = Vec::new();
    let mut activities = Vec::new();
    let mut updates = Vec::new();
    for run in &runs {
        histories.push(store.read_history(&run.run_id, 1).await.unwrap());
        activities.push(store.pending_activities(&run.run_id).await.unwrap());
        updates.push(store.pending_updates(&run.run_id).await.unwrap());
    }
    Snapshot {
        runs,
        histories,
        activities,
        updates,
        update: store.get_update("wf-1", "u-1").await.unwrap(),
        expired: store.expired_activities(T0 + 1_000_000, 100).await.unwrap(),
        wakeup: store.next_wakeup(T0).await.unwrap(),
    }
}

/// Two workflows with history, inbox, leased activity, timer, updates and dedupe ids: `wf-1`
/// (`run-1`, running) and `wf-2` (`run-2`, terminated).
pub async fn populate(store: &dyn Store) {
    start(store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
        .await
        .unwrap();
    store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0))
        .await
        .unwrap();
    let options = ActivityOptions {
        start_to_close: Some(Duration::from_secs(30)),
        heartbeat_timeout: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    run_task(store, T0 + 1, |_, c| {
        c.new_activities = vec![activity(1, options)];
        c.new_timers = vec![timer(2, T0 + 500)];
        c.updates = vec![update_change("u-1", "rename", UpdateState::Accepted)];
        c.summary = payload("waiting");
    })
    .await;
    store
        .poll_activity_tasks_any("aw", T0 + 2, 10)
        .await
        .unwrap();
    store
        .heartbeat_activity(attempt_of("run-1", 1, 1), Some(payload("half")), T0 + 3)
        .await
        .unwrap();
    store
        .deliver(Delivery::new("wf-1", signal("resume", None), T0 + 4))
        .await
        .unwrap();
    start(store, "wf-2", "run-2", T0 + 5).await;
    store.terminate("wf-2", "not needed", T0 + 6).await.unwrap();
}
