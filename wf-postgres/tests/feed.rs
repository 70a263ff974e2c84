//! The feed on PostgreSQL: transactions on several connections commit out of the order of
//! their rows' numbers, and a reader never skips a row for it (see `feed.rs`: rows are read
//! once no older transaction is open, in transaction order). Skipped (loudly) without
//! `WF_POSTGRES_URL`.

use std::sync::Arc;
use std::time::{Duration, Instant};
use wf_core::store::conformance::{start, T0};
use wf_core::store::{FeedCursor, FeedEvent, FeedFilter, FeedKind, Store};
use wf_postgres::testing::TestSchema;

/// Every event after `after` readable now, page by page.
async fn read_now(store: &dyn Store, after: FeedCursor) -> (Vec<FeedEvent>, FeedCursor) {
    let mut out = Vec::new();
    let mut at = after;
    loop {
        let page = store.read_feed(&FeedFilter::new(), at, 7).await.unwrap();
        if page.next == at {
            return (out, at);
        }
        at = page.next;
        out.extend(page.events);
    }
}

/// A connection of the test's own in the schema, outside any store.
async fn raw(db: &TestSchema) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .expect("connect to the test database");
    tokio::spawn(conn);
    client
        .batch_execute(&format!("SET search_path TO {}", db.schema()))
        .await
        .unwrap();
    client
}

/// A transaction that took its row's number first but commits last: while it is open, a
/// reader does not read past it (the later commit's row waits too), and once it commits the
/// reader gets both rows, the older transaction's first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_waits_for_an_older_open_transaction_and_skips_nothing() {
    let Some(db) = TestSchema::new("feed_order") else {
        return;
    };
    let store = db.open().await;
    let held = raw(&db).await;
    held.batch_execute(
        "BEGIN; INSERT INTO workflow_feed \
         (workflow_type, workflow_id, run_id, kind, event_id, at_ms, detail) \
         VALUES ('order', 'wf-held', 'run-held', 'started', 1, 0, '{}')",
    )
    .await
    .unwrap();
    // Committed after the held row took its number.
    start(&store, "wf-1", "run-1", T0).await;
    let (seen, cursor) = read_now(&store, FeedCursor::start()).await;
    assert!(
        seen.is_empty(),
        "nothing is read past an open older transaction: {seen:?}"
    );
    held.batch_execute("COMMIT").await.unwrap();
    // (Another test's transaction on the server may hold the feed back a moment longer.)
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    let mut at = cursor;
    while seen.len() < 2 && Instant::now() < deadline {
        let (more, next) = read_now(&store, at).await;
        seen.extend(more);
        at = next;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ids: Vec<&str> = seen.iter().map(|e| e.workflow_id.as_str()).collect();
    assert_eq!(ids, ["wf-held", "wf-1"], "both, in transaction order");
    assert!(seen[0].cursor < seen[1].cursor);
    let (seq_held, seq_1) = (
        seen[0].cursor.position().unwrap().1,
        seen[1].cursor.position().unwrap().1,
    );
    assert!(seq_held < seq_1, "the held row took its number first");
}

/// Starts committed concurrently from two stores (their own connections and writers) while
/// a reader reads on: the reader gets every start once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_never_make_a_reader_skip_a_row() {
    let Some(db) = TestSchema::new("feed_race") else {
        return;
    };
    const EACH: usize = 60;
    let stores = [Arc::new(db.open().await), Arc::new(db.open().await)];
    let reader = db.open().await;
    let writers: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(s, store)| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut starts = Vec::new();
                for i in 0..EACH {
                    let store = store.clone();
                    starts.push(tokio::spawn(async move {
                        let id = format!("wf-{s}-{i}");
                        start(&*store, &id, &format!("run-{s}-{i}"), T0).await;
                    }));
                }
                for s in starts {
                    s.await.unwrap();
                }
            })
        })
        .collect();
    let mut seen: Vec<FeedEvent> = Vec::new();
    let mut at = FeedCursor::start();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.len() < 2 * EACH && Instant::now() < deadline {
        let (more, next) = read_now(&reader, at).await;
        seen.extend(more);
        at = next;
    }
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(seen.len(), 2 * EACH, "every start once");
    assert!(seen.iter().all(|e| e.kind == FeedKind::Started));
    let mut ids: Vec<&str> = seen.iter().map(|e| e.workflow_id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 2 * EACH, "no start twice");
    assert!(seen.windows(2).all(|w| w[0].cursor < w[1].cursor));
    // A reader from the start now reads the same rows in the same order.
    let (again, _) = read_now(&reader, FeedCursor::start()).await;
    assert_eq!(again, seen);
}
