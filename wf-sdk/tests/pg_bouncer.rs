//! wf behind PgBouncer (Debian's `pgbouncer`): in session pooling every store feature works (a
//! workflow with an activity, a signal and an update, and wake-ups between engines through
//! `LISTEN`); in transaction pooling, which cannot keep a session per connection, the store
//! refuses to open with an error that names `pool_mode = session`.
//!
//! Starts its own server and PgBouncer; skipped (loudly) on a machine without them.
#![cfg(unix)]

mod common;
#[path = "common/load.rs"]
mod load;

use load::{check_history, drive, order_id, Order, Work};
use std::time::Duration;
use wf_postgres::testing::{Cluster, ClusterKind, PgBouncer};
use wf_sdk::prelude::*;

fn options(schema: &str) -> wf_sdk::postgres::PostgresOptions {
    wf_sdk::postgres::PostgresOptions {
        schema: schema.into(),
        writers: 2,
        readers: 1,
        reconnect_for: Duration::from_secs(2),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_pooling_runs_workflows_and_wakes_other_engines() {
    let Some(cluster) = Cluster::start(ClusterKind::Single) else {
        return;
    };
    let Some(bouncer) = PgBouncer::start(&cluster, "session") else {
        return;
    };
    let url = bouncer.url();
    // A worker and a client-only engine: the client's calls reach the worker through
    // NOTIFY (a slow poll would make the test slow, not fail it: the poll is set long).
    let engine = || {
        Engine::builder()
            .postgres_with(url.clone(), options("bounced"))
            .poll_interval(Duration::from_secs(30))
            .workflow::<Order>()
    };
    let worker = engine().activities(Work).build().await.unwrap();
    let clients = engine().client_only().build().await.unwrap();
    let client = clients.client();
    let began = std::time::Instant::now();
    let drivers: Vec<_> = (0..5)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { drive(client, i, 10, Duration::from_millis(20)).await })
        })
        .collect();
    for driver in drivers {
        driver.await.unwrap();
    }
    assert!(
        began.elapsed() < Duration::from_secs(25),
        "the worker heard of new work through LISTEN/NOTIFY, not the 30 s poll ({:?})",
        began.elapsed()
    );
    for i in 0..5 {
        let history = client
            .handle::<Order>(&order_id(i))
            .history()
            .await
            .unwrap();
        check_history(i, &history);
    }
    clients.shutdown().await;
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_pooling_is_refused_at_open_naming_session_mode() {
    let Some(cluster) = Cluster::start(ClusterKind::Single) else {
        return;
    };
    let Some(bouncer) = PgBouncer::start(&cluster, "transaction") else {
        return;
    };
    let refused = Engine::builder()
        .postgres_with(bouncer.url(), options("pooled"))
        .workflow::<Order>()
        .build()
        .await
        .expect_err("a store behind transaction pooling does not open");
    let message = refused.to_string();
    assert!(message.contains("pool_mode = session"), "{message}");
}
