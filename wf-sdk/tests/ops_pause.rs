//! An operator's pause and unpause of a run, on the three stores: while paused a run gets no
//! workflow task and starts no activity, signals and fired timers wait in arrival order,
//! queries answer, describe and list show the pause (who and why); unpause applies what
//! waited in order; a signal to a paused run goes straight to its inbox, with no replay and no
//! workflow task tried. The pause outlives a restart of the engine. Also `Client::count`.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{client::ListFilter, history::EventKind};

/// Logs its signals and its timer's firing, in the order the run sees them.
#[derive(Default)]
pub struct Logbook {
    log: Vec<String>,
    done: bool,
}

#[workflow]
impl Logbook {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<Vec<String>, WorkflowError> {
        ctx.sleep(Duration::from_secs(60)).await?;
        ctx.state_mut(|s| s.log.push("timer".into()));
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.log.clone()))
    }

    #[signal]
    fn note(&mut self, item: String) {
        self.log.push(item);
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[query]
    fn log(&self) -> Vec<String> {
        self.log.clone()
    }
}

/// Calls an activity once signalled.
#[derive(Default)]
pub struct Caller {
    go: bool,
}

#[workflow]
impl Caller {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        Ok(ctx.activity(Tools::echo, "called".to_string()).await?)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

async fn unpause_applies_signals_and_timers_in_arrival_order(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "pause-order")
        .clock(clock.clone())
        .workflow::<Logbook>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Logbook>("book", ()).await.unwrap();
    client.pause("book", "bad deploy").await.unwrap();
    let d = client.describe("book").await.unwrap();
    let paused = d.paused.expect("describe shows the pause");
    assert_eq!(
        (paused.by.as_str(), paused.reason.as_str()),
        ("client", "bad deploy")
    );
    assert_eq!(d.status, RunStatus::Running);

    h.note("a".into()).await.unwrap();
    clock.advance(Duration::from_secs(61));
    // The timer fires into the inbox while the run is paused.
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.note("b".into()).await.unwrap();
    // Queries answer while paused.
    let seen = h.log().await.unwrap();
    assert!(seen.len() <= 3, "{seen:?}");
    let before = h.history().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = h.history().await.unwrap();
    assert_eq!(before.len(), after.len(), "a paused run records nothing");
    assert!(
        !after
            .iter()
            .any(|e| matches!(e.kind, EventKind::SignalReceived { .. })),
        "no signal applied while paused"
    );
    let listed = client
        .list(ListFilter {
            workflow_type: Some("Logbook".into()),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    assert!(listed[0].paused, "list shows the pause");

    client.unpause("book").await.unwrap();
    assert!(client.describe("book").await.unwrap().paused.is_none());
    h.finish().await.unwrap();
    // One task applies what waited: the signals' handlers run in arrival order, and `run`
    // sees its timer fired; the history records them in arrival order.
    assert_eq!(h.result().await.unwrap(), ["a", "b", "timer"]);
    let arrived: Vec<String> = h
        .history()
        .await
        .unwrap()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SignalReceived { name, args, .. } if name == "note" => {
                args.decode::<(String,)>().ok().map(|(s,)| s)
            }
            EventKind::TimerFired { .. } => Some("timer".into()),
            _ => None,
        })
        .collect();
    assert_eq!(arrived, ["a", "timer", "b"]);
}

/// The sum of the samples of metric `name` that carry each of `labels`.
fn metric(engine: &Engine, name: &str, labels: &[(&str, &str)]) -> f64 {
    let snapshot = engine.metrics();
    let Some(family) = snapshot.family(name) else {
        return 0.0;
    };
    family
        .samples
        .iter()
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.iter().any(|(k2, v2)| k2 == k && v2 == v))
        })
        .map(|s| match &s.value {
            wf_sdk::metrics::SampleValue::Number(v) => *v,
            wf_sdk::metrics::SampleValue::Histogram { count, .. } => *count as f64,
        })
        .sum()
}

/// Signals sent to a paused run by the engine that runs its type go to the inbox at once: the
/// engine neither rebuilds the run nor tries a workflow task that the pause would refuse.
async fn signals_to_a_paused_run_go_straight_to_its_inbox(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "pause-inbox")
        .clock(clock.clone())
        .workflow::<Logbook>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Logbook>("quiet", ()).await.unwrap();
    eventually("the run starts its timer", || async {
        let history = h.history().await.ok()?;
        history
            .iter()
            .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }))
            .then_some(())
    })
    .await;
    let of_type = [("workflow_type", "Logbook")];
    // The task that started the timer is counted just after its commit, which the history
    // shows first: wait for its count too, or it lands among the paused run's.
    eventually("the first task counted", || async {
        (metric(&engine, "wf_workflow_tasks_total", &of_type) >= 1.0).then_some(())
    })
    .await;
    client.pause("quiet", "hold on").await.unwrap();
    let replays = metric(&engine, "wf_replays_total", &of_type);
    let tasks = metric(&engine, "wf_workflow_tasks_total", &of_type);
    for item in ["x", "y", "z"] {
        h.note(item.into()).await.unwrap();
    }
    assert_eq!(
        metric(&engine, "wf_replays_total", &of_type),
        replays,
        "no replay of the paused run"
    );
    assert_eq!(
        metric(&engine, "wf_workflow_tasks_total", &of_type),
        tasks,
        "no workflow task tried on the paused run"
    );
    client.unpause("quiet").await.unwrap();
    eventually("the signals apply after the unpause", || async {
        let history = h.history().await.ok()?;
        let n = history
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SignalReceived { .. }))
            .count();
        (n == 3).then_some(())
    })
    .await;
    clock.advance(Duration::from_secs(61));
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), ["x", "y", "z", "timer"]);
    engine.shutdown().await;
}

