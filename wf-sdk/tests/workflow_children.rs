//! Child workflows: result awaited, start conflicts, parent close policies, signals between
//! parent and child, termination reported to the parent; child handles (`ctx.start_child`):
//! typed signals from the parent, cancellation, replay.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    error::ChildError,
    history::{EventKind, ReplayError, Replayer},
    payload::Payload,
};

#[derive(Default)]
pub struct Child {
    bonus: u32,
    release: bool,
}

#[workflow]
impl Child {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        // Tell the parent we are here, then wait for its go-ahead.
        if let Some(parent) = ctx.parent() {
            ctx.signal_external(&parent.workflow_id, "child_ready", &(ctx.workflow_id(),))?;
        }
        ctx.wait_condition(|s| s.release).await;
        if n == 0 {
            return Err(WorkflowError::new("zero is not allowed"));
        }
        Ok(n * 10 + ctx.state(|s| s.bonus))
    }

    #[signal]
    fn release(&mut self, bonus: u32) {
        self.bonus = bonus;
        self.release = true;
    }

    #[query]
    fn released(&self) -> bool {
        self.release
    }
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Plan {
    pub children: Vec<(String, u32)>,
    pub policy: ParentClosePolicy,
    pub wait: bool,
    pub release: bool,
    #[serde(default)]
    pub queue: Option<String>,
}

#[derive(Default)]
pub struct Parent {
    ready: Vec<String>,
}

#[workflow]
impl Parent {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        plan: Plan,
    ) -> Result<Vec<String>, WorkflowError> {
        let mut calls = Vec::new();
        for (id, n) in &plan.children {
            let call = ctx
                .child::<Child>(id.clone(), n)
                .parent_close_policy(plan.policy);
            let call = match &plan.queue {
                Some(q) => call.task_queue(q.clone()),
                None => call,
            };
            calls.push((id.clone(), call));
        }
        if !plan.wait {
            // Start them (first poll), then return at once: the close policy applies.
            for (_, call) in calls.iter_mut() {
                let _ = futures_poll_once(call);
            }
            let n = plan.children.len();
            ctx.wait_condition(move |s| s.ready.len() == n).await;
            return Ok(vec!["parent done".into()]);
        }
        let n = plan.children.len();
        // Each child signals "child_ready"; release them all with a bonus.
        let mut out = Vec::new();
        let mut pending = Vec::new();
        for (id, call) in calls {
            pending.push((id, call));
        }
        let mut started = Vec::new();
        for (id, call) in pending.iter_mut() {
            let _ = futures_poll_once(call);
            started.push(id.clone());
        }
        ctx.wait_condition(move |s| s.ready.len() == n).await;
        if plan.release {
            for id in &started {
                ctx.signal_external(id, "release", &(5u32,))?;
            }
        }
        for (id, call) in pending {
            match call.await {
                Ok(v) => out.push(format!("{id}={v}")),
                Err(ChildError::Failed(m)) => out.push(format!("{id} failed: {m}")),
                Err(e) => out.push(format!("{id}: {e}")),
            }
        }
        Ok(out)
    }

    #[signal]
    fn child_ready(&mut self, id: String) {
        self.ready.push(id);
    }
}

/// Polls a child call once so its start command is issued without awaiting it.
fn futures_poll_once<F: std::future::Future + Unpin>(f: &mut F) -> std::task::Poll<F::Output> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    std::pin::Pin::new(f).poll(&mut cx)
}

async fn engine(backend: Backend, tag: &str) -> Engine {
    builder(backend, tag)
        .workflow::<Parent>()
        .workflow::<Child>()
        .build()
        .await
        .unwrap()
}

