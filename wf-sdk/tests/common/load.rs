//! A load for fault tests (worker processes killed, the database restarted): orders that run
//! activities and take signals and updates with ids, driven by a client that retries every
//! call on a retryable error as a user would, and the check that each history holds every
//! acknowledged message exactly once.
//!
//! Only the fault tests use it: they include it next to `common` with
//! `#[path = "common/load.rs"] mod load;` (the other test binaries do not compile it).
#![allow(dead_code)]

use crate::common::count;
use std::collections::HashMap;
use std::future::IntoFuture;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{IdConflictPolicy, StartOptions},
    history::{EventKind, HistoryEvent},
};

/// Signals and updates each order takes (one of each per round).
pub const ROUNDS: u32 = 3;
/// Activities each order runs.
pub const STEPS: u32 = 3;

/// An order: runs [`STEPS`] activities, applies the signals and updates it gets, and returns
/// once told to finish.
#[derive(Default)]
pub struct Order {
    signals: Vec<u32>,
    total: u64,
    done: bool,
}

#[workflow]
impl Order {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        pause_ms: u64,
    ) -> Result<(u64, Vec<u32>, u64), WorkflowError> {
        let mut sum = 0u64;
        for i in 0..STEPS {
            let v = ctx
                .activity(Work::step, (i, pause_ms))
                .start_to_close(Duration::from_secs(60))
                .await?;
            sum += u64::from(v);
        }
        ctx.wait_condition(|s| s.done).await;
        ctx.handlers_drained().await;
        Ok(ctx.state(|s| (sum, s.signals.clone(), s.total)))
    }

    #[signal]
    fn add(&mut self, x: u32) {
        self.signals.push(x);
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[update]
    fn bump(&mut self, by: u64) -> Result<u64, UpdateError> {
        self.total += by;
        Ok(self.total)
    }
}

/// The orders' activities.
pub struct Work;

#[activities]
impl Work {
    /// Sleeps `pause_ms`, then returns `2 * i + 1`.
    #[activity]
    pub async fn step(
        &self,
        _ctx: ActivityContext,
        step: (u32, u64),
    ) -> Result<u32, ActivityError> {
        tokio::time::sleep(Duration::from_millis(step.1)).await;
        Ok(2 * step.0 + 1)
    }
}

/// What order `i` returns after [`drive`].
pub fn expected(i: u32) -> (u64, Vec<u32>, u64) {
    let steps = (0..STEPS).map(|s| u64::from(2 * s + 1)).sum();
    let signals = (0..ROUNDS).map(|k| signal_value(i, k)).collect();
    let total = (1..=u64::from(ROUNDS)).sum();
    (steps, signals, total)
}

fn signal_value(i: u32, k: u32) -> u32 {
    i * 100 + k
}

/// The id of order `i`.
pub fn order_id(i: u32) -> String {
    format!("order-{i}")
}

/// Calls that failed with a retryable error and were sent again, over all drivers.
pub static RETRIES: AtomicU64 = AtomicU64::new(0);

/// Calls `f` until it succeeds, again after each retryable error (for up to two minutes, a
/// failure detector); panics on any other error.
pub async fn retry<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: IntoFuture<Output = Result<T, WfError>>,
{
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if e.is_retryable() && Instant::now() < until => {
                RETRIES.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{what}: {e} ({e:?})"),
        }
    }
}

