//! Time travel and describe's blocked-on view, measured: `query_at` on a run with a 1,000-event
//! history (answered by replaying the prefix), beside a query on the cached run, and describe
//! with `blocked_on` on a cached run and on one only replay can answer (a client-only engine).
//! Prints figures; asserts nothing about time.
//!
//! ```sh
//! cargo run --release --example query_at_bench            # 1,000 events, on SQLite
//! cargo run --release --example query_at_bench -- 5000    # another history length
//! ```

use std::time::{Duration, Instant};
use wf_sdk::prelude::*;
use wf_sdk::{history::EventKind, payload::Payload};

/// Counts `bump`s; its main method waits forever on a condition.
#[derive(Default)]
pub struct Counter {
    n: u32,
}

#[workflow]
impl Counter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|_| false).await;
        Ok(())
    }

    #[signal]
    fn bump(&mut self) {
        self.n += 1;
    }

    #[query]
    fn count(&self) -> u32 {
        self.n
    }
}

/// The median and the 99th percentile of `times` calls of `f`.
async fn measure<F, Fut>(times: usize, mut f: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut all = Vec::with_capacity(times);
    for _ in 0..times {
        let t = Instant::now();
        f().await;
        all.push(t.elapsed());
    }
    all.sort();
    let at = |p: f64| all[((all.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99))
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() {
    let events: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000);
    let dir = std::env::temp_dir().join(format!("wf-query-at-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let db = dir.join("bench.db");
    let engine = Engine::builder()
        .sqlite(&db)
        .workflow::<Counter>()
        .build()
        .await
        .expect("engine");
    let client = engine.client();
    let h = client.start::<Counter>("counter", ()).await.expect("start");
    // Each signal is one task: `SignalReceived` and `WorkflowTaskCompleted`.
    let mut length = h.describe().await.expect("describe").history_length;
    while length < events {
        h.bump().await.expect("signal");
        length += 2;
    }
    let history = h.history().await.expect("history");
    let last = history.last().map(|e| e.event_id).unwrap_or(0);
    let signals = history
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SignalReceived { .. }))
        .count();
    println!(
        "run with {last} events ({signals} signals), SQLite at {}",
        db.display()
    );

    let args = || Payload::encode(&()).expect("unit");
    let rounds = 200;
    let (p50, p99) = measure(rounds, || async {
        h.count().await.expect("query");
    })
    .await;
    println!(
        "query, cached run:            p50 {}  p99 {}",
        ms(p50),
        ms(p99)
    );
    for at in [last / 2, last] {
        let (p50, p99) = measure(rounds, || async {
            client
                .query_at("counter", "count", args(), at)
                .await
                .expect("query_at");
        })
        .await;
        println!(
            "query_at event {at:>5}:          p50 {}  p99 {}",
            ms(p50),
            ms(p99)
        );
    }
    let (p50, p99) = measure(rounds, || async {
        h.describe().await.expect("describe");
    })
    .await;
    println!(
        "describe, cached run:         p50 {}  p99 {}",
        ms(p50),
        ms(p99)
    );
    let reader = Engine::builder()
        .sqlite(&db)
        .client_only()
        .workflow::<Counter>()
        .build()
        .await
        .expect("a client-only engine");
    let cold = reader.client().handle::<Counter>("counter");
    let blocked = cold.describe().await.expect("describe").blocked_on;
    assert_eq!(blocked.len(), 1, "the replayed run names its main method");
    let (p50, p99) = measure(rounds, || async {
        cold.describe().await.expect("describe");
    })
    .await;
    println!(
        "describe, replayed (no cache): p50 {}  p99 {}",
        ms(p50),
        ms(p99)
    );
    drop(reader);
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}