async fn parent_awaits_children_and_they_signal_each_other(backend: Backend) {
    let engine = engine(backend, "children").await;
    let plan = Plan {
        children: vec![("c-1".into(), 1), ("c-2".into(), 0)],
        policy: ParentClosePolicy::Terminate,
        wait: true,
        release: true,
        queue: None,
    };
    let h = engine.client().start::<Parent>("p", plan).await.unwrap();
    let out = h.result().await.unwrap();
    assert_eq!(
        out,
        vec![
            "c-1=15".to_string(),
            "c-2 failed: zero is not allowed".to_string()
        ]
    );
    let hist = h.history().await.unwrap();
    assert_eq!(
        count(&hist, |k| matches!(
            k,
            EventKind::ChildWorkflowStarted { .. }
        )),
        2
    );
    assert_eq!(
        count(&hist, |k| matches!(
            k,
            EventKind::ChildWorkflowClosed { .. }
        )),
        2
    );
    assert_eq!(
        count(&hist, |k| matches!(k, EventKind::ExternalSignalSent { .. })),
        2
    );
    // The child's history names its parent.
    let child = engine.client().history("c-1").await.unwrap();
    assert!(
        matches!(&child[0].kind, EventKind::WorkflowStarted { parent: Some(p), .. } if p.workflow_id == "p")
    );
}

async fn parent_close_policies_apply(backend: Backend) {
    let engine = engine(backend, "close-policy").await;
    let client = engine.client();
    for (tag, policy, expected) in [
        ("t", ParentClosePolicy::Terminate, RunStatus::Terminated),
        ("a", ParentClosePolicy::Abandon, RunStatus::Running),
        ("c", ParentClosePolicy::RequestCancel, RunStatus::Cancelled),
    ] {
        let child_id = format!("{tag}-child");
        let plan = Plan {
            children: vec![(child_id.clone(), 3)],
            policy,
            wait: false,
            release: true,
            queue: None,
        };
        let h = client
            .start::<Parent>(format!("{tag}-parent"), plan)
            .await
            .unwrap();
        h.result().await.unwrap();
        let child = client.handle::<Child>(child_id.clone());
        if policy == ParentClosePolicy::RequestCancel {
            // The child got the cancellation request: its wait on a condition is interrupted
            // and it ends as cancelled.
            let r = child.result().await;
            assert!(matches!(r, Err(WfError::Cancelled(_))), "{r:?}");
            let hist = child.history().await.unwrap();
            assert!(hist
                .iter()
                .any(|e| matches!(e.kind, EventKind::CancelRequested { .. })));
            continue;
        }
        let d = child.describe().await.unwrap();
        assert_eq!(d.status, expected, "{policy:?}");
        if expected == RunStatus::Running {
            child.release(1).await.unwrap();
            assert_eq!(child.result().await.unwrap(), 31);
        }
    }
}

async fn a_running_child_id_fails_the_start(backend: Backend) {
    let engine = engine(backend, "child-conflict").await;
    let client = engine.client();
    client.start::<Child>("busy", 1).await.unwrap();
    let plan = Plan {
        children: vec![("busy".into(), 2)],
        policy: ParentClosePolicy::Abandon,
        wait: true,
        release: true,
        queue: None,
    };
    // The parent waits for a "child_ready" that never comes from the failed start... so give
    // it one by hand after checking the failure landed.
    let h = client.start::<Parent>("p", plan).await.unwrap();
    eventually("the start failure", || async {
        let hist = h.history().await.ok()?;
        hist.iter()
            .any(|e| {
                matches!(
                    &e.kind,
                    EventKind::ChildWorkflowClosed {
                        outcome: wf_sdk::history::ChildOutcome::StartFailed(_),
                        ..
                    }
                )
            })
            .then_some(())
    })
    .await;
    h.child_ready("busy".into()).await.unwrap();
    let out = h.result().await.unwrap();
    assert!(out[0].starts_with("busy: child could not start"), "{out:?}");
}

