//! Updates: validation, acceptance, handlers that await activities and timers, failures,
//! panics, dedupe by update id, finished runs, and the deterministic mutex.

mod common;
use common::*;
use std::sync::atomic::Ordering;
use std::time::Duration;
use wf_sdk::history::EventKind;
use wf_sdk::prelude::*;
use wf_sdk::workflow::sync::Mutex;

#[derive(Default)]
pub struct Account {
    balance: u32,
    done: bool,
    gave_up: bool,
    lock: Mutex,
    log: Vec<String>,
}

#[workflow(name = "account")]
impl Account {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.done || s.gave_up).await;
        if ctx.state(|s| s.gave_up) {
            return Err(WorkflowError::new("the account gave up"));
        }
        ctx.handlers_drained().await;
        Ok(ctx.state(|s| s.balance))
    }

    /// Sync update: adds and returns the new balance.
    #[update]
    fn deposit(&mut self, amount: u32) -> Result<u32, UpdateError> {
        self.balance += amount;
        Ok(self.balance)
    }

    #[validator(deposit)]
    fn validate_deposit(&self, amount: &u32) -> Result<(), Rejection> {
        if *amount == 0 {
            return Err(Rejection::new("amount must be positive"));
        }
        Ok(())
    }

    /// Async update: computes through an activity and a timer, under the mutex so two racing
    /// calls do not overwrite each other's read-modify-write.
    #[update]
    async fn deposit_slowly(
        ctx: &mut WorkflowContext<Self>,
        amount: u32,
    ) -> Result<u32, UpdateError> {
        let lock = ctx.state(|s| s.lock.clone());
        let _guard = lock.lock().await;
        let before = ctx.state(|s| s.balance);
        ctx.sleep(Duration::from_millis(1)).await?;
        let mut after = before;
        for _ in 0..amount {
            after = ctx.activity(Tools::add_one, after).await?;
        }
        ctx.state_mut(|s| {
            s.balance = after;
            s.log.push(format!("{before}->{after}"));
        });
        Ok(after)
    }

    #[update]
    fn withdraw(&mut self, amount: u32) -> Result<u32, UpdateError> {
        if amount > self.balance {
            return Err(UpdateError::new(format!(
                "insufficient funds: balance {}",
                self.balance
            )));
        }
        self.balance -= amount;
        Ok(self.balance)
    }

    #[update]
    fn explode(&mut self) -> Result<(), UpdateError> {
        panic!("explode handler panics");
    }

    #[update(unfinished = "abandon")]
    async fn forever(ctx: &mut WorkflowContext<Self>) -> Result<(), UpdateError> {
        ctx.wait_condition(|_| false).await;
        Ok(())
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    /// Fails the run, whatever its handlers are doing.
    #[signal]
    fn give_up(&mut self) {
        self.gave_up = true;
    }

    #[query]
    fn balance(&self) -> u32 {
        self.balance
    }

    #[query]
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
}

async fn engine(backend: Backend, tag: &str) -> Engine {
    account_engine(builder(backend, tag)).await
}

/// `b` with the account workflow and the test tools registered, built.
async fn account_engine(b: wf_sdk::engine::EngineBuilder) -> Engine {
    b.workflow::<Account>()
        .activities(tools())
        .build()
        .await
        .unwrap()
}

async fn rejected_update_leaves_no_event(backend: Backend) {
    let engine = engine(backend, "rejected").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    assert_eq!(h.deposit(5).await.unwrap(), 5);
    let before = h.history().await.unwrap();
    let err = h.deposit(0).await.unwrap_err();
    assert_eq!(err, WfError::Rejected("amount must be positive".into()));
    // Rejection through `.start()` too.
    assert!(matches!(
        h.deposit(0).start().await,
        Err(WfError::Rejected(_))
    ));
    assert_eq!(
        h.history().await.unwrap(),
        before,
        "a rejected update writes nothing"
    );
    assert_eq!(h.balance().await.unwrap(), 5);
}