async fn a_paused_run_starts_no_activity(backend: Backend) {
    // The engine that runs the workflow serves no activity, so the activity it schedules
    // waits in the store until a second engine that serves it comes up, after the pause:
    // no race between the pause and the activity's start.
    let engines = shared_store(backend, "pause-activity");
    let runner = engines().workflow::<Caller>().build().await.unwrap();
    let client = runner.client();
    let h = client.start::<Caller>("caller", ()).await.unwrap();
    h.go().await.unwrap();
    let scheduled = async {
        loop {
            let events = h.history().await.unwrap();
            if events
                .iter()
                .any(|e| matches!(e.kind, EventKind::ActivityScheduled { .. }))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), scheduled)
        .await
        .expect("the signal schedules the activity");
    client.pause("caller", "").await.unwrap();
    let tools_engine = engines().activities(tools()).build().await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let d = client.describe("caller").await.unwrap();
    let events = h.history().await.unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ActivityCompleted { .. })),
        "no activity completed while paused: {:?}",
        d.pending_activities
    );
    assert_eq!(
        d.pending_activities.len(),
        1,
        "the activity stays scheduled"
    );
    assert!(d
        .pending_activities
        .iter()
        .all(|a| a.attempt_deadline.is_none()));
    client.unpause("caller").await.unwrap();
    assert_eq!(h.result().await.unwrap(), "called");
    tools_engine.shutdown().await;
    runner.shutdown().await;
}

async fn a_pause_outlives_a_restart(backend: Backend) {
    let engines = shared_store(backend, "pause-restart");
    let first = engines().workflow::<Logbook>().build().await.unwrap();
    first.client().start::<Logbook>("kept", ()).await.unwrap();
    first.client().pause("kept", "incident 7").await.unwrap();
    first.shutdown().await;

    let second = engines().workflow::<Logbook>().build().await.unwrap();
    let client = second.client();
    let h = client.handle::<Logbook>("kept");
    h.note("x".into()).await.unwrap();
    h.finish().await.unwrap();
    let d = client.describe("kept").await.unwrap();
    assert_eq!(d.paused.map(|p| p.reason).as_deref(), Some("incident 7"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signals = |events: &[wf_sdk::history::HistoryEvent]| {
        events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SignalReceived { .. }))
            .count()
    };
    assert_eq!(signals(&h.history().await.unwrap()), 0, "still paused");
    client.unpause("kept").await.unwrap();
    // The timer (60 s of the real clock) still holds the run; its signals are applied.
    eventually("the signals apply after unpause", || async {
        let events = h.history().await.ok()?;
        (signals(&events) == 2).then_some(())
    })
    .await;
    assert_eq!(h.log().await.unwrap(), ["x"]);
    second.shutdown().await;
}

async fn pause_names_what_it_cannot_pause(backend: Backend) {
    let engine = builder(backend, "pause-errors")
        .workflow::<Caller>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let err = client.pause("nobody", "").await.unwrap_err();
    assert!(matches!(err, WfError::NotFound { .. }), "{err:?}");
    client.start::<Caller>("c", ()).await.unwrap();
    client.terminate("c", "gone").await.unwrap();
    let err = client.pause("c", "").await.unwrap_err();
    assert!(matches!(err, WfError::RunFinished { .. }), "{err:?}");
    let d = client.describe("c").await.unwrap();
    assert_eq!(
        d.failure.as_deref(),
        Some("gone"),
        "describe says how it ended"
    );
}

async fn count_counts_what_list_selects(backend: Backend) {
    let engine = builder(backend, "count")
        .workflow::<Caller>()
        .workflow::<Logbook>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    for i in 0..5 {
        client.start::<Caller>(&format!("c{i}"), ()).await.unwrap();
    }
    for i in 0..3 {
        client.start::<Logbook>(&format!("l{i}"), ()).await.unwrap();
    }
    client.terminate("c0", "x").await.unwrap();
    let of = |ty: &str, status: Option<RunStatus>| ListFilter {
        workflow_type: Some(ty.into()),
        status,
        ..ListFilter::default()
    };
    assert_eq!(client.count(ListFilter::default()).await.unwrap(), 8);
    assert_eq!(client.count(of("Caller", None)).await.unwrap(), 5);
    assert_eq!(
        client
            .count(of("Caller", Some(RunStatus::Running)))
            .await
            .unwrap(),
        4
    );
    assert_eq!(
        client
            .count(of("Logbook", Some(RunStatus::Terminated)))
            .await
            .unwrap(),
        0
    );
    for filter in [
        of("Caller", Some(RunStatus::Terminated)),
        of("Logbook", None),
    ] {
        let listed = client.list(filter.clone()).await.unwrap().len() as u64;
        assert_eq!(client.count(filter).await.unwrap(), listed);
    }
}

both!(
    unpause_applies_signals_and_timers_in_arrival_order,
    signals_to_a_paused_run_go_straight_to_its_inbox,
    a_paused_run_starts_no_activity,
    a_pause_outlives_a_restart,
    pause_names_what_it_cannot_pause,
    count_counts_what_list_selects,
);
