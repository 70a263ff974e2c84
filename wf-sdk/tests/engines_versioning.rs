//! Worker versioning through the public API, on every store: two engines with different
//! build ids share one store; pinned runs stay on the build that started them and drain
//! there while new runs go to the current build; auto-upgrade runs move to it; an operator
//! moves a pinned run whose build is gone.

mod common;
use common::*;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, WorkflowHandle},
    engine::EngineBuilder,
    history::EventKind,
    workflow::WorkflowDefinition,
};

/// Counts `step` signals until `finish`.
#[derive(Default)]
pub struct Order {
    steps: u32,
    done: bool,
}

#[workflow]
impl Order {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.steps))
    }

    #[signal]
    fn step(&mut self) {
        self.steps += 1;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[query]
    fn steps(&self) -> u32 {
        self.steps
    }
}

/// The same shape, for the auto-upgrade behaviour.
#[derive(Default)]
pub struct Subscription {
    steps: u32,
    done: bool,
}

#[workflow]
impl Subscription {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.steps))
    }

    #[signal]
    fn step(&mut self) {
        self.steps += 1;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }
}

/// An engine of build `build`: `Order` pinned, `Subscription` auto-upgrade (the default).
async fn engine_of(builder: EngineBuilder, build: &str) -> Engine {
    builder
        .build_id(build)
        .workflow::<Order>()
        .workflow::<Subscription>()
        .versioning::<Order>(VersioningBehavior::Pinned)
        .build()
        .await
        .unwrap()
}

/// The build ids of the run's completed workflow tasks, in order.
async fn task_builds<W: WorkflowDefinition>(h: &WorkflowHandle<W>) -> Vec<String> {
    let history = h.history().await.unwrap();
    history
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::WorkflowTaskCompleted { build_id, .. } => Some(build_id.unwrap_or_default()),
            _ => None,
        })
        .collect()
}

/// Waits until the run has `n` completed workflow tasks and returns their builds.
async fn builds_after<W: WorkflowDefinition>(h: &WorkflowHandle<W>, n: usize) -> Vec<String> {
    eventually("the workflow tasks", || async {
        let builds = task_builds(h).await;
        (builds.len() >= n).then_some(builds)
    })
    .await
}

/// (pinned, auto-upgrade, not started) counts of `build`, zeros when it is not listed.
async fn counts(client: &Client, build: &str) -> (u64, u64, u64) {
    let builds = client.build_ids(Some("default")).await.unwrap();
    builds
        .iter()
        .find(|b| b.build_id == build)
        .map_or((0, 0, 0), |b| (b.pinned, b.auto_upgrade, b.not_started))
}

async fn pinned_runs_drain_on_their_build_while_new_runs_go_to_the_current_one(backend: Backend) {
    let engines = shared_store(backend, "versioning-drain");
    let a = engine_of(engines(), "A").await;
    let b = engine_of(engines(), "B").await;
    let (ca, cb) = (a.client(), b.client());

    // Before any current build: a pinned run stays on the build of its first task, whichever
    // client signals it.
    // (A first task that records nothing leaves no `WorkflowTaskCompleted`: the signals' do.)
    let old = ca.start::<Order>("old", ()).await.unwrap();
    let sub = ca.start::<Subscription>("sub", ()).await.unwrap();
    let from_b = cb.handle::<Order>("old");
    for _ in 0..3 {
        from_b.step().await.unwrap();
    }
    eventually("three steps", || async {
        let history = old.history().await.ok()?;
        let applied = history
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SignalReceived { .. }))
            .count();
        (applied == 3).then_some(())
    })
    .await;
    let builds = task_builds(&old).await;
    assert!(!builds.is_empty());
    assert!(builds.iter().all(|b| b == "A"), "{builds:?}");
    assert_eq!(counts(&ca, "A").await, (1, 0, 0));

    // B becomes current: new runs start on B (even from A's client), the auto-upgrade run
    // moves to B, the pinned run stays on A.
    ca.set_current_build("default", "B").await.unwrap();
    let new = ca.start::<Order>("new", ()).await.unwrap();
    new.step().await.unwrap();
    let new_builds = builds_after(&new, 1).await;
    assert_eq!(new_builds, ["B"]);
    assert_eq!(counts(&ca, "A").await, (1, 0, 0));
    assert_eq!(counts(&ca, "B").await, (1, 1, 0));
    let listed = cb
        .list(ListFilter {
            build_id: Some("B".into()),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    let mut on_b: Vec<(String, Option<String>)> = listed
        .into_iter()
        .map(|r| (r.workflow_id, r.build_id))
        .collect();
    on_b.sort();
    let b_id = Some("B".to_string());
    assert_eq!(
        on_b,
        [("new".into(), b_id.clone()), ("sub".into(), b_id.clone())]
    );

    sub.step().await.unwrap();
    let sub_builds = builds_after(&sub, 1).await;
    assert_eq!(
        sub_builds.last().map(String::as_str),
        Some("B"),
        "{sub_builds:?}"
    );

    // The old run drains on A while B runs: A's count falls to 0.
    from_b.finish().await.unwrap();
    assert_eq!(old.result().await.unwrap(), 3);
    let builds = task_builds(&old).await;
    assert!(builds.iter().all(|b| b == "A"), "{builds:?}");
    assert_eq!(counts(&ca, "A").await, (0, 0, 0));
    assert!(cb
        .build_ids(None)
        .await
        .unwrap()
        .iter()
        .all(|s| s.build_id != "A"));

    new.finish().await.unwrap();
    sub.finish().await.unwrap();
    assert_eq!(new.result().await.unwrap(), 1);
    assert_eq!(sub.result().await.unwrap(), 1);
    let builds = task_builds(&new).await;
    assert!(builds.iter().all(|b| b == "B"), "{builds:?}");
    a.shutdown().await;
    b.shutdown().await;
}

async fn move_to_build_lets_another_build_finish_a_pinned_run(backend: Backend) {
    let engines = shared_store(backend, "versioning-move");
    let a = engine_of(engines(), "A").await;
    let h = a.client().start::<Order>("stuck", ()).await.unwrap();
    h.step().await.unwrap();
    assert_eq!(builds_after(&h, 1).await, ["A"]);
    a.shutdown().await;

    let b = engine_of(engines(), "B").await;
    let cb = b.client();
    let h = cb.handle::<Order>("stuck");
    h.step().await.unwrap();
    // Build A is gone: nothing runs the pinned run's task until it moves.
    assert_eq!(counts(&cb, "A").await, (1, 0, 0));
    assert_eq!(task_builds(&h).await.len(), 1);
    cb.move_to_build("stuck", "B").await.unwrap();
    assert_eq!(counts(&cb, "B").await, (1, 0, 0));
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 2);
    let builds = task_builds(&h).await;
    assert_eq!(builds.last().map(String::as_str), Some("B"), "{builds:?}");
    assert!(matches!(
        cb.move_to_build("stuck", "A").await,
        Err(WfError::RunFinished { .. })
    ));
    b.shutdown().await;
}

both!(
    pinned_runs_drain_on_their_build_while_new_runs_go_to_the_current_one,
    move_to_build_lets_another_build_finish_a_pinned_run,
);
