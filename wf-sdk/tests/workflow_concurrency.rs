//! Concurrency inside a workflow: the deterministic combinators (`wf_sdk::workflow::join_bounded`,
//! `select`, `select_all`) and the deterministic queue (`wf_sdk::workflow::sync::Queue`) replay to the
//! same history when the run is evicted or its worker restarts between steps.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::workflow::sync::Queue;
use wf_sdk::{
    history::{EventKind, Replayer},
    workflow::Either,
};

/// Three steps, each awaiting several things at once; `next` moves it to the next step.
#[derive(Default)]
pub struct Gather {
    step: u32,
}

#[workflow(name = "gather")]
impl Gather {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<Vec<String>, WorkflowError> {
        let mut out = Vec::new();
        // n activities, two at a time.
        let sums =
            wf_sdk::workflow::join_bounded((0..n).map(|i| ctx.activity(Tools::add_one, i)), 2)
                .await;
        let sums = sums.into_iter().collect::<Result<Vec<u32>, _>>()?;
        out.push(format!("sums {sums:?}"));
        ctx.wait_condition(|s| s.step >= 1).await;
        // A word, or an hour without one.
        let hour = ctx.sleep(Duration::from_secs(3600));
        match wf_sdk::workflow::select(hour, ctx.wait_for_signal::<String>("word")).await {
            Either::Left((slept, _)) => {
                slept?;
                out.push("no word".into());
            }
            Either::Right((word, _hour)) => out.push(format!("word {}", word?)),
        }
        ctx.wait_condition(|s| s.step >= 2).await;
        // The first of three timers: the shortest, whatever its place.
        let timers = [60, 1, 30].map(|s| ctx.sleep(Duration::from_secs(s)));
        let (fired, i, _rest) = wf_sdk::workflow::select_all(timers).await;
        fired?;
        out.push(format!("timer {i}"));
        Ok(out)
    }

    #[signal]
    fn next(&mut self) {
        self.step += 1;
    }

    #[query]
    fn step(&self) -> u32 {
        self.step
    }
}

/// Sleeps a day; starting one takes the only cache slot of an engine with a cache of one.
#[derive(Default)]
pub struct Bystander;

#[workflow(name = "bystander")]
impl Bystander {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.sleep(Duration::from_secs(24 * 3600)).await?;
        Ok(())
    }
}

/// Starts a bystander and waits for its first task: the cached run before it is evicted.
async fn evict(client: &Client, n: &mut u32) {
    *n += 1;
    let h = client
        .start::<Bystander>(format!("bystander-{n}"), ())
        .await
        .unwrap();
    until_recorded(&h, "the bystander's timer", |k| {
        matches!(k, EventKind::TimerStarted { .. })
    })
    .await;
}

/// What marks a step as recorded.
type Recorded = fn(&EventKind) -> bool;

