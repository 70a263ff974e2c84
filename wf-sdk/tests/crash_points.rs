//! A crash at every commit point: six scenarios (an agent loop with a pause and an
//! update, an approval with a timer, a payment with activity retries, a child workflow, a
//! continue-as-new chain, a stream written by a workflow and its activity) each run once to count their commits K, then once per commit k in
//! 1..=K and per way of dying ([`CRASHES`]: right after the commit, applied but unacknowledged,
//! not applied), with the fault-injecting store killing the process at commit k. The engine is
//! then dropped without a clean close, a fresh engine opens the same store (the same in-memory
//! store, or the SQLite file reopened) and the client retries what it had not seen answered,
//! with signal and update ids and a start that keeps the existing run. Every ending must be
//! the uncrashed one, every acknowledged signal and update in history exactly once, no
//! activity completion, timer firing, child completion or run close recorded twice, and each
//! stream entry stored once, in order.

mod common;
use common::*;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::testing::faults::{Crash, FaultStore, CRASHES};
use wf_sdk::{
    client::{IdConflictPolicy, ListFilter, StartOptions, UpdateStage},
    history::{EventKind, HistoryEvent},
    payload::Payload,
    store::{MemoryStore, SqliteStore, Store},
    workflow::WorkflowDefinition,
};

// ---------------------------------------------------------------------------------------------
// The scenarios' workflows and activities

/// Retries fast, so that an attempt lost in a crash is retried within milliseconds.
fn fast() -> RetryPolicy {
    RetryPolicy {
        initial_interval: Duration::from_millis(10),
        backoff_coefficient: 1.0,
        maximum_interval: Some(Duration::from_millis(10)),
        ..RetryPolicy::default()
    }
}

pub struct Steps;

#[activities]
impl Steps {
    #[activity]
    pub async fn step(
        &self,
        _ctx: ActivityContext,
        goal: String,
        i: u32,
    ) -> Result<String, ActivityError> {
        Ok(format!("{goal} step {i}"))
    }

    #[activity]
    pub async fn plan(&self, _ctx: ActivityContext, goal: String) -> Result<String, ActivityError> {
        Ok(format!("planned {goal}"))
    }

    /// Fails its first two attempts.
    #[activity]
    pub async fn charge(&self, ctx: ActivityContext, amount: u32) -> Result<String, ActivityError> {
        if ctx.attempt() <= 2 {
            return Err(ActivityError::retryable("card network timeout"));
        }
        Ok(format!("charged {amount}"))
    }

    #[activity]
    pub async fn double(&self, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        Ok(n * 2)
    }

    /// Writes two entries to the run's stream `steps`, then fails its first attempt: the
    /// retry writes them again (landing once) and a third.
    #[activity]
    pub async fn narrate(&self, ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        ctx.stream("steps").write(&format!("narrate {n} a")).await?;
        ctx.stream("steps").write(&format!("narrate {n} b")).await?;
        if ctx.attempt() == 1 {
            return Err(ActivityError::retryable("model overloaded"));
        }
        ctx.stream("steps").write(&format!("narrate {n} c")).await?;
        Ok(n * 2)
    }
}

#[derive(serde::Serialize, serde::Deserialize, Clone)]
pub struct Goal {
    goal: String,
}

#[derive(Default)]
pub struct Agent {
    goal: String,
    paused: bool,
    resumed: bool,
}

#[workflow(name = "crash_agent")]
impl Agent {
    #[init]
    fn new(input: &Goal) -> Self {
        Agent {
            goal: input.goal.clone(),
            ..Default::default()
        }
    }

    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, _input: Goal) -> Result<String, WorkflowError> {
        let mut notes = Vec::new();
        for i in 1..=2 {
            ctx.wait_condition(|s| s.resumed && !s.paused).await;
            let goal = ctx.state(|s| s.goal.clone());
            notes.push(ctx.activity(Steps::step, (goal, i)).retry(fast()).await?);
        }
        ctx.handlers_drained().await;
        Ok(notes.join("; "))
    }

    #[signal]
    fn pause(&mut self) {
        self.paused = true;
    }

    #[signal]
    fn resume(&mut self) {
        self.paused = false;
        self.resumed = true;
    }

    #[update]
    async fn change_goal(
        ctx: &mut WorkflowContext<Self>,
        goal: String,
    ) -> Result<String, UpdateError> {
        let planned = ctx.activity(Steps::plan, goal).retry(fast()).await?;
        Ok(ctx.state_mut(|s| std::mem::replace(&mut s.goal, planned)))
    }
}

