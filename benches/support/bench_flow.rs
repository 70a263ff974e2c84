//! (q) flow limits held in the store: how closely a concurrency limit and a rate limit hold
//! (the most attempts seen running at once, the start rate measured), and what a limit costs
//! the workloads it does not bind, (a), and binds, (d): each run with and without a limit,
//! alternated, the medians compared.

use super::{activity_chain, ms, waiters, Bench};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wf_sdk::flow::{FlowKind, FlowLimit, FlowScope};
use wf_sdk::prelude::*;

/// The concurrency limit (q) holds 500 attempts to.
const Q_LIMIT: u32 = 4;
/// The rate limit (q) starts ticks at, per second.
const Q_RATE: u32 = 100;

/// What the activities of (q) saw.
#[derive(Default)]
pub struct Meter {
    running: AtomicU32,
    max: AtomicU32,
    ticks: Mutex<Vec<Instant>>,
}

#[activities]
impl Meter {
    /// Runs for `ms`, counting how many run at once.
    #[activity]
    async fn hold(&self, _ctx: ActivityContext, ms: u64) -> Result<(), ActivityError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    /// Notes when it started.
    #[activity]
    async fn tick(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        self.ticks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Instant::now());
        Ok(())
    }
}

/// What a run of (q) does: `steps` activities one after the other, under flow key `key`.
#[derive(Serialize, Deserialize)]
pub struct Steps {
    steps: u32,
    /// `hold` for this long; 0: `tick`.
    ms: u64,
    key: String,
}

/// Runs [`Steps`].
#[derive(Default)]
pub struct Metered;

#[workflow]
impl Metered {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, input: Steps) -> Result<u32, WorkflowError> {
        for _ in 0..input.steps {
            match input.ms {
                0 => {
                    ctx.activity(Meter::tick, ())
                        .flow_key(input.key.clone())
                        .await?
                }
                ms => {
                    ctx.activity(Meter::hold, ms)
                        .flow_key(input.key.clone())
                        .await?
                }
            }
        }
        Ok(input.steps)
    }
}

/// Starts `runs` runs of `steps` and awaits them all.
async fn run_steps(client: &Client, prefix: &str, runs: u32, steps: Steps) -> Result<(), WfError> {
    let mut handles = Vec::with_capacity(runs as usize);
    for i in 0..runs {
        let input = Steps {
            key: steps.key.clone(),
            ..steps
        };
        handles.push(
            client
                .start::<Metered>(format!("{prefix}-{i}"), input)
                .await?,
        );
    }
    for h in handles {
        h.result().await?;
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

pub async fn bench_q(b: &mut Bench) -> Result<(), WfError> {
    let meter = Arc::new(Meter::default());
    let shared = meter.clone();
    let (engine, _) = b
        .engine_with("q", None, move |e| {
            e.workflow::<Metered>().shared_activities(shared)
        })
        .await?;
    let client = engine.client();
    let limits = client.flow_limits();

    // 500 attempts of 2 ms, 50 runs at once, at most Q_LIMIT running.
    limits
        .set(FlowLimit::concurrency(FlowScope::key("model"), Q_LIMIT))
        .await?;
    let t = Instant::now();
    let steps = Steps {
        steps: 10,
        ms: 2,
        key: "model".into(),
    };
    run_steps(&client, "q-limit", 50, steps).await?;
    let took = t.elapsed();
    let max = meter.max.load(Ordering::SeqCst);
    b.row(
        &format!("(q) 500 activities under a concurrency limit of {Q_LIMIT}"),
        format!("{max:>10} at most running ({:.0} ms)", ms(took)),
    );
    b.record("q_limit", f64::from(Q_LIMIT));
    b.record("q_max_running_observed", f64::from(max));

    // 400 ticks waiting under Q_RATE/s (burst 10): the rate over the 3 s after the first 0.5 s.
    let rate = FlowLimit::rate(FlowScope::key("rated"), Q_RATE, Duration::from_secs(1)).burst(10);
    limits.set(rate).await?;
    let steps = Steps {
        steps: 10,
        ms: 0,
        key: "rated".into(),
    };
    run_steps(&client, "q-rate", 40, steps).await?;
    let ticks = meter
        .ticks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let first = ticks.iter().min().copied().unwrap_or_else(Instant::now);
    let (from, to) = (
        first + Duration::from_millis(500),
        first + Duration::from_millis(3_500),
    );
    let measured = ticks.iter().filter(|t| **t >= from && **t < to).count() as f64 / 3.0;
    b.row(
        &format!("(q) a rate limit of {Q_RATE}/s, 400 starts waiting"),
        format!("{measured:>10.1} starts/s"),
    );
    b.record("q_rate_target_per_s", f64::from(Q_RATE));
    b.record("q_rate_measured_per_s", measured);
    limits
        .remove(FlowScope::key("model"), FlowKind::Concurrency)
        .await?;
    limits
        .remove(FlowScope::key("rated"), FlowKind::Rate)
        .await?;

    // (a) with a limit that binds none of its runs, and (d) with one that binds its activities
    // (it then leases them by poll, not at once), each alternated with the same without.
    let n = if b.args.quick { 500 } else { 2_000 };
    let unused = FlowLimit::concurrency(FlowScope::key("unused"), 4);
    let noop = FlowLimit::concurrency(FlowScope::activity("noop"), 64);
    let (mut a_free, mut a_limited, mut d_free, mut d_limited) = (vec![], vec![], vec![], vec![]);
    for round in 0..if b.args.quick { 3 } else { 5 } {
        a_free.push(waiters(&client, &format!("qa-free-{round}"), n).await?);
        limits.set(unused.clone()).await?;
        a_limited.push(waiters(&client, &format!("qa-lim-{round}"), n).await?);
        limits
            .remove(unused.scope.clone(), FlowKind::Concurrency)
            .await?;
    }
    // (d) takes some 15 ms, so one stall of the VM is a large share of a round: more rounds.
    for round in 0..if b.args.quick { 9 } else { 21 } {
        d_free.push(ms(
            activity_chain(&client, &format!("qd-free-{round}")).await?
        ));
        limits.set(noop.clone()).await?;
        d_limited.push(ms(
            activity_chain(&client, &format!("qd-lim-{round}")).await?
        ));
        limits
            .remove(noop.scope.clone(), FlowKind::Concurrency)
            .await?;
    }
    let (a0, a1) = (median(a_free), median(a_limited));
    let (d0, d1) = (median(d_free), median(d_limited));
    let a_cost = (a0 - a1) / a0 * 100.0;
    let d_cost = (d1 - d0) / d0 * 100.0;
    b.row(
        &format!("(q) (a) {n} workflows, a limit present / none"),
        format!("{a1:>10.0} / {a0:.0} workflows/s ({a_cost:+.1} %)"),
    );
    b.row(
        "(q) (d) 100 activities, a limit on them / none",
        format!("{d1:>10.1} / {d0:.1} ms ({d_cost:+.1} %)"),
    );
    b.record("q_a_limit_overhead_pct", a_cost);
    b.record("q_d_limit_overhead_pct", d_cost);
    engine.shutdown().await;
    Ok(())
}