async fn combinators_replay_to_the_same_history_when_evicted_between_steps(backend: Backend) {
    let clock = TestClock::new();
    let engine = builder(backend, "combinators")
        .clock(clock.clone())
        .cache_capacity(1)
        .workflow::<Gather>()
        .workflow::<Bystander>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Gather>("gather", 5).await.unwrap();
    let mut bystanders = 0;
    let mut seen = Vec::new();
    // After each step: the history so far, then an eviction, then the next step.
    let steps: [(&str, Recorded); 3] = [
        ("five activities", |k| {
            matches!(k, EventKind::ActivityCompleted { seq: 5, .. })
        }),
        (
            "the word",
            |k| matches!(k, EventKind::SignalReceived { name, .. } if name == "word"),
        ),
        (
            "the second next",
            |k| matches!(k, EventKind::SignalReceived { name, .. } if name == "next"),
        ),
    ];
    for (i, (what, done)) in steps.into_iter().enumerate() {
        until_recorded(&h, what, done).await;
        let history = h.history().await.unwrap();
        assert!(
            history.starts_with(&seen),
            "step {i}: the history was rewritten"
        );
        seen = history;
        evict(&client, &mut bystanders).await;
        match i {
            0 => {
                h.next().await.unwrap();
                let word = wf_sdk::payload::Payload::encode(&("hello",)).unwrap();
                client
                    .signal_raw("gather", "word", word, None)
                    .await
                    .unwrap();
            }
            1 => h.next().await.unwrap(),
            _ => {
                until_recorded(
                    &h,
                    "three timers",
                    |k| matches!(k, EventKind::TimerStarted { seq, .. } if *seq >= 9),
                )
                .await;
                evict(&client, &mut bystanders).await;
                clock.advance(Duration::from_secs(2));
            }
        }
    }
    let out = h.result().await.unwrap();
    assert_eq!(
        out,
        vec![
            "sums [1, 2, 3, 4, 5]".to_string(),
            "word hello".to_string(),
            "timer 1".to_string(),
        ]
    );
    let history = h.history().await.unwrap();
    assert!(history.starts_with(&seen), "the history was rewritten");
    assert!(h.describe().await.unwrap().task_failure.is_none());
    // At most two activities were ever scheduled and not yet finished.
    let mut open = 0;
    for e in &history {
        match e.kind {
            EventKind::ActivityScheduled { .. } => open += 1,
            EventKind::ActivityCompleted { .. } => open -= 1,
            _ => {}
        }
        assert!(open <= 2, "more than two activities in flight");
    }
    Replayer::new()
        .workflow::<Gather>()
        .replay(&h.export().await.unwrap())
        .unwrap();
    engine.shutdown().await;
}

/// Handles items pushed by a signal, in order, one activity each.
#[derive(Default)]
pub struct Inbox {
    queue: Queue<String>,
    done: Vec<String>,
}

#[workflow(name = "inbox")]
impl Inbox {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<Vec<String>, WorkflowError> {
        let queue = ctx.state(|s| s.queue.clone());
        let mut done = Vec::new();
        while done.len() < n as usize {
            let item = queue.recv().await;
            done.push(ctx.activity(Tools::echo, item).await?);
            ctx.state_mut(|s| s.done = done.clone());
        }
        Ok(done)
    }

    #[signal]
    fn push(&mut self, item: String) {
        self.queue.push(item);
    }

    #[query]
    fn done(&self) -> Vec<String> {
        self.done.clone()
    }
}

async fn a_queue_fed_by_signals_is_consumed_in_order_across_a_worker_restart(backend: Backend) {
    let make = shared_store(backend, "queue-restart");
    let engine = make()
        .workflow::<Inbox>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Inbox>("inbox", 6).await.unwrap();
    for item in ["a", "b", "c"] {
        h.push(item.into()).await.unwrap();
    }
    // Shut down with items still queued, an activity likely in flight (its result reaches a
    // stopping worker, which records it through the store: see `engines_stopping.rs`).
    eventually("one item done", || async {
        (!h.done().await.ok()?.is_empty()).then_some(())
    })
    .await;
    engine.shutdown().await;
    // A new worker rebuilds the queue by replaying the signals, and takes more.
    let engine = make()
        .workflow::<Inbox>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = engine.client().handle::<Inbox>("inbox");
    for item in ["d", "e", "f"] {
        h.push(item.into()).await.unwrap();
    }
    assert_eq!(h.result().await.unwrap(), ["a", "b", "c", "d", "e", "f"]);
    let echoed: Vec<String> = h
        .history()
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ActivityScheduled { input, .. } => input.decode::<String>().ok(),
            _ => None,
        })
        .collect();
    assert_eq!(
        echoed,
        ["a", "b", "c", "d", "e", "f"],
        "one activity per item, in order"
    );
    assert!(h.describe().await.unwrap().task_failure.is_none());
    engine.shutdown().await;
}

both!(
    combinators_replay_to_the_same_history_when_evicted_between_steps,
    a_queue_fed_by_signals_is_consumed_in_order_across_a_worker_restart,
);