#[derive(Default)]
pub struct Approval {
    approver: Option<String>,
}

#[workflow(name = "crash_approval")]
impl Approval {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, amount: u32) -> Result<String, WorkflowError> {
        // A reminder goes out after a short while, whether or not the approval is in.
        ctx.sleep(Duration::from_millis(40)).await?;
        ctx.wait_condition(|s| s.approver.is_some()).await;
        let who = ctx.state(|s| s.approver.clone().unwrap_or_default());
        Ok(format!("{amount} approved by {who} after a reminder"))
    }

    #[signal]
    fn approve(&mut self, who: String) {
        self.approver.get_or_insert(who);
    }
}

#[derive(Default)]
pub struct Payment;

#[workflow(name = "crash_payment")]
impl Payment {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, amount: u32) -> Result<String, WorkflowError> {
        let charged = ctx.activity(Steps::charge, amount).retry(fast()).await?;
        let doubled = ctx.activity(Steps::double, amount).retry(fast()).await?;
        Ok(format!("{charged}, receipt r-{doubled}"))
    }
}

#[derive(Default)]
pub struct Doubler;

#[workflow(name = "crash_doubler")]
impl Doubler {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Steps::double, n).retry(fast()).await?)
    }
}

#[derive(Default)]
pub struct Parent;

#[workflow(name = "crash_parent")]
impl Parent {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<String, WorkflowError> {
        let doubled = ctx.child::<Doubler>("crash-child", &n).await?;
        Ok(format!("the child doubled {n} into {doubled}"))
    }
}

#[derive(Default)]
pub struct Streamer;

#[workflow(name = "crash_streamer")]
impl Streamer {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<String, WorkflowError> {
        ctx.stream("steps").write(&format!("start {n}"))?;
        let doubled = ctx.activity(Steps::narrate, n).retry(fast()).await?;
        ctx.stream("steps").write(&format!("doubled {doubled}"))?;
        ctx.sleep(Duration::from_millis(1)).await?;
        ctx.stream("steps").write(&"slept".to_string())?;
        ctx.stream("steps").close()?;
        Ok(format!("streamed {doubled}"))
    }
}

#[derive(Default)]
pub struct Counter;

#[workflow(name = "crash_counter")]
impl Counter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        let next = ctx.activity(Steps::double, n).retry(fast()).await? + 1;
        if next < 10 {
            return Err(ctx.continue_as_new(&next));
        }
        Ok(next)
    }
}

// ---------------------------------------------------------------------------------------------
// Engines, stores and the client driver

/// Where a scenario's store lives; each engine opens it afresh (the in-memory store is
/// shared, the SQLite file reopened).
enum Db {
    Memory(Arc<MemoryStore>),
    Sqlite(PathBuf),
    Postgres(wf_postgres::testing::TestSchema),
}

impl Db {
    fn new(backend: Backend) -> Db {
        match backend {
            Backend::Memory => Db::Memory(Arc::new(MemoryStore::new())),
            Backend::Sqlite => Db::Sqlite(temp_db("crash-points")),
            Backend::Postgres => Db::Postgres(
                wf_postgres::testing::TestSchema::new("crash_points")
                    .expect("the PostgreSQL tests run only when a database is configured"),
            ),
        }
    }

