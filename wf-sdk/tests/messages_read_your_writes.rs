//! Read your writes: a query sent right after an acknowledged signal sees that signal, on every
//! path a signal takes (in memory, through the inbox with a signal id, from another engine,
//! to an evicted run, to a run no worker runs) and every path a query takes (the cache of the
//! engine holding the run, a replay elsewhere). Each test sends and queries in a loop: the bug
//! it guards against is a race between the signal's workflow task and the query.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::history::EventKind;
use wf_sdk::prelude::*;

/// Rounds per test: each round is one send and one query at once after it.
const ROUNDS: u32 = 50;

#[derive(Default)]
pub struct Counter {
    total: u32,
    signals: u32,
    closed: bool,
}

#[workflow]
impl Counter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.closed).await;
        Ok(ctx.state(|s| s.total))
    }

    #[signal]
    fn add(&mut self, n: u32) {
        self.total += n;
        self.signals += 1;
    }

    /// Counts at once, then asks an activity: a query must see the count without the
    /// activity being scheduled by anyone but the run's own task.
    #[signal]
    async fn add_then_call(ctx: &mut WorkflowContext<Self>, n: u32) {
        ctx.state_mut(|s| {
            s.total += n;
            s.signals += 1;
        });
        let _ = ctx.activity(Tools::add_one, n).await;
    }

    /// Fails every task that applies it (until fixed code is deployed).
    #[signal]
    fn explode(&mut self) {
        panic!("explode refuses to apply");
    }

    #[signal]
    fn close(&mut self) {
        self.closed = true;
    }

    #[query]
    fn total(&self) -> u32 {
        self.total
    }

    #[query]
    fn signals(&self) -> u32 {
        self.signals
    }
}

/// Starts a run on `engine` and waits until a query answers (its first task ran).
async fn started(engine: &Engine, id: &str) -> WorkflowHandle<Counter> {
    let h = engine.client().start::<Counter>(id, ()).await.unwrap();
    eventually("the first task", || async { h.total().await.ok() }).await;
    h
}

/// (a) A signal with an id to a run held in memory goes through the inbox; the query after
/// its answer sees it although the task that applies it may not have run yet.
async fn a_signal_with_an_id_to_a_hot_run_is_seen_by_the_next_query(backend: Backend) {
    let engine = builder(backend, "ryw-id")
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let h = started(&engine, "hot").await;
    for i in 1..=ROUNDS {
        h.add(1).signal_id(format!("s-{i}")).await.unwrap();
        assert_eq!(h.total().await.unwrap(), i, "round {i}");
    }
    h.close().await.unwrap();
    assert_eq!(h.result().await.unwrap(), ROUNDS);
    engine.shutdown().await;
}

/// (a) Signal-with-start on a running run held in memory delivers through the inbox: the
/// next query sees the signal.
async fn a_signal_with_start_to_a_hot_run_is_seen_by_the_next_query(backend: Backend) {
    let engine = builder(backend, "ryw-with-start")
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let h = started(&engine, "with-start").await;
    for i in 1..=ROUNDS {
        let signal = if i % 2 == 0 {
            h.add(1).signal_id(format!("s-{i}"))
        } else {
            h.add(1)
        };
        h.signal_with_start((), signal, IdConflictPolicy::UseExisting)
            .await
            .unwrap();
        assert_eq!(h.total().await.unwrap(), i, "round {i}");
    }
    h.close().await.unwrap();
    assert_eq!(h.result().await.unwrap(), ROUNDS);
    engine.shutdown().await;
}

