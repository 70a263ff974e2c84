//! `GET /readyz`: 200 while the store answers a read within the deadline, 503 when it fails,
//! stalls or the engine stops; `GET /healthz` answers 200 all along (liveness only).
//! The store is SQLite behind the fault-injecting wrapper.

#[macro_use]
mod common;

use common::{Nap, TOKEN};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wf_core::store::faults::{Crash, Fault, FaultStore, Op, Target};
use wf_core::store::SqliteStore;
use wf_http::ServeOptions;
use wf_sdk::prelude::*;

/// A SQLite database file removed (with its journal files) when dropped.
struct Db(std::path::PathBuf);

impl Drop for Db {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

async fn engine_on_faults(name: &str) -> (Db, Arc<FaultStore>, Engine) {
    // A file of its own per call: each test runs over HTTP and HTTPS at once, in one process.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let db =
        Db(std::env::temp_dir().join(format!("wf-ready-{}-{name}-{n}.db", std::process::id())));
    let sqlite = SqliteStore::open(&db.0).expect("open SQLite");
    let store = FaultStore::new(Arc::new(sqlite));
    let engine = common::agent_engine(Engine::builder().store(store.clone())).await;
    (db, store, engine)
}

#[track_caller]
fn assert_unavailable(r: &common::Reply, says: &str) {
    assert_eq!(r.status, 503, "{:?}", r.body);
    assert_eq!(r.body["error"], "unavailable", "{:?}", r.body);
    let message = r.body["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message}");
}

both_ways!(
    #[tokio::test]
    ready_while_the_store_answers_not_while_it_fails_or_stalls
);
async fn ready_while_the_store_answers_not_while_it_fails_or_stalls(net: common::Net) {
    let (_db, store, engine) = engine_on_faults("faults").await;
    let options = ServeOptions::default()
        .token(TOKEN)
        .ready_timeout(Duration::from_millis(300));
    let server = net.serve(&engine, options).await;
    // The probes need no token.
    let lb = net.http(&server, None);
    let remote = net.connect(&server).token(TOKEN).await.expect("connect");

    let r = lb.get("/readyz").await;
    assert_eq!((r.status, r.body["status"].as_str()), (200, Some("ready")));
    remote
        .ready()
        .await
        .expect("the remote client sees the server ready");
    engine
        .client()
        .ready()
        .await
        .expect("the engine's client too");

    // Reads fail: not ready, while alive.
    store.inject(Fault::Io, Target::Ops(vec![Op::Read]));
    assert_unavailable(&lb.get("/readyz").await, "the store failed a read (io)");
    assert_eq!(lb.get("/healthz").await.status, 200, "still alive");
    let err = remote.ready().await.unwrap_err();
    assert!(err.to_string().contains("HTTP 503"), "{err}");
    assert!(engine.client().ready().await.is_err());

    // Reads stall past the deadline: not ready, answered at the deadline, not the stall's end.
    store.clear();
    store.inject(
        Fault::Delay(Duration::from_millis(1500)),
        Target::Ops(vec![Op::Read]),
    );
    let asked = Instant::now();
    let r = lb.get("/readyz").await;
    let took = asked.elapsed();
    assert_unavailable(&r, "did not answer within 300ms");
    assert!(
        took < Duration::from_millis(1200),
        "answered after {took:?}"
    );

    // The store is well again: ready again, with no restart.
    store.clear();
    let r = lb.get("/readyz").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    not_ready_once_the_engine_stops_or_its_store_closes
);
async fn not_ready_once_the_engine_stops_or_its_store_closes(net: common::Net) {
    let (_db, store, engine) = engine_on_faults("closed").await;
    let server = net.serve(&engine, ServeOptions::default()).await;
    let lb = net.http(&server, None);
    assert_eq!(lb.get("/readyz").await.status, 200);

    // The server's client keeps the engine's core (and its store) alive; the engine stops.
    engine.shutdown().await;
    assert_unavailable(&lb.get("/readyz").await, "the engine is shutting down");
    assert_eq!(lb.get("/healthz").await.status, 200);

    // A client that runs no workers, on the same store, which then takes no more calls (as
    // a store whose process died: every call fails with `Closed`).
    let client_only = Engine::builder()
        .store(store.clone())
        .workflow::<Nap>()
        .client_only()
        .build()
        .await
        .expect("a client-only engine");
    let server2 = net.serve(&client_only, ServeOptions::default()).await;
    let lb2 = net.http(&server2, None);
    assert_eq!(lb2.get("/readyz").await.status, 200);
    store.crash_at(store.commits() + 1, Crash::NotApplied);
    let start = client_only.client().start::<Nap>("nap-1", 1).await;
    assert!(start.is_err() && store.is_crashed(), "{start:?}");
    assert_unavailable(
        &lb2.get("/readyz").await,
        "the store failed a read (closed)",
    );
    server.shutdown().await.unwrap();
    server2.shutdown().await.unwrap();
}