async fn terminating_a_child_tells_its_parent(backend: Backend) {
    let engine = engine(backend, "child-terminated").await;
    let client = engine.client();
    let plan = Plan {
        children: vec![("doomed".into(), 2)],
        policy: ParentClosePolicy::Terminate,
        wait: true,
        release: false,
        queue: None,
    };
    let h = client.start::<Parent>("p", plan).await.unwrap();
    let child = client.handle::<Child>("doomed");
    // The child has run its first task once the parent holds its "child_ready" signal (a
    // query alone could answer from a child that has not run yet, which would never signal).
    until_recorded(&h, "the child running", |k| {
        matches!(k, EventKind::SignalReceived { .. })
    })
    .await;
    child.terminate("operator says no").await.unwrap();
    // The parent, waiting on the child's result, sees the termination.
    let out = tokio::time::timeout(Duration::from_secs(10), h.result())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out,
        vec!["doomed: child terminated: operator says no".to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_on_another_task_queue_runs_on_that_queues_engine() {
    let store: std::sync::Arc<dyn wf_sdk::store::Store> =
        std::sync::Arc::new(wf_sdk::store::MemoryStore::new());
    let parents = Engine::builder()
        .store(store.clone())
        .build_id("parents")
        .poll_interval(Duration::from_millis(5))
        .workflow::<Parent>()
        .workflow::<Child>()
        .build()
        .await
        .unwrap();
    let kids = Engine::builder()
        .store(store.clone())
        .task_queue("kids")
        .build_id("kids")
        .poll_interval(Duration::from_millis(5))
        .workflow::<Child>()
        .build()
        .await
        .unwrap();
    let plan = Plan {
        children: vec![("k-1".into(), 4)],
        policy: ParentClosePolicy::Terminate,
        wait: true,
        release: true,
        queue: Some("kids".into()),
    };
    let h = parents.client().start::<Parent>("p", plan).await.unwrap();
    assert_eq!(h.result().await.unwrap(), vec!["k-1=45".to_string()]);
    let child = kids.client().handle::<Child>("k-1");
    assert_eq!(child.describe().await.unwrap().task_queue, "kids");
    for e in child.history().await.unwrap() {
        if let EventKind::WorkflowTaskCompleted { build_id, .. } = e.kind {
            assert_eq!(
                build_id.as_deref(),
                Some("kids"),
                "the child ran on the kids engine"
            );
        }
    }
    assert_eq!(h.describe().await.unwrap().task_queue, "default");
}

async fn a_terminated_parent_closes_its_children_whatever_its_summary_size(backend: Backend) {
    let engine = engine(backend, "large-summary").await;
    let client = engine.client();
    let plan = Plan {
        children: vec![("big-child".into(), 2)],
        policy: ParentClosePolicy::Terminate,
        wait: true,
        release: false,
        queue: None,
    };
    let parent = client.start::<Parent>("big-parent", plan).await.unwrap();
    let child = client.handle::<Child>("big-child");
    eventually("the child to be running", || async {
        let d = child.describe().await.ok()?;
        (d.status == RunStatus::Running).then_some(())
    })
    .await;
    // Signals no handler takes are listed in the run's summary; 2,150 names at the name limit
    // take it past the 2 MiB payload limit, where encoding it used to fail and store an empty
    // summary: the termination below then knew of no child to close. Sent all at once, they
    // are recorded by a few workflow tasks, not 2,150 (each of which would store the summary).
    const SIGNALS: usize = 2_150;
    let names: Vec<String> = (0..SIGNALS)
        .map(|i| format!("{i:04}{}", "x".repeat(wf_sdk::limits::MAX_NAME_BYTES - 4)))
        .collect();
    assert!(names.iter().map(String::len).sum::<usize>() > wf_sdk::limits::MAX_PAYLOAD_BYTES);
    let mut sent = tokio::task::JoinSet::new();
    for name in names {
        let client = client.clone();
        sent.spawn(async move {
            let unit = Payload::encode(&()).unwrap();
            client.signal_raw("big-parent", &name, unit, None).await
        });
    }
    while let Some(signal) = sent.join_next().await {
        signal.unwrap().unwrap();
    }
    // A signal handed back to the inbox (the worker could not take it in memory) is answered
    // before a task records it: wait for the summary to list them all.
    eventually("every signal in the summary", || async {
        let d = parent.describe().await.ok()?;
        (d.buffered_signals.len() == SIGNALS).then_some(())
    })
    .await;
    parent.terminate("done with it").await.unwrap();
    assert_eq!(
        child.describe().await.unwrap().status,
        RunStatus::Terminated,
        "the parent close policy applied"
    );
}

both!(
    a_terminated_parent_closes_its_children_whatever_its_summary_size,
    parent_awaits_children_and_they_signal_each_other,
    parent_close_policies_apply,
    a_running_child_id_fails_the_start,
    terminating_a_child_tells_its_parent,
    cancelling_a_parent_cancels_its_children_but_abandoned_ones,
);

/// Sleeps an hour; a cancellation request ends it as cancelled.
#[derive(Default)]
pub struct Sleepy;

#[workflow]
impl Sleepy {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.sleep(Duration::from_secs(3600)).await?;
        Ok(())
    }
}

/// Starts a child of each policy, then awaits the terminating one.
#[derive(Default)]
pub struct Guardian;

#[workflow]
impl Guardian {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        let mut free = ctx
            .child::<Sleepy>("free", &())
            .parent_close_policy(ParentClosePolicy::Abandon);
        let _ = futures_poll_once(&mut free);
        match ctx.child::<Sleepy>("kept", &()).await {
            Err(ChildError::Cancelled(why)) => {
                assert!(ctx.cancel_requested(), "{why}");
                Err(WorkflowError::Cancelled)
            }
            other => Ok(format!("{other:?}")),
        }
    }
}

