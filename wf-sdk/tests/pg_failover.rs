//! Failover to a synchronous standby under load: a primary and a standby that every commit
//! waits for (`.ci/postgres start --standby`), a URL that names both with
//! `target_session_attrs=read-write`, two worker engines and clients running orders
//! (activities, signals and updates with ids, every call retried on a retryable error as a
//! user would). The primary is killed (`pg_ctl stop -m immediate`) in the middle of it and the
//! standby promoted half a second later: every acknowledged start, signal, update and result
//! is in history exactly once and every order finishes. Prints the time from the primary's
//! death to the first acknowledged commit on the new primary and to the last order finishing.
//!
//! Starts its own servers; skipped (loudly) on a machine without PostgreSQL, failed under
//! `WF_REQUIRE_POSTGRES=1` there.
#![cfg(unix)]

mod common;
#[path = "common/load.rs"]
mod load;

use load::{check_history, drive, order_id, retry, Order, OrderClient, Work, RETRIES};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wf_postgres::testing::{Cluster, ClusterKind};
use wf_sdk::prelude::*;

const ORDERS: u32 = 300;
const PAUSE_MS: u64 = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_to_a_synchronous_standby_loses_nothing_and_applies_nothing_twice() {
    let Some(cluster) = tokio::task::spawn_blocking(|| Cluster::start(ClusterKind::Standby))
        .await
        .unwrap()
    else {
        return;
    };
    let url = cluster.url().to_string();
    let options = wf_sdk::postgres::PostgresOptions {
        schema: "failover".into(),
        writers: 2,
        readers: 1,
        ..Default::default()
    };
    let engine = || {
        Engine::builder()
            .postgres_with(url.clone(), options.clone())
            .poll_interval(Duration::from_millis(100))
            .liveness_lease(Duration::from_secs(2))
            .workflow::<Order>()
    };
    let workers = [
        engine().activities(Work).build().await.unwrap(),
        engine().activities(Work).build().await.unwrap(),
    ];
    let clients = engine().client_only().build().await.unwrap();
    let client = clients.client();
    let probe = client.start::<Order>("probe", 0).await.unwrap();

    let began = Instant::now();
    let drivers: Vec<_> = (0..ORDERS)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(u64::from(i) * 5)).await;
                drive(client, i, PAUSE_MS, Duration::from_millis(100)).await;
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cluster = std::sync::Arc::new(cluster);
    let c = std::sync::Arc::clone(&cluster);
    let died = tokio::task::spawn_blocking(move || {
        c.stop_primary("immediate");
        let died = Instant::now();
        std::thread::sleep(Duration::from_millis(500));
        c.promote();
        died
    })
    .await
    .unwrap();
    let promoted = died.elapsed();
    let total = retry("the probe's update", || probe.bump(1).update_id("probe-1")).await;
    assert_eq!(total, 1);
    let first_commit = died.elapsed();

    for (i, driver) in drivers.into_iter().enumerate() {
        tokio::time::timeout(Duration::from_secs(180), driver)
            .await
            .unwrap_or_else(|_| panic!("{} did not finish", order_id(i as u32)))
            .unwrap();
    }
    let last_finished = died.elapsed();
    for i in 0..ORDERS {
        let history = client
            .handle::<Order>(&order_id(i))
            .history()
            .await
            .unwrap();
        check_history(i, &history);
    }
    println!(
        "{ORDERS} orders; the primary died {:?} in, the standby was promoted {promoted:?} \
         later; the first update on the new primary was acknowledged {first_commit:?} after \
         the death, the last order finished {last_finished:?} after it; {} client calls \
         retried",
        died - began,
        RETRIES.load(Ordering::Relaxed),
    );
    clients.shutdown().await;
    for w in workers {
        w.shutdown().await;
    }
}
