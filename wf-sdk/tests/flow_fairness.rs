//! Priority and fairness of activity attempts, on the three stores, with three engines sharing
//! each store and a concurrency limit that makes attempts wait: a fairness key with 1,000
//! attempts waiting and one with 10 share the slots one for one while both wait; attempts of
//! priority 1 start before those of priority 5 queued earlier; a priority that is not a level,
//! or a weight not above 0, fails the call when it would be scheduled.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wf_sdk::flow::{FlowLimit, FlowScope};
use wf_sdk::prelude::*;
use wf_sdk::workflow::join_all;

/// The flow key every attempt of these tests counts under.
const KEY: &str = "model";

/// What the activities saw, shared by every engine of a test.
#[derive(Default)]
pub struct Log {
    /// The label of each attempt, in the order they started.
    started: Mutex<Vec<String>>,
    /// While closed, a started attempt waits for it to open.
    open: AtomicBool,
}

impl Log {
    fn started(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }
}

#[activities]
impl Log {
    /// Notes its label, waits for the gate, then returns after a millisecond.
    #[activity]
    async fn step(&self, _ctx: ActivityContext, label: String) -> Result<(), ActivityError> {
        self.started.lock().unwrap().push(label);
        while !self.open.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
pub struct Batch {
    /// The label of its attempts (the fairness key too, if `keyed`).
    label: String,
    /// Attempts, all scheduled at once.
    n: u32,
    /// Their priority level.
    priority: Option<u8>,
    /// Whether the label is their fairness key.
    keyed: bool,
    /// Their fairness weight.
    weight: Option<f64>,
}

/// Schedules `n` attempts of `step` at once under flow key [`KEY`], and waits for them all.
#[derive(Default)]
pub struct Fan;

#[workflow]
impl Fan {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, b: Batch) -> Result<String, WorkflowError> {
        let calls = (0..b.n).map(|_| {
            let mut call = ctx.activity(Log::step, b.label.clone()).flow_key(KEY);
            if let Some(p) = b.priority {
                call = call.priority(p);
            }
            if b.keyed {
                call = call.fairness_key(b.label.clone());
            }
            if let Some(w) = b.weight {
                call = call.fairness_weight(w);
            }
            call
        });
        for result in join_all(calls.collect::<Vec<_>>()).await {
            if let Err(e) = result {
                return Ok(e.to_string());
            }
        }
        Ok(format!("{} done", b.n))
    }
}

fn batch(label: &str, n: u32) -> Batch {
    Batch {
        label: label.into(),
        n,
        priority: None,
        keyed: true,
        weight: None,
    }
}

/// Three engines on one store, running [`Fan`] with `log`'s activity; the first sets a
/// concurrency limit of `slots` on [`KEY`].
async fn engines(backend: Backend, tag: &str, log: &Arc<Log>, slots: u32) -> Vec<Engine> {
    let shared = shared_store(backend, tag);
    let mut engines = Vec::with_capacity(3);
    for i in 0..3 {
        let mut b = shared().workflow::<Fan>().shared_activities(log.clone());
        if i == 0 {
            b = b.flow_limit(FlowLimit::concurrency(FlowScope::key(KEY), slots));
        }
        engines.push(b.build().await.unwrap());
    }
    engines
}

/// Waits until `run` has scheduled `n` activities (they wait in the store).
async fn scheduled(handle: &WorkflowHandle<Fan>, n: usize) {
    eventually("the activities scheduled", || async {
        let d = handle.describe().await.ok()?;
        (d.pending_activities.len() >= n).then_some(())
    })
    .await;
}

/// Starts `runs` runs of [`Fan`] named `{prefix}{i}` with the batch `make` gives, on the
/// engines in turn, all at once; returns once each has scheduled its attempts.
async fn start_many(engines: &[Engine], prefix: &str, runs: usize, make: fn() -> Batch) {
    let mut starts = tokio::task::JoinSet::new();
    for i in 0..runs {
        let client = engines[i % engines.len()].client();
        let id = format!("{prefix}{i}");
        starts.spawn(async move {
            let batch = make();
            let n = batch.n as usize;
            let h = client.start::<Fan>(&id, batch).await.unwrap();
            scheduled(&h, n).await;
        });
    }
    while let Some(done) = starts.join_next().await {
        done.unwrap();
    }
}

async fn two_keys_share_the_slots_one_for_one_whatever_their_backlogs(backend: Backend) {
    let log = Arc::new(Log::default());
    let engines = engines(backend, "fair-keys", &log, 2).await;
    // Key `a`: 1,000 attempts waiting, from 10 runs of 100 started on the three engines in
    // turn (while the gate holds the two that start).
    start_many(&engines, "a", 10, || batch("a", 100)).await;
    // The backlog is served a while before key `b` comes with 10.
    log.open.store(true, Ordering::SeqCst);
    eventually("the backlog served a while", || async {
        (log.started().len() >= 20).then_some(())
    })
    .await;
    // Key `b`: 10 waiting at once, scheduled by one run in one commit.
    start_many(&engines, "b", 1, || batch("b", 10)).await;
    let b_done = eventually_for(Duration::from_secs(20), "b's 10 started", || async {
        let started = log.started();
        (started.iter().filter(|l| *l == "b").count() == 10).then_some(started)
    })
    .await;
    let started = b_done;
    // While both had attempts waiting: from `b`'s first start to its last.
    let first = started.iter().position(|l| l == "b").unwrap();
    let last = started.iter().rposition(|l| l == "b").unwrap();
    let window = &started[first..=last];
    let a = window.iter().filter(|l| *l == "a").count();
    let b = window.len() - a;
    let before = started[..first].len();
    eprintln!(
        "{backend:?}: while both waited, key a (1,000 queued) started {a} and key b (10) {b}; \
         {before} of a's before b's first"
    );
    assert_eq!(b, 10);
    // Each key's share of the starts while both waited is within 20 % of its fair half (the
    // window's edges fall anywhere within a pair of leases: one start more or less each side).
    let share = b as f64 / (a + b) as f64;
    assert!(
        (0.4..=0.6).contains(&share),
        "key a started {a} attempts to key b's {b} while both waited (weights 1:1): b's share \
         {share:.2}, not within 20 % of 0.5"
    );
    for e in engines {
        e.shutdown().await;
    }
}

async fn keys_share_the_slots_by_weight(backend: Backend) {
    let log = Arc::new(Log::default());
    let engines = engines(backend, "fair-weights", &log, 2).await;
    start_many(&engines, "heavy", 1, || Batch {
        weight: Some(2.0),
        ..batch("heavy", 100)
    })
    .await;
    start_many(&engines, "light", 1, || batch("light", 100)).await;
    log.open.store(true, Ordering::SeqCst);
    eventually("62 attempts started", || async {
        (log.started().len() >= 62).then_some(())
    })
    .await;
    // The first two went before both were waiting (either could be first): count after them.
    let started = log.started();
    let window = &started[2..62];
    let heavy = window.iter().filter(|l| *l == "heavy").count();
    let light = window.len() - heavy;
    eprintln!("{backend:?}: weights 2:1 started {heavy}:{light} of 60");
    assert!(
        (34..=46).contains(&heavy),
        "weights 2:1 started {heavy}:{light}"
    );
    for e in engines {
        e.shutdown().await;
    }
}

async fn priority_1_starts_before_priority_5_queued_earlier(backend: Backend) {
    let log = Arc::new(Log::default());
    let engines = engines(backend, "fair-priority", &log, 1).await;
    let late = Batch {
        priority: Some(5),
        keyed: false,
        ..batch("p5", 5)
    };
    let low = engines[0].client().start::<Fan>("low", late).await.unwrap();
    // One of them takes the only slot and holds it (the gate is closed) ...
    eventually("a priority 5 attempt running", || async {
        (!log.started().is_empty()).then_some(())
    })
    .await;
    // ... while 5 of priority 1 are queued after the 4 others.
    let soon = Batch {
        priority: Some(1),
        keyed: false,
        ..batch("p1", 5)
    };
    let high = engines[1]
        .client()
        .start::<Fan>("high", soon)
        .await
        .unwrap();
    scheduled(&high, 5).await;
    log.open.store(true, Ordering::SeqCst);
    assert_eq!(high.result().await.unwrap(), "5 done");
    assert_eq!(low.result().await.unwrap(), "5 done");
    let started = log.started();
    let expected: Vec<&str> = ["p5"]
        .into_iter()
        .chain(["p1"; 5])
        .chain(["p5"; 4])
        .collect();
    assert_eq!(started, expected);
    for e in engines {
        e.shutdown().await;
    }
}

async fn a_priority_or_weight_out_of_range_fails_the_call(backend: Backend) {
    let log = Arc::new(Log::default());
    log.open.store(true, Ordering::SeqCst);
    let engine = builder(backend, "fair-invalid")
        .workflow::<Fan>()
        .shared_activities(log.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let zero = Batch {
        priority: Some(0),
        ..batch("x", 1)
    };
    let said = client
        .start::<Fan>("zero", zero)
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert!(said.contains("priority 0 is not a level"), "{said}");
    let weightless = Batch {
        weight: Some(0.0),
        ..batch("x", 1)
    };
    let h = client.start::<Fan>("weightless", weightless).await.unwrap();
    let said = h.result().await.unwrap();
    assert!(said.contains("fairness weight 0"), "{said}");
    assert!(
        log.started().is_empty(),
        "an invalid call ran: {:?}",
        log.started()
    );
    let history = h.history().await.unwrap();
    assert!(
        !history
            .iter()
            .any(|e| matches!(e.kind, EventKind::ActivityScheduled { .. })),
        "an invalid call was recorded"
    );
    engine.shutdown().await;
}

both!(
    two_keys_share_the_slots_one_for_one_whatever_their_backlogs,
    keys_share_the_slots_by_weight,
    priority_1_starts_before_priority_5_queued_earlier,
    a_priority_or_weight_out_of_range_fails_the_call,
);