async fn cancelling_a_parent_cancels_its_children_but_abandoned_ones(backend: Backend) {
    let engine = builder(backend, "cancel-children")
        .workflow::<Guardian>()
        .workflow::<Sleepy>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Guardian>("guardian", ()).await.unwrap();
    let (kept, free) = (
        client.handle::<Sleepy>("kept"),
        client.handle::<Sleepy>("free"),
    );
    for child in [&kept, &free] {
        until_recorded(child, "the child asleep", |k| {
            matches!(k, EventKind::TimerStarted { .. })
        })
        .await;
    }
    h.cancel().await.unwrap();
    assert!(matches!(h.result().await, Err(WfError::Cancelled(_))));
    assert!(matches!(kept.result().await, Err(WfError::Cancelled(_))));
    let parent = kinds(&h.history().await.unwrap());
    assert!(parent.contains(&"ChildCancelRequested"), "{parent:?}");
    assert_eq!(
        free.describe().await.unwrap().status,
        RunStatus::Running,
        "an abandoned child outlives its parent's cancellation"
    );
    assert!(!kinds(&free.history().await.unwrap()).contains(&"CancelRequested"));
    engine.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Child handles: `ctx.start_child`, typed signals from the parent, `result()`, `cancel()`.

/// Waits for an approval; a cancellation request interrupts the wait.
#[derive(Default)]
pub struct Approval {
    by: Option<String>,
}

#[workflow(name = "approval")]
impl Approval {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, item: String) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.by.is_some()).await;
        if ctx.cancel_requested() {
            return Err(WorkflowError::Cancelled);
        }
        let by = ctx.state(|s| s.by.clone().unwrap_or_default());
        Ok(format!("{item} approved by {by}"))
    }

    /// Approves the item (the first approval counts).
    #[signal]
    fn approve(&mut self, by: String) {
        self.by.get_or_insert(by);
    }
}

/// Starts one approval child per item and keeps the handles; on `go` it approves each child
/// through its handle (cancels the one named "cancel-me") and collects the results.
#[derive(Default)]
pub struct Boss {
    runs: Vec<(String, String)>,
    go: bool,
}

