//! A store opened while its server is away: opening waits for it (up to `reconnect_for`)
//! instead of failing at the first refused connection, and fails clearly once that runs out.
//! Starts servers of its own; skipped (loudly) on a machine without PostgreSQL.

use std::time::{Duration, Instant};
use wf_core::store::conformance::{start, T0};
use wf_core::store::{BackendErrorKind, Store, StoreError};
use wf_postgres::testing::{Cluster, ClusterKind};
use wf_postgres::{PostgresOptions, PostgresStore};

fn options(reconnect_for: Duration) -> PostgresOptions {
    PostgresOptions {
        schema: "outage".into(),
        writers: 1,
        readers: 1,
        reconnect_for,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_waits_for_a_server_that_comes_back() {
    let Some(cluster) = Cluster::start(ClusterKind::Single) else {
        return;
    };
    cluster.stop_primary("fast");
    let url = cluster.url().to_string();
    let began = Instant::now();
    let opening = tokio::spawn(async move {
        PostgresStore::connect_with(&url, options(Duration::from_secs(30))).await
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !opening.is_finished(),
        "opening waits while the server is away"
    );
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.start_primary();
        cluster
    })
    .await
    .unwrap();
    let store = opening
        .await
        .unwrap()
        .expect("the store opens once the server is back");
    assert!(began.elapsed() >= Duration::from_millis(1500));
    start(&store, "wf-1", "run-1", T0).await;
    assert!(store.get_run("wf-1", None).await.unwrap().is_some());
    drop(store);
    drop(cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_gives_up_after_reconnect_for_with_an_unavailable_error() {
    let Some(cluster) = Cluster::start(ClusterKind::Single) else {
        return;
    };
    cluster.stop_primary("fast");
    let began = Instant::now();
    let failed = PostgresStore::connect_with(cluster.url(), options(Duration::from_secs(1)))
        .await
        .err()
        .expect("no server: the store does not open");
    let waited = began.elapsed();
    assert!(
        waited >= Duration::from_secs(1),
        "it tried for reconnect_for ({waited:?})"
    );
    assert!(
        waited < Duration::from_secs(15),
        "and then gave up ({waited:?})"
    );
    match &failed {
        StoreError::Backend(b) => assert_eq!(b.kind(), BackendErrorKind::Unavailable, "{failed}"),
        other => panic!("expected an Unavailable error, got {other:?}"),
    }
    assert!(failed.to_string().contains("connect"), "{failed}");
}