/// (b) A signal from a client-only engine: the client-only engine's own query (a replay)
/// sees it, with and without a signal id.
async fn a_signal_from_a_client_only_engine_is_seen_by_its_next_query(backend: Backend) {
    let engines = shared_store(backend, "ryw-client");
    let worker = engines()
        .liveness_lease(Duration::from_millis(300))
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let client_only = engines()
        .client_only()
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let here = started(&worker, "remote").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let h = client_only.client().handle::<Counter>("remote");
    for i in 1..=ROUNDS {
        if i % 2 == 0 {
            h.add(1).signal_id(format!("s-{i}")).await.unwrap();
        } else {
            h.add(1).await.unwrap();
        }
        assert_eq!(h.total().await.unwrap(), i, "round {i}");
        assert_eq!(here.total().await.unwrap(), i, "round {i}: holder");
    }
    h.close().await.unwrap();
    assert_eq!(h.result().await.unwrap(), ROUNDS);
    client_only.shutdown().await;
    worker.shutdown().await;
}

/// (b) Two engines share the store and both run the workflow (two processes): signals sent
/// through either, with and without ids, are seen by the next query on either, whichever of
/// them holds the run in memory (each knows the other is live, and a copy another engine's
/// tasks moved past is not used).
async fn signals_through_either_of_two_engines_are_seen_by_both(backend: Backend) {
    let engines = shared_store(backend, "ryw-peer");
    // A short liveness lease: each counts the live engines every 100 ms.
    let engine = || {
        engines()
            .liveness_lease(Duration::from_millis(300))
            .workflow::<Counter>()
            .build()
    };
    let a = engine().await.unwrap();
    let b = engine().await.unwrap();
    let on_a = started(&a, "peer").await;
    let on_b = b.client().handle::<Counter>("peer");
    // A registered before B did: it sees B at its next renewal.
    tokio::time::sleep(Duration::from_millis(400)).await;
    for i in 1..=ROUNDS {
        let sender = if i % 2 == 0 { &on_a } else { &on_b };
        if i % 4 < 2 {
            sender.add(1).signal_id(format!("s-{i}")).await.unwrap();
        } else {
            sender.add(1).await.unwrap();
        }
        assert_eq!(on_a.total().await.unwrap(), i, "round {i}: engine A");
        assert_eq!(on_b.total().await.unwrap(), i, "round {i}: engine B");
    }
    on_a.close().await.unwrap();
    assert_eq!(on_a.result().await.unwrap(), ROUNDS);
    b.shutdown().await;
    a.shutdown().await;
}

/// (c) A signal to a run evicted from the cache (one slot, another run touched in between):
/// with a signal id it waits in the inbox, and the query replays the run with it.
async fn a_signal_to_an_evicted_run_is_seen_by_the_next_query(backend: Backend) {
    let engine = builder(backend, "ryw-evicted")
        .cache_capacity(1)
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let first = started(&engine, "first").await;
    let second = started(&engine, "second").await;
    for i in 1..=ROUNDS {
        // The other run takes the only slot.
        second.add(1).await.unwrap();
        if i % 2 == 0 {
            first.add(1).signal_id(format!("s-{i}")).await.unwrap();
        } else {
            first.add(1).await.unwrap();
        }
        assert_eq!(first.total().await.unwrap(), i, "round {i}");
    }
    first.close().await.unwrap();
    assert_eq!(first.result().await.unwrap(), ROUNDS);
    engine.shutdown().await;
}

/// (c) A fresh engine on the store of a run it never held: a signal with an id, then its
/// query.
async fn a_fresh_engine_sees_its_signal_to_a_run_it_never_held(backend: Backend) {
    let engines = shared_store(backend, "ryw-fresh");
    let first = engines().workflow::<Counter>().build().await.unwrap();
    started(&first, "fresh").await;
    first.shutdown().await;
    for i in 1..=ROUNDS {
        let engine = engines().workflow::<Counter>().build().await.unwrap();
        let h = engine.client().handle::<Counter>("fresh");
        h.add(1).signal_id(format!("s-{i}")).await.unwrap();
        assert_eq!(h.total().await.unwrap(), i, "round {i}");
        engine.shutdown().await;
    }
}

