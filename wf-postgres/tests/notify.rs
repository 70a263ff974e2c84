//! Wake-ups between processes: a store hears (`LISTEN`) what another store on the same schema
//! committed (`NOTIFY`), and not what a store on another schema did. Skipped (loudly) without
//! `WF_POSTGRES_URL`.

use std::time::Duration;
use wf_core::store::conformance::{start, T0};
use wf_core::store::Store;
use wf_postgres::testing::TestSchema;

/// Waits (10 s at most: a failure detector, not a timing assertion) until `changes` moves.
async fn moved(changes: &mut tokio::sync::watch::Receiver<u64>) -> bool {
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .is_ok_and(|r| r.is_ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_in_one_store_moves_the_other_stores_changes() {
    let (Some(db), Some(other)) = (TestSchema::new("notify"), TestSchema::new("notify_other"))
    else {
        return;
    };
    let listener = db.open().await;
    let mut changes = listener.changes().expect("a PostgreSQL store listens");
    // The listening connection counts its (re)start as a change: wait for it first.
    assert!(moved(&mut changes).await, "the listener starts");
    changes.mark_unchanged();

    // Another schema's commits are not news here.
    let elsewhere = other.open().await;
    start(&elsewhere, "wf-elsewhere", "run-elsewhere", T0).await;

    let writer = db.open().await;
    start(&writer, "wf-1", "run-1", T0).await;
    assert!(moved(&mut changes).await, "the start was heard");
    assert!(listener.get_run("wf-1", None).await.unwrap().is_some());
}

/// The notification goes out after the commit, from a connection of the store's own: a store
/// dropped as soon as its commit was answered still sends what it owes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_dropped_right_after_its_commit_still_notifies() {
    let Some(db) = TestSchema::new("notify_drop") else {
        return;
    };
    let listener = db.open().await;
    let mut changes = listener.changes().expect("a PostgreSQL store listens");
    assert!(moved(&mut changes).await, "the listener starts");
    changes.mark_unchanged();

    let writer = db.open().await;
    start(&writer, "wf-1", "run-1", T0).await;
    drop(writer);
    assert!(moved(&mut changes).await, "the start was heard");
}