#[workflow(name = "boss")]
impl Boss {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        items: Vec<String>,
    ) -> Result<Vec<String>, WorkflowError> {
        let mut children = Vec::new();
        for item in &items {
            let child = ctx
                .start_child::<Approval>(format!("ap-{item}"), item)
                .await?;
            let ids = (child.workflow_id().to_string(), child.run_id().to_string());
            ctx.state_mut(|s| s.runs.push(ids));
            children.push((item.clone(), child));
        }
        ctx.wait_condition(|s| s.go).await;
        for (item, child) in &children {
            if item == "cancel-me" {
                child.cancel();
            } else {
                child.approve("boss".to_string())?;
            }
        }
        let mut out = Vec::new();
        for (item, child) in children {
            out.push(match child.result().await {
                Ok(v) => v,
                Err(e) => format!("{item}: {e}"),
            });
        }
        Ok(out)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }

    /// The children started so far: (workflow id, run id) as their handles show them.
    #[query]
    fn runs(&self) -> Vec<(String, String)> {
        self.runs.clone()
    }
}

/// `Boss` with its children started in the other order: a change that does not replay.
#[derive(Default)]
pub struct BossReordered {
    go: bool,
}

#[workflow(name = "boss")]
impl BossReordered {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        items: Vec<String>,
    ) -> Result<Vec<String>, WorkflowError> {
        let mut children = Vec::new();
        for item in items.iter().rev() {
            children.push(
                ctx.start_child::<Approval>(format!("ap-{item}"), item)
                    .await?,
            );
        }
        ctx.wait_condition(|s| s.go).await;
        let mut out = Vec::new();
        for child in children {
            child.approve("boss".to_string())?;
            out.push(child.result().await?);
        }
        Ok(out)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

fn boss_engine(b: wf_sdk::engine::EngineBuilder) -> wf_sdk::engine::EngineBuilder {
    b.workflow::<Boss>()
        .workflow::<Approval>()
        .workflow::<Sleepy>()
}

/// The children the boss has started, once it has started `n`.
async fn started_children(h: &WorkflowHandle<Boss>, n: usize) -> Vec<(String, String)> {
    eventually("the children started", || async {
        let runs = h.runs().await.ok()?;
        (runs.len() == n).then_some(runs)
    })
    .await
}

async fn a_parent_signals_its_child_through_the_handle_and_gets_its_result(backend: Backend) {
    let engine = boss_engine(builder(backend, "child-handle"))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client
        .start::<Boss>("boss", vec!["a".to_string(), "b".to_string()])
        .await
        .unwrap();
    let runs = started_children(&h, 2).await;
    // The handle's run id is the child's first run id, as recorded in the parent's history.
    for (workflow_id, run_id) in &runs {
        assert_eq!(&client.describe(workflow_id).await.unwrap().run_id, run_id);
    }
    let hist = h.history().await.unwrap();
    let recorded: Vec<(String, String)> = hist
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ChildWorkflowStarted {
                workflow_id,
                run_id,
                ..
            } => Some((workflow_id.clone(), run_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(recorded, runs);
    h.go().await.unwrap();
    assert_eq!(
        h.result().await.unwrap(),
        vec![
            "a approved by boss".to_string(),
            "b approved by boss".to_string()
        ]
    );
    // The signals are the parent's commands, each aimed at its child's runs.
    let sent: Vec<(String, String, Option<String>)> = h
        .history()
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ExternalSignalSent {
                workflow_id,
                name,
                run_id,
                ..
            } => Some((workflow_id, name, run_id)),
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String, Option<String>)> = runs
        .iter()
        .map(|(w, r)| (w.clone(), "approve".to_string(), Some(r.clone())))
        .collect();
    assert_eq!(sent, expected);
    let child = kinds(&client.history("ap-a").await.unwrap());
    assert!(child.contains(&"SignalReceived"), "{child:?}");
}

async fn a_child_cancelled_through_its_handle_reports_it_to_the_parent(backend: Backend) {
    let engine = boss_engine(builder(backend, "child-handle-cancel"))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client
        .start::<Boss>("boss", vec!["cancel-me".to_string(), "b".to_string()])
        .await
        .unwrap();
    started_children(&h, 2).await;
    h.go().await.unwrap();
    let out = h.result().await.unwrap();
    assert!(out[0].starts_with("cancel-me: child cancelled"), "{out:?}");
    assert_eq!(out[1], "b approved by boss");
    assert!(kinds(&h.history().await.unwrap()).contains(&"ChildCancelRequested"));
    let child = client.handle::<Approval>("ap-cancel-me");
    assert!(matches!(child.result().await, Err(WfError::Cancelled(_))));
}

async fn a_signal_through_the_handle_of_a_child_that_did_not_start_reaches_nobody(
    backend: Backend,
) {
    let engine = boss_engine(builder(backend, "child-handle-conflict"))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    // Someone else holds the child's workflow id: the boss's start of it fails.
    let other = client
        .start::<Approval>("ap-x", "someone else's".to_string())
        .await
        .unwrap();
    let h = client
        .start::<Boss>("boss", vec!["x".to_string()])
        .await
        .unwrap();
    started_children(&h, 1).await;
    until_recorded(&h, "the start failure", |k| {
        matches!(
            k,
            EventKind::ChildWorkflowClosed {
                outcome: wf_sdk::history::ChildOutcome::StartFailed(_),
                ..
            }
        )
    })
    .await;
    h.go().await.unwrap();
    let out = h.result().await.unwrap();
    assert!(out[0].starts_with("x: child could not start"), "{out:?}");
    // The parent did send it (the history says so), but not to the run holding the id.
    assert!(kinds(&h.history().await.unwrap()).contains(&"ExternalSignalSent"));
    // Had the boss's approval reached the other run, it would have arrived before this one, and
    // the first approval counts.
    other.approve("its owner".into()).await.unwrap();
    assert_eq!(
        other.result().await.unwrap(),
        "someone else's approved by its owner",
        "another run holding the id got the child's signal"
    );
}

/// Runs the boss on `make()`'s engines: the first one is dropped (a crash) once the children
/// are started, a second one evicts the boss (cache of one) before `go`; returns the boss's
/// history and the children as its handles showed them, before and after.
async fn boss_across_crash_and_eviction(
    make: impl Fn() -> wf_sdk::engine::EngineBuilder,
) -> (
    wf_sdk::history::History,
    Vec<(String, String)>,
    Vec<(String, String)>,
) {
    let items = vec!["a".to_string(), "b".to_string()];
    let first = boss_engine(make()).build().await.unwrap();
    let h = first.client().start::<Boss>("boss", items).await.unwrap();
    let before = started_children(&h, 2).await;
    drop(first);
    let second = boss_engine(make()).cache_capacity(1).build().await.unwrap();
    let client = second.client();
    let h = client.handle::<Boss>("boss");
    // Another run takes the only cache slot: the boss is rebuilt by replay for the query.
    let bystander = client.start::<Sleepy>("bystander", ()).await.unwrap();
    until_recorded(&bystander, "the bystander's timer", |k| {
        matches!(k, EventKind::TimerStarted { .. })
    })
    .await;
    let after = h.runs().await.unwrap();
    h.go().await.unwrap();
    h.result().await.unwrap();
    let history = h.export().await.unwrap();
    assert!(h.describe().await.unwrap().task_failure.is_none());
    second.shutdown().await;
    (history, before, after)
}

async fn child_handles_replay_to_the_same_history_after_a_crash_and_an_eviction(backend: Backend) {
    let (history, before, after) =
        boss_across_crash_and_eviction(shared_store(backend, "child-handle-replay")).await;
    assert_eq!(
        before, after,
        "replay gives the handles the recorded run ids"
    );
    // The same run without interruption records the same events.
    let calm = boss_engine(builder(backend, "child-handle-calm"))
        .build()
        .await
        .unwrap();
    let h = calm
        .client()
        .start::<Boss>("boss", vec!["a".to_string(), "b".to_string()])
        .await
        .unwrap();
    started_children(&h, 2).await;
    h.go().await.unwrap();
    h.result().await.unwrap();
    let same: Vec<_> = kinds(&h.history().await.unwrap())
        .into_iter()
        .filter(|k| *k != "WorkflowTaskCompleted")
        .collect();
    let interrupted: Vec<_> = kinds(&history.events)
        .into_iter()
        .filter(|k| *k != "WorkflowTaskCompleted")
        .collect();
    assert_eq!(interrupted, same);
    // And the recorded history replays on the same code.
    Replayer::new()
        .workflow::<Boss>()
        .workflow::<Approval>()
        .replay(&history)
        .unwrap();
}

async fn children_started_in_another_order_fail_replay_naming_the_start(backend: Backend) {
    let engine = boss_engine(builder(backend, "child-handle-moved"))
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Boss>("boss", vec!["a".to_string(), "b".to_string()])
        .await
        .unwrap();
    started_children(&h, 2).await;
    h.go().await.unwrap();
    h.result().await.unwrap();
    let history = h.export().await.unwrap();
    let err = Replayer::new()
        .workflow::<BossReordered>()
        .workflow::<Approval>()
        .replay(&history)
        .unwrap_err();
    let ReplayError::NonDeterminism(d) = &err else {
        panic!("expected a nondeterminism error, got {err}");
    };
    let recorded = d.recorded.as_deref().unwrap_or_default();
    let issued = d.issued.as_deref().unwrap_or_default();
    assert!(
        recorded.starts_with("ChildWorkflowStarted") && recorded.contains("ap-a"),
        "{err}"
    );
    assert!(
        issued.starts_with("ChildWorkflowStarted") && issued.contains("ap-b"),
        "{err}"
    );
}

both!(
    a_parent_signals_its_child_through_the_handle_and_gets_its_result,
    a_child_cancelled_through_its_handle_reports_it_to_the_parent,
    a_signal_through_the_handle_of_a_child_that_did_not_start_reaches_nobody,
    child_handles_replay_to_the_same_history_after_a_crash_and_an_eviction,
    children_started_in_another_order_fail_replay_naming_the_start,
);

// ---------------------------------------------------------------------------------------------
// Fan-out with bounded concurrency.

/// Adds one to its input with an activity.
#[derive(Default)]
pub struct Increment;

#[workflow(name = "increment")]
impl Increment {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Tools::add_one, n).await?)
    }
}

