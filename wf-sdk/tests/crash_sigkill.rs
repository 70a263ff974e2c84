//! Crash safety: the engine runs in a child process that is SIGKILLed between activities,
//! while paused and during an update; the parent reopens the same SQLite file and the run
//! finishes with nothing lost and nothing recorded twice.

mod common;
use common::*;
use std::collections::HashMap;
use std::process::Child;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{IdConflictPolicy, StartOptions},
    history::{EventKind, HistoryEvent},
};

#[derive(Default)]
pub struct Crashy {
    paused: bool,
    finish: bool,
    steps: Vec<u32>,
    notes: Vec<String>,
}

#[workflow]
impl Crashy {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        target: u32,
    ) -> Result<(Vec<u32>, Vec<String>), WorkflowError> {
        for i in 0..target {
            ctx.wait_condition(|s| !s.paused).await;
            let v = ctx
                .activity(Slow::step, i)
                .start_to_close(Duration::from_secs(2))
                .await?;
            ctx.state_mut(|s| s.steps.push(v));
        }
        ctx.wait_condition(|s| s.finish).await;
        ctx.handlers_drained().await;
        Ok(ctx.state(|s| (s.steps.clone(), s.notes.clone())))
    }

    #[signal]
    fn pause(&mut self) {
        self.paused = true;
    }

    #[signal]
    fn resume(&mut self) {
        self.paused = false;
    }

    #[signal]
    fn finish(&mut self) {
        self.finish = true;
    }

    #[update]
    async fn annotate(ctx: &mut WorkflowContext<Self>, note: String) -> Result<usize, UpdateError> {
        let echoed = ctx
            .activity(Slow::slow_echo, note)
            .start_to_close(Duration::from_secs(2))
            .await?;
        Ok(ctx.state_mut(|s| {
            s.notes.push(echoed);
            s.notes.len()
        }))
    }

    #[query]
    fn steps(&self) -> Vec<u32> {
        self.steps.clone()
    }
}

pub struct Slow;

#[activities]
impl Slow {
    #[activity]
    pub async fn step(&self, _ctx: ActivityContext, i: u32) -> Result<u32, ActivityError> {
        tokio::time::sleep(Duration::from_millis(40)).await;
        Ok(i * 10)
    }

    #[activity]
    pub async fn slow_echo(
        &self,
        _ctx: ActivityContext,
        s: String,
    ) -> Result<String, ActivityError> {
        tokio::time::sleep(Duration::from_millis(400)).await;
        Ok(s)
    }
}

/// The store of a crash test: a SQLite file's path, or `postgres:SCHEMA:URL`.
fn on_store(place: &str) -> wf_sdk::engine::EngineBuilder {
    engine_at(place)
}

fn worker(place: &str) -> wf_sdk::engine::EngineBuilder {
    on_store(place)
        .poll_interval(Duration::from_millis(20))
        .workflow_task_lease(Duration::from_millis(300))
        .workflow::<Crashy>()
        .activities(Slow)
}

/// The child: runs a worker on the file until killed.
#[test]
#[ignore = "runs only as the child process of crash tests"]
fn crash_child() {
    let Ok(path) = std::env::var("WF_CRASH_DB") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let engine = worker(&path).build().await.unwrap();
        let opts = StartOptions {
            id_conflict: IdConflictPolicy::UseExisting,
            ..Default::default()
        };
        engine
            .client()
            .start_with::<Crashy>("crashy", 8, opts)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
}

fn spawn_child(place: &str) -> Child {
    spawn_test_child("crash_child", "WF_CRASH_DB", place)
}