/// (d) The same signal id sent twice is applied once, and the query right after says so.
async fn a_signal_id_sent_twice_is_applied_once(backend: Backend) {
    let engine = builder(backend, "ryw-dupe")
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let h = started(&engine, "dupe").await;
    for i in 1..=ROUNDS {
        h.add(1).signal_id(format!("s-{i}")).await.unwrap();
        h.add(1).signal_id(format!("s-{i}")).await.unwrap();
        assert_eq!(h.signals().await.unwrap(), i, "round {i}");
    }
    h.close().await.unwrap();
    assert_eq!(h.result().await.unwrap(), ROUNDS);
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::SignalReceived { .. })),
        ROUNDS as usize + 1
    );
    engine.shutdown().await;
}

/// (e) A run no worker runs (only a client-only engine exists): its signals wait in the
/// inbox, and queries see them. An async handler that schedules an activity is applied to a
/// copy for the query: nothing is scheduled, nothing is written.
async fn a_run_no_worker_runs_answers_with_its_pending_signals(backend: Backend) {
    let engines = shared_store(backend, "ryw-nowhere");
    let engine = engines()
        .client_only()
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Counter>("nowhere", ())
        .await
        .unwrap();
    assert_eq!(h.total().await.unwrap(), 0);
    for i in 1..=ROUNDS {
        if i % 2 == 0 {
            h.add(1).signal_id(format!("s-{i}")).await.unwrap();
        } else {
            h.add_then_call(1).await.unwrap();
        }
        assert_eq!(h.total().await.unwrap(), i, "round {i}");
    }
    // Twice the same id: once.
    h.add(5).signal_id("s-2").await.unwrap();
    assert_eq!(h.total().await.unwrap(), ROUNDS);
    let history = h.history().await.unwrap();
    assert_eq!(
        kinds(&history),
        vec!["WorkflowStarted"],
        "queries wrote nothing"
    );
    let d = h.describe().await.unwrap();
    assert!(
        d.pending_activities.is_empty(),
        "{:?}",
        d.pending_activities
    );
    // A worker arrives: it applies the same signals, once each.
    let worker = engines()
        .workflow::<Counter>()
        .activities(Tools::default())
        .build()
        .await
        .unwrap();
    h.close().await.unwrap();
    assert_eq!(h.result().await.unwrap(), ROUNDS);
    worker.shutdown().await;
    engine.shutdown().await;
}

/// A signal whose handler panics fails every task that applies it: a query behind it neither
/// hangs nor fails, it answers with the state before it (what the run's history says until
/// the code is fixed), before and after the failure is recorded.
async fn a_query_behind_a_failing_signal_answers_without_it(backend: Backend) {
    let engine = builder(backend, "ryw-failing")
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let h = started(&engine, "failing").await;
    h.add(1).signal_id("s-1").await.unwrap();
    eventually("the first signal recorded", || async {
        let history = h.history().await.unwrap();
        (count(&history, |k| matches!(k, EventKind::SignalReceived { .. })) == 1).then_some(())
    })
    .await;
    h.explode().signal_id("s-2").await.unwrap();
    assert_eq!(h.total().await.unwrap(), 1);
    eventually("the task failure recorded", || async {
        h.describe().await.unwrap().task_failure
    })
    .await;
    assert_eq!(h.total().await.unwrap(), 1);
    engine.shutdown().await;
}

both!(
    a_signal_with_an_id_to_a_hot_run_is_seen_by_the_next_query,
    a_signal_with_start_to_a_hot_run_is_seen_by_the_next_query,
    a_signal_from_a_client_only_engine_is_seen_by_its_next_query,
    signals_through_either_of_two_engines_are_seen_by_both,
    a_signal_to_an_evicted_run_is_seen_by_the_next_query,
    a_fresh_engine_sees_its_signal_to_a_run_it_never_held,
    a_signal_id_sent_twice_is_applied_once,
    a_run_no_worker_runs_answers_with_its_pending_signals,
    a_query_behind_a_failing_signal_answers_without_it,
);