/// A user's client for order `i`: starts it (pausing `pause_ms` in each activity), then sends
/// [`ROUNDS`] signals and updates, each with an id, `gap` apart, tells it to finish and
/// checks its result. Every call is retried until it is acknowledged.
pub async fn drive(client: Client, i: u32, pause_ms: u64, gap: Duration) {
    let id = order_id(i);
    let options = StartOptions {
        id_conflict: IdConflictPolicy::UseExisting,
        ..Default::default()
    };
    let h = retry(&format!("start {id}"), || {
        client.start_with::<Order>(&id, pause_ms, options.clone())
    })
    .await;
    for k in 0..ROUNDS {
        tokio::time::sleep(gap).await;
        let signal_id = format!("s-{i}-{k}");
        retry(&format!("signal {signal_id}"), || {
            h.add(signal_value(i, k)).signal_id(&signal_id)
        })
        .await;
        let update_id = format!("u-{i}-{k}");
        let after = retry(&format!("update {update_id}"), || {
            h.bump(u64::from(k + 1)).update_id(&update_id)
        })
        .await;
        assert_eq!(
            after,
            (1..=u64::from(k + 1)).sum::<u64>(),
            "update {update_id} of {id}"
        );
    }
    let finish_id = format!("f-{i}");
    retry(&format!("finish {id}"), || h.finish().signal_id(&finish_id)).await;
    let out = retry(&format!("result of {id}"), || h.result()).await;
    assert_eq!(out, expected(i), "the result of {id}");
}

/// Checks that order `i`'s history holds its start, each of its signals and updates, each
/// activity's scheduling and completion and its completion exactly once, with dense event
/// ids.
pub fn check_history(i: u32, history: &[HistoryEvent]) {
    let id = order_id(i);
    let once = |what: &str, n: usize| assert_eq!(n, 1, "{id}: {what} recorded {n} times");
    once(
        "the start",
        count(history, |k| matches!(k, EventKind::WorkflowStarted { .. })),
    );
    once(
        "the completion",
        count(history, |k| {
            matches!(k, EventKind::WorkflowCompleted { .. })
        }),
    );
    let mut signal_ids: Vec<String> = (0..ROUNDS).map(|k| format!("s-{i}-{k}")).collect();
    signal_ids.push(format!("f-{i}"));
    for sid in &signal_ids {
        let n = count(
            history,
            |k| matches!(k, EventKind::SignalReceived { signal_id: Some(s), .. } if s == sid),
        );
        once(&format!("signal {sid}"), n);
    }
    let signals = count(history, |k| matches!(k, EventKind::SignalReceived { .. }));
    assert_eq!(signals, signal_ids.len(), "{id}: signals without an id");
    for k in 0..ROUNDS {
        let uid = format!("u-{i}-{k}");
        let accepted = count(
            history,
            |e| matches!(e, EventKind::UpdateAccepted { update_id, .. } if *update_id == uid),
        );
        once(&format!("update {uid} accepted"), accepted);
        let completed = count(
            history,
            |e| matches!(e, EventKind::UpdateCompleted { update_id, .. } if *update_id == uid),
        );
        once(&format!("update {uid} completed"), completed);
    }
    let mut scheduled: HashMap<u32, usize> = HashMap::new();
    let mut resolved: HashMap<u32, usize> = HashMap::new();
    for e in history {
        match &e.kind {
            EventKind::ActivityScheduled { seq, .. } => *scheduled.entry(*seq).or_default() += 1,
            EventKind::ActivityCompleted { seq, .. }
            | EventKind::ActivityFailed { seq, .. }
            | EventKind::ActivityTimedOut { seq, .. } => *resolved.entry(*seq).or_default() += 1,
            _ => {}
        }
    }
    assert_eq!(scheduled.len(), STEPS as usize, "{id}: {scheduled:?}");
    assert!(scheduled.values().all(|n| *n == 1), "{id}: {scheduled:?}");
    assert_eq!(resolved.len(), STEPS as usize, "{id}: {resolved:?}");
    assert!(
        resolved.values().all(|n| *n == 1),
        "{id}: an activity resolved twice: {resolved:?}"
    );
    let completed = count(history, |k| {
        matches!(k, EventKind::ActivityCompleted { .. })
    });
    assert_eq!(completed, STEPS as usize, "{id}: activities completed");
    let ids: Vec<u64> = history.iter().map(|e| e.event_id).collect();
    assert_eq!(
        ids,
        (1..=history.len() as u64).collect::<Vec<_>>(),
        "{id}: event ids are not dense"
    );
}

/// Median and maximum of `samples` (sorted in place), for reports.
pub fn median_max(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    match samples {
        [] => (Duration::ZERO, Duration::ZERO),
        _ => (samples[samples.len() / 2], samples[samples.len() - 1]),
    }
}
