//! Runs each property against every store, plus small builders shared by the properties.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wf_core::store::Payload;
use wf_core::store::{ActivityOptions, EventKind};
use wf_core::store::{
    IdConflictPolicy, MemoryStore, Message, NewActivityTask, NewRun, RunRecord, SqliteStore,
    StartRequest, Store, TaskCommit, WorkflowTask,
};

/// Generates one `#[tokio::test]` per property and store: `<module>::memory::<property>` and
/// `<module>::sqlite::<property>`. Each property is an `async fn(Arc<dyn Store>)` in the module
/// that invokes the macro.
macro_rules! conformance {
    ($($property:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $property() {
                    super::$property($crate::harness::memory_store()).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $property() {
                    let db = $crate::harness::TempDb::new(stringify!($property));
                    super::$property(db.open()).await;
                }
            )*
        }
    };
}

/// A base engine-clock time, far from zero so that "before" is representable.
pub const T0: i64 = 1_000_000;

pub fn memory_store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

/// A SQLite file in the temp directory, removed (with its WAL files) on drop.
pub struct TempDb {
    pub path: PathBuf,
}

impl TempDb {
    pub fn new(name: &str) -> TempDb {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let file = format!("wf-conformance-{name}-{}-{unique}.db", std::process::id());
        let db = TempDb {
            path: std::env::temp_dir().join(file),
        };
        db.remove_files();
        db
    }

    pub fn open(&self) -> Arc<dyn Store> {
        Arc::new(self.open_sqlite())
    }

    pub fn open_sqlite(&self) -> SqliteStore {
        SqliteStore::open(&self.path).expect("open the test database")
    }

    fn remove_files(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove_files();
    }
}

pub fn payload<T: serde::Serialize>(value: T) -> Payload {
    Payload::encode(&value).expect("encode a test payload")
}

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
    }
}

pub fn start_request(workflow_id: &str, run_id: &str, now_ms: i64) -> StartRequest {
    StartRequest {
        run: new_run(workflow_id, run_id),
        policy: IdConflictPolicy::Fail,
        messages: Vec::new(),
        now_ms,
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

pub fn signal(name: &str, signal_id: Option<&str>) -> Message {
    Message::Signal {
        name: name.into(),
        args: payload((name,)),
        signal_id: signal_id.map(Into::into),
    }
}

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
        .poll_workflow_tasks(worker, now_ms, 10_000, 10)
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
        events: vec![(
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
        resolve_activities: Vec::new(),
        new_timers: Vec::new(),
        cancel_timers: Vec::new(),
        start_children: Vec::new(),
        deliver: Vec::new(),
        terminate: Vec::new(),
        notify: Vec::new(),
        updates: Vec::new(),
        close: None,
        summary: Payload::default(),
        sync: true,
        now_ms,
    }
}

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