fn kill(mut child: Child) {
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

async fn history_until(
    h: &WorkflowHandle<Crashy>,
    what: &str,
    pred: impl Fn(&[HistoryEvent]) -> bool,
) {
    eventually(what, || async {
        let hist = h.history().await.ok()?;
        pred(&hist).then_some(())
    })
    .await
}

fn completed(hist: &[HistoryEvent]) -> usize {
    count(hist, |k| matches!(k, EventKind::ActivityCompleted { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_worker_loses_nothing_and_records_nothing_twice() {
    let path = temp_db("crash");
    sigkilled_worker(&path.to_string_lossy()).await;
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_worker_on_postgres_loses_nothing_and_records_nothing_twice() {
    if !postgres_available() {
        return;
    }
    sigkilled_worker(&new_place(Backend::Postgres, "crash")).await;
}

/// Worker processes on the store at `path` are SIGKILLed between activities, while paused,
/// and while an update's handler awaits its activity; the run loses nothing and records
/// nothing twice.
async fn sigkilled_worker(path: &str) {
    let observer = on_store(path)
        .client_only()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Crashy>()
        .build()
        .await
        .unwrap();
    let h = observer.client().handle::<Crashy>("crashy");

    // 1. Killed between activities.
    let child = spawn_child(path);
    history_until(&h, "three activities", |hist| completed(hist) >= 3).await;
    kill(child);
    let after_first = completed(&h.history().await.unwrap());

    // 2. Paused while no worker runs; killed while paused.
    h.pause().signal_id("pause-1").await.unwrap();
    let child = spawn_child(path);
    history_until(&h, "the pause applied", |hist| {
        hist.iter()
            .any(|e| matches!(&e.kind, EventKind::SignalReceived { name, .. } if name == "pause"))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    kill(child);
    let paused_at = completed(&h.history().await.unwrap());
    assert!(paused_at >= after_first);

    // 3. Killed while an update's handler awaits its activity.
    let update = {
        let h = h.clone();
        tokio::spawn(async move { h.annotate("hello".into()).update_id("note-1").await })
    };
    let child = spawn_child(path);
    history_until(&h, "the update accepted", |hist| {
        hist.iter()
            .any(|e| matches!(e.kind, EventKind::UpdateAccepted { .. }))
    })
    .await;
    kill(child);

    // 4. The client retries the pause (same id) and moves on; a fresh worker in this process
    //    reopens the file and finishes the run.
    h.pause().signal_id("pause-1").await.unwrap();
    h.resume().await.unwrap();
    h.finish().await.unwrap();
    let engine = worker(path).build().await.unwrap();
    let h = engine.client().handle::<Crashy>("crashy");
    let (steps, notes) = h.result().await.unwrap();
    assert_eq!(steps, (0..8).map(|i| i * 10).collect::<Vec<_>>());
    assert_eq!(notes, vec!["hello".to_string()]);
    assert_eq!(update.await.unwrap().unwrap(), 1);
    // A retry of the update after all those restarts returns the first outcome.
    assert_eq!(h.annotate("again".into()).update_id("note-1").await, Ok(1));

    let hist = h.history().await.unwrap();
    let mut scheduled = HashMap::new();
    let mut resolved = HashMap::new();
    for e in &hist {
        match &e.kind {
            EventKind::ActivityScheduled { seq, .. } => *scheduled.entry(*seq).or_insert(0) += 1,
            EventKind::ActivityCompleted { seq, .. } => *resolved.entry(*seq).or_insert(0) += 1,
            _ => {}
        }
    }
    assert_eq!(scheduled.len(), 9, "8 steps and the update's echo");
    assert!(scheduled.values().all(|n| *n == 1), "{scheduled:?}");
    assert!(resolved.values().all(|n| *n == 1), "{resolved:?}");
    assert_eq!(resolved.len(), 9);
    let pauses = count(
        &hist,
        |k| matches!(k, EventKind::SignalReceived { signal_id: Some(id), .. } if id == "pause-1"),
    );
    assert_eq!(pauses, 1);
    assert_eq!(
        count(&hist, |k| matches!(k, EventKind::UpdateAccepted { .. })),
        1
    );
    assert_eq!(
        count(&hist, |k| matches!(k, EventKind::UpdateCompleted { .. })),
        1
    );
    let ids: Vec<u64> = hist.iter().map(|e| e.event_id).collect();
    assert_eq!(
        ids,
        (1..=hist.len() as u64).collect::<Vec<_>>(),
        "dense event ids"
    );
    engine.shutdown().await;
}
