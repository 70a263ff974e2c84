//! The store's own instruments in an engine's metrics: each write transaction of the SQLite
//! writer and of the PostgreSQL writers is counted by durability and result, with the requests
//! it folded together and (for a durable one) its commit's time. The memory store has none.

mod common;

use common::*;
use wf_sdk::metrics::SampleValue;
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Echo;

#[workflow(name = "echo")]
impl Echo {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(n)
    }
}

async fn write_transactions_are_counted(backend: Backend) {
    let engine = builder(backend, "store-metrics")
        .workflow::<Echo>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let starts: Vec<_> = (0..20u32)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { client.start::<Echo>(&format!("echo-{i}"), i).await })
        })
        .collect();
    for (i, start) in starts.into_iter().enumerate() {
        let h = start.await.unwrap().unwrap();
        assert_eq!(h.result().await.unwrap(), i as u32);
    }
    let snapshot = engine.metrics();
    let store = match backend {
        Backend::Memory => {
            assert_eq!(snapshot.family("wf_store_transactions_total"), None);
            engine.shutdown().await;
            return;
        }
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let s = ("store", store);
    let tx = |d, r| {
        snapshot
            .value(
                "wf_store_transactions_total",
                &[s, ("durability", d), ("result", r)],
            )
            .unwrap_or_else(|| panic!("no {d}/{r} transactions family for {store}"))
    };
    let durable = tx("durable", "ok");
    assert!(durable >= 1.0, "{store}: {durable} durable transactions");
    assert_eq!(tx("durable", "error") + tx("soft", "error"), 0.0);
    let transactions = durable + tx("soft", "ok");
    // A histogram's count and sum.
    let histogram = |name| match &snapshot.family(name).unwrap().samples[..] {
        [sample] => match &sample.value {
            SampleValue::Histogram { count, sum, .. } => (*count as f64, *sum),
            other => panic!("{name} is not a histogram: {other:?}"),
        },
        other => panic!("{name} has {} samples", other.len()),
    };
    let (batches, requests) = histogram("wf_store_transaction_requests");
    assert_eq!(batches, transactions);
    // Twenty starts (at least one request each) went through the writers.
    assert!(requests >= 20.0, "{store}: {requests} requests");
    assert_eq!(histogram("wf_store_transaction_seconds").0, transactions);
    assert_eq!(histogram("wf_store_commit_seconds").0, durable);
    engine.shutdown().await;
}

both!(write_transactions_are_counted);