/// Starts `count` increment children through handles, `bound` at a time, and collects their
/// results in order.
#[derive(Default)]
pub struct Spread;

#[workflow(name = "spread")]
impl Spread {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        (count, bound): (u32, usize),
    ) -> Result<Vec<u32>, WorkflowError> {
        let ctx = &*ctx;
        let jobs = (0..count).map(|i| async move {
            let child = ctx.start_child::<Increment>(format!("inc-{i}"), &i).await?;
            child.result().await
        });
        let results = wf_sdk::workflow::join_bounded(jobs, bound).await;
        Ok(results
            .into_iter()
            .collect::<Result<Vec<u32>, ChildError>>()?)
    }
}

async fn a_bounded_fan_out_runs_at_most_its_bound_of_children_at_once(backend: Backend) {
    let engine = builder(backend, "fan-out")
        .workflow::<Spread>()
        .workflow::<Increment>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Spread>("spread", (20u32, 5usize))
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), (1..=20).collect::<Vec<u32>>());
    let history = h.history().await.unwrap();
    let (mut running, mut most) = (0, 0);
    let mut started = Vec::new();
    for e in &history {
        match &e.kind {
            EventKind::ChildWorkflowStarted { workflow_id, .. } => {
                running += 1;
                started.push(workflow_id.clone());
            }
            EventKind::ChildWorkflowClosed { .. } => running -= 1,
            _ => {}
        }
        most = most.max(running);
    }
    assert_eq!(most, 5, "five children at once, never more");
    let in_order: Vec<String> = (0..20).map(|i| format!("inc-{i}")).collect();
    assert_eq!(started, in_order, "children start in the order given");
    engine.shutdown().await;
}

both!(a_bounded_fan_out_runs_at_most_its_bound_of_children_at_once);