async fn accepted_update_runs_activities_and_timers(backend: Backend) {
    let engine = engine(backend, "async-update").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    assert_eq!(h.deposit_slowly(3).await.unwrap(), 3);
    let history = h.history().await.unwrap();
    let k = kinds(&history);
    let accepted = k.iter().position(|k| *k == "UpdateAccepted").unwrap();
    let completed = k.iter().position(|k| *k == "UpdateCompleted").unwrap();
    assert!(accepted < completed);
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityCompleted { .. }
        )),
        3
    );
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::TimerFired { .. })),
        1
    );
}

async fn start_returns_once_accepted_then_result_waits(backend: Backend) {
    let engine = engine(backend, "start").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    let u = h.deposit_slowly(2).update_id("u-1").start().await.unwrap();
    assert_eq!(u.update_id(), "u-1");
    assert_eq!(u.result().await.unwrap(), 2);
}

async fn handler_error_fails_the_update_not_the_run(backend: Backend) {
    let engine = engine(backend, "handler-error").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    h.deposit(10).await.unwrap();
    let err = h.withdraw(50).await.unwrap_err();
    assert_eq!(
        err,
        WfError::UpdateFailed("insufficient funds: balance 10".into())
    );
    assert_eq!(h.withdraw(4).await.unwrap(), 6);
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 6);
}

async fn panicking_handler_fails_the_task_and_caller_keeps_waiting(backend: Backend) {
    let clock = TestClock::new();
    let engine = account_engine(builder(backend, "panic").clock(clock.clone())).await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    h.deposit(1).await.unwrap();
    let caller = {
        let h = h.clone();
        tokio::spawn(async move { h.explode().update_id("boom").await })
    };
    let d = eventually("the task failure", || async {
        let d = h.describe().await.unwrap();
        d.task_failure
            .filter(|f| f.attempts >= 1)
            .map(|f| (f, d.pending_updates))
    })
    .await;
    assert!(
        d.0.message.contains("explode handler panics"),
        "{}",
        d.0.message
    );
    assert_eq!(d.1.len(), 1, "the update is still pending: {:?}", d.1);
    // Retried with backoff: advancing the clock runs it again (and it fails again).
    clock.advance(Duration::from_secs(2));
    eventually("a second attempt", || async {
        let f = h.describe().await.unwrap().task_failure?;
        (f.attempts >= 2).then_some(())
    })
    .await;
    assert!(!caller.is_finished(), "the caller keeps waiting");
    // The run is intact: queries still answer, and terminating it releases the caller.
    assert_eq!(h.balance().await.unwrap(), 1);
    h.terminate("test over").await.unwrap();
    assert!(matches!(
        caller.await.unwrap(),
        Err(WfError::RunFinished { .. })
    ));
}

async fn update_id_returns_the_first_outcome(backend: Backend) {
    let engine = engine(backend, "update-dedupe").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    assert_eq!(h.deposit(7).update_id("d-1").await.unwrap(), 7);
    assert_eq!(
        h.deposit(7).update_id("d-1").await.unwrap(),
        7,
        "a retry returns the first value"
    );
    assert_eq!(
        h.withdraw(100).update_id("w-1").await,
        Err(WfError::UpdateFailed(
            "insufficient funds: balance 7".into()
        ))
    );
    assert_eq!(
        h.withdraw(100).update_id("w-1").await,
        Err(WfError::UpdateFailed(
            "insufficient funds: balance 7".into()
        ))
    );
    assert_eq!(h.balance().await.unwrap(), 7);
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 7);
    // After the run closed: the recorded outcome, not RunFinished.
    assert_eq!(h.deposit(7).update_id("d-1").await.unwrap(), 7);
    assert!(matches!(
        h.deposit(1).update_id("d-new").await,
        Err(WfError::RunFinished { .. })
    ));
    let history = h.history().await.unwrap();
    assert_eq!(
        count(
            &history,
            |k| matches!(k, EventKind::UpdateAccepted { update_id, .. } if update_id == "d-1")
        ),
        1
    );
}