    async fn open(&self) -> Arc<dyn Store> {
        match self {
            Db::Memory(m) => m.clone(),
            Db::Sqlite(path) => Arc::new(SqliteStore::open(path).expect("the test file opens")),
            Db::Postgres(schema) => Arc::new(schema.open().await),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Db::Sqlite(path) = self {
            for suffix in ["", "-wal", "-shm"] {
                let mut p = path.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// An engine with short leases and fast polls, so that a dead engine's work is taken over
/// within a fraction of a second.
async fn engine(store: Arc<dyn Store>) -> Engine {
    Engine::builder()
        .store(store)
        .poll_interval(Duration::from_millis(20))
        .liveness_lease(Duration::from_millis(150))
        .workflow_task_lease(Duration::from_secs(1))
        .workflow::<Agent>()
        .workflow::<Approval>()
        .workflow::<Payment>()
        .workflow::<Doubler>()
        .workflow::<Parent>()
        .workflow::<Counter>()
        .workflow::<Streamer>()
        .activities(Steps)
        .build()
        .await
        .expect("the engine starts")
}

/// The client side of a scenario: each call is retried on a fresh engine if the process
/// crashed before it was answered.
struct Driver {
    db: Db,
    faults: Arc<FaultStore>,
    engine: Option<Engine>,
    client: Client,
    restarted: bool,
    signals: Vec<String>,
    updates: Vec<String>,
}

impl Driver {
    async fn new(db: Db, crash: Option<(u64, Crash)>) -> Driver {
        let faults = FaultStore::new(db.open().await);
        if let Some((k, how)) = crash {
            faults.crash_at(k, how);
        }
        let engine = engine(faults.clone()).await;
        Driver {
            db,
            faults,
            client: engine.client(),
            engine: Some(engine),
            restarted: false,
            signals: Vec::new(),
            updates: Vec::new(),
        }
    }

    /// The process died: drop its engine without a clean close and start a fresh one.
    async fn restart(&mut self) {
        drop(self.engine.take());
        let engine = engine(self.db.open().await).await;
        self.client = engine.client();
        self.engine = Some(engine);
        self.restarted = true;
    }

    /// Runs `call` until it is answered, on a fresh engine after a crash.
    async fn call<T, F, Fut>(&mut self, what: &str, call: F) -> T
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, WfError>>,
    {
        loop {
            let answer = if self.restarted {
                Some(call(self.client.clone()).await)
            } else {
                tokio::select! {
                    answer = call(self.client.clone()) => Some(answer),
                    () = self.faults.crashed() => None,
                }
            };
            match answer {
                Some(Ok(v)) => return v,
                Some(Err(_)) | None if !self.restarted && self.faults.is_crashed() => {
                    self.restart().await
                }
                Some(Err(e)) => panic!("{what} failed: {e}"),
                None => unreachable!("a crash is seen only before the restart"),
            }
        }
    }

    async fn start<W: WorkflowDefinition>(&mut self, id: &'static str, input: W::Input)
    where
        W::Input: Clone,
    {
        // A retried start keeps the run an unanswered start created.
        let options = StartOptions {
            id_conflict: IdConflictPolicy::UseExisting,
            ..StartOptions::default()
        };
        self.call("start", |c| {
            let (input, options) = (input.clone(), options.clone());
            async move { c.start_with::<W>(id, input, options).await.map(|_| ()) }
        })
        .await
    }

    async fn signal<A>(&mut self, id: &'static str, name: &'static str, args: A, signal_id: &str)
    where
        A: serde::Serialize,
    {
        let args = Payload::encode(&args).expect("the arguments encode");
        let tries = AtomicUsize::new(0);
        self.call("signal", |c| {
            let (args, signal_id) = (args.clone(), signal_id.to_string());
            let retry = tries.fetch_add(1, Ordering::SeqCst) > 0;
            async move {
                match c.signal_raw(id, name, args, Some(signal_id)).await {
                    // The first try was applied and the run went on to finish: a signal to a
                    // closed run is refused even when it is a duplicate (as Temporal does).
                    // The history check below says whether it was recorded, once.
                    Err(WfError::RunFinished { .. }) if retry => Ok(()),
                    other => other,
                }
            }
        })
        .await;
        self.signals.push(signal_id.to_string());
    }

    async fn result(&mut self, id: &'static str) -> String {
        let payload = self
            .call("result", |c| async move { c.result_raw(id).await })
            .await;
        payload
            .decode::<String>()
            .or_else(|_| payload.decode::<u32>().map(|n| n.to_string()))
            .expect("every scenario ends with a string or a number")
    }

    /// Every run's history, by workflow id.
    async fn histories(&mut self) -> HashMap<String, Vec<Vec<HistoryEvent>>> {
        // The crash may come after the ending was answered (a commit that follows it).
        self.call("read the histories", |c| async move {
            let mut all: HashMap<String, Vec<Vec<HistoryEvent>>> = HashMap::new();
            for run in c.list(ListFilter::default()).await? {
                let h = c.run_history(&run.run_id, &run.workflow_id).await?;
                all.entry(run.workflow_id).or_default().push(h);
            }
            Ok(all)
        })
        .await
    }
}

/// The six scenarios.
#[derive(Debug, Clone, Copy)]
enum Scenario {
    Agent,
    Approval,
    Payment,
    Child,
    ContinueAsNew,
    Stream,
}

const SCENARIOS: [Scenario; 6] = [
    Scenario::Agent,
    Scenario::Approval,
    Scenario::Payment,
    Scenario::Child,
    Scenario::ContinueAsNew,
    Scenario::Stream,
];

/// What a scenario ended with.
#[derive(Debug, PartialEq)]
struct Ending {
    outcome: String,
    /// Runs per workflow id.
    runs: Vec<(String, usize)>,
}

/// Runs `scenario` to its end; with `crash`, the process dies at that commit and a fresh
/// engine finishes. Returns the ending, the commits counted before any crash, and whether the
/// crash happened. Checks that nothing acknowledged was lost and nothing recorded twice.
async fn play(
    scenario: Scenario,
    backend: Backend,
    crash: Option<(u64, Crash)>,
) -> (Ending, u64, bool) {
    let mut d = Driver::new(Db::new(backend), crash).await;
    let id = match scenario {
        Scenario::Agent => {
            d.start::<Agent>(
                "agent",
                Goal {
                    goal: "ship".into(),
                },
            )
            .await;
            d.signal("agent", "pause", (), "pause-1").await;
            let args = Payload::encode(&("tests".to_string(),)).unwrap();
            let update = |c: Client| {
                let args = args.clone();
                async move {
                    let id = Some("goal-1".to_string());
                    c.update_raw("agent", "change_goal", args, id, UpdateStage::Completed)
                        .await
                        .map(|(_, value)| value)
                }
            };
            let previous = d.call("update", update).await;
            assert_eq!(previous.decode::<String>().unwrap(), "ship");
            d.updates.push("goal-1".into());
            d.signal("agent", "resume", (), "resume-1").await;
            "agent"
        }
        Scenario::Approval => {
            d.start::<Approval>("approval", 500).await;
            d.signal("approval", "approve", ("alice".to_string(),), "approve-1")
                .await;
            "approval"
        }
        Scenario::Payment => {
            d.start::<Payment>("payment", 42).await;
            "payment"
        }
        Scenario::Child => {
            d.start::<Parent>("parent", 21).await;
            "parent"
        }
        Scenario::ContinueAsNew => {
            d.start::<Counter>("counter", 0).await;
            "counter"
        }
        Scenario::Stream => {
            d.start::<Streamer>("streamer", 7).await;
            "streamer"
        }
    };
    let mut outcome = d.result(id).await;
    if let Scenario::Stream = scenario {
        // Every entry once, in order, at offsets 0, 1, 2...: the stream read is the ending.
        let entries = d
            .call("read the stream", |c| async move {
                c.handle::<Streamer>("streamer")
                    .stream::<String>("steps")
                    .collect()
                    .await
            })
            .await;
        for (i, (offset, _)) in entries.iter().enumerate() {
            assert_eq!(*offset, i as u64, "{scenario:?}: offsets are dense");
        }
        let texts: Vec<String> = entries.into_iter().map(|(_, t)| t).collect();
        outcome = format!("{outcome}: {}", texts.join(", "));
        assert_eq!(
            outcome,
            "streamed 14: start 7, narrate 7 a, narrate 7 b, narrate 7 c, doubled 14, slept",
            "{scenario:?}: the stream holds each write once, in order"
        );
    }
    let histories = d.histories().await;
    check_once(&histories, &d.signals, &d.updates, scenario);
    let mut runs: Vec<(String, usize)> = histories
        .iter()
        .map(|(k, v)| (k.clone(), v.len()))
        .collect();
    runs.sort();
    let commits = d.faults.commits();
    let crashed = d.faults.is_crashed();
    if let Some(engine) = d.engine.take() {
        engine.shutdown().await;
    }
    (Ending { outcome, runs }, commits, crashed)
}

/// Every acknowledged signal and update in history exactly once; no activity completion,
/// timer firing, child completion or run close twice.
fn check_once(
    histories: &HashMap<String, Vec<Vec<HistoryEvent>>>,
    signals: &[String],
    updates: &[String],
    scenario: Scenario,
) {
    let all = || histories.values().flatten().flatten();
    for id in signals {
        let n = all()
            .filter(|e| matches!(&e.kind, EventKind::SignalReceived { signal_id: Some(s), .. } if s == id))
            .count();
        assert_eq!(n, 1, "{scenario:?}: signal {id} recorded {n} times");
    }
    for id in updates {
        let accepted = all()
            .filter(|e| matches!(&e.kind, EventKind::UpdateAccepted { update_id, .. } if update_id == id))
            .count();
        let completed = all()
            .filter(|e| matches!(&e.kind, EventKind::UpdateCompleted { update_id, .. } if update_id == id))
            .count();
        assert_eq!((accepted, completed), (1, 1), "{scenario:?}: update {id}");
    }
    for (workflow_id, runs) in histories {
        let mut closed_runs = 0;
        for history in runs {
            let mut seen = std::collections::HashSet::new();
            let mut closes = 0;
            for e in history {
                let key = match &e.kind {
                    EventKind::ActivityCompleted { seq, .. } => ("activity completed", *seq),
                    EventKind::TimerFired { seq } => ("timer fired", *seq),
                    EventKind::ChildWorkflowClosed { seq, .. } => ("child closed", *seq),
                    EventKind::WorkflowCompleted { .. }
                    | EventKind::ContinuedAsNew { .. }
                    | EventKind::WorkflowFailed { .. } => {
                        closes += 1;
                        continue;
                    }
                    _ => continue,
                };
                assert!(
                    seen.insert(key),
                    "{scenario:?}: {workflow_id}: {key:?} recorded twice"
                );
            }
            assert!(
                closes <= 1,
                "{scenario:?}: a run of {workflow_id} closed {closes} times"
            );
            closed_runs += closes;
        }
        assert_eq!(
            closed_runs,
            runs.len(),
            "{scenario:?}: every run of {workflow_id} closed"
        );
    }
}

/// Each scenario uncrashed, then crashed at each of its commits in each way; returns the crash
/// points covered.
async fn every_crash_point(backend: Backend, scenarios: &[Scenario]) -> usize {
    let covered = Arc::new(AtomicUsize::new(0));
    let slots = Arc::new(tokio::sync::Semaphore::new(6));
    let mut all = tokio::task::JoinSet::new();
    let mut planned = 0;
    for &scenario in scenarios {
        let (expected, k_max, _) = play(scenario, backend, None).await;
        println!("{scenario:?} on {backend:?}: {k_max} commits, ending {expected:?}");
        let expected = Arc::new(expected);
        for k in 1..=k_max {
            for how in CRASHES {
                planned += 1;
                let (covered, slots, expected) = (covered.clone(), slots.clone(), expected.clone());
                all.spawn(async move {
                    let _slot = slots.acquire().await.expect("the semaphore stays open");
                    let what = format!(
                        "{scenario:?} on {backend:?}, crash {how:?} at commit {k} of {k_max}"
                    );
                    let played = tokio::time::timeout(
                        Duration::from_secs(30),
                        play(scenario, backend, Some((k, how))),
                    );
                    let (ending, _, crashed) = played
                        .await
                        .unwrap_or_else(|_| panic!("{what}: did not finish within 30 s"));
                    assert_eq!(ending, *expected, "{what}");
                    if crashed {
                        covered.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        }
    }
    while let Some(done) = all.join_next().await {
        if let Err(e) = done {
            std::panic::resume_unwind(e.into_panic());
        }
    }
    let covered = covered.load(Ordering::SeqCst);
    println!("{backend:?}: {covered} crash points covered of {planned} planned ({scenarios:?})");
    // A crash point the replay never reached (a run whose commits fell out otherwise) is not
    // counted; nearly all must be.
    assert!(
        covered * 10 >= planned * 9,
        "only {covered} of {planned} crash points reached"
    );
    covered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_commit_of_every_scenario_survives_a_crash_in_memory() {
    every_crash_point(Backend::Memory, &SCENARIOS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_commit_of_every_scenario_survives_a_crash_on_sqlite() {
    every_crash_point(Backend::Sqlite, &SCENARIOS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_commit_of_every_scenario_survives_a_crash_on_postgres() {
    if postgres_available() {
        every_crash_point(Backend::Postgres, &SCENARIOS).await;
    }
}