async fn racing_updates_serialize_on_the_mutex(backend: Backend) {
    let engine = engine(backend, "mutex").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    let a = {
        let h = h.clone();
        tokio::spawn(async move { h.deposit_slowly(2).await })
    };
    let b = {
        let h = h.clone();
        tokio::spawn(async move { h.deposit_slowly(3).await })
    };
    let (a, b) = (a.await.unwrap().unwrap(), b.await.unwrap().unwrap());
    assert_eq!(h.balance().await.unwrap(), 5, "no lost update");
    assert!(
        a.max(b) == 5 && (a == 2 || a == 5) && (b == 3 || b == 5),
        "a={a} b={b}"
    );
    assert_eq!(h.log().await.unwrap().len(), 2);
}

async fn abandoned_update_callers_get_run_finished(backend: Backend) {
    let engine = engine(backend, "abandon").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    let u = h.forever().start().await.unwrap();
    h.finish().await.unwrap();
    // `forever` never finishes, so the run waits in handlers_drained... terminate instead.
    h.terminate("stop").await.unwrap();
    assert!(matches!(u.result().await, Err(WfError::RunFinished { .. })));
}

/// An update waited on to completion (handed to the worker in memory) whose run fails before
/// the update completes: the caller learns the run finished, with its true status.
async fn update_of_a_run_that_failed_first_reports_failed(backend: Backend) {
    let engine = engine(backend, "abandon-failed").await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    assert_eq!(h.deposit(1).await.unwrap(), 1);
    let caller = {
        let h = h.clone();
        tokio::spawn(async move { h.forever().await })
    };
    eventually("the update accepted", || async {
        let d = h.describe().await.unwrap();
        d.pending_updates.iter().any(|u| u.accepted).then_some(())
    })
    .await;
    h.give_up().await.unwrap();
    match caller.await.unwrap() {
        Err(WfError::RunFinished { status, .. }) => assert_eq!(status, RunStatus::Failed),
        other => panic!("expected RunFinished (failed), got {other:?}"),
    }
    assert!(matches!(h.result().await, Err(WfError::WorkflowFailed(_))));
}

/// With `poll_when_quiet(false)` no thread polls between steps: everything still happens, each
/// step after a wake-up (updates sync and async, an activity, a timer, a query, a signal).
async fn an_engine_that_never_polls_when_quiet_does_the_same(backend: Backend) {
    let engine = account_engine(builder(backend, "no-polling").poll_when_quiet(false)).await;
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    for expected in 1..=3 {
        assert_eq!(h.deposit(1).await.unwrap(), expected);
        assert_eq!(h.balance().await.unwrap(), expected);
    }
    assert_eq!(h.deposit_slowly(2).await.unwrap(), 5);
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 5);
}

both!(
    an_engine_that_never_polls_when_quiet_does_the_same,
    rejected_update_leaves_no_event,
    accepted_update_runs_activities_and_timers,
    start_returns_once_accepted_then_result_waits,
    handler_error_fails_the_update_not_the_run,
    panicking_handler_fails_the_task_and_caller_keeps_waiting,
    update_id_returns_the_first_outcome,
    racing_updates_serialize_on_the_mutex,
    abandoned_update_callers_get_run_finished,
    update_of_a_run_that_failed_first_reports_failed,
);

#[tokio::test]
async fn activity_calls_are_counted_once_per_attempt() {
    let tools = shared_tools();
    let engine = Engine::builder()
        .workflow::<Account>()
        .shared_activities(tools.clone())
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Account>("acct", ()).await.unwrap();
    h.deposit_slowly(4).await.unwrap();
    assert_eq!(tools.calls.load(Ordering::SeqCst), 4);
}
