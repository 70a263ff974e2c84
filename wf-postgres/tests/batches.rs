//! Group commits with queued statements (write-behind): a request whose queued write fails
//! once sent fails alone, and the requests batched with it keep their changes. Skipped
//! (loudly) without `WF_POSTGRES_URL`.

use wf_core::store::conformance::{start, start_request, T0};
use wf_core::store::{RunStatus, Store, StoreError};
use wf_postgres::testing::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_queued_write_fails_its_request_alone_in_a_group_commit() {
    let Some(db) = TestSchema::new("batched_failures") else {
        return;
    };
    let store = db.open().await;
    start(&store, "taken", "run-taken", T0).await;
    // Every third start reuses the taken run id: its `INSERT` is queued, fails when sent with
    // its request's closing round trip, and rolls back only that request's savepoint. The
    // calls are queued when made, so they share group commits.
    const STARTS: usize = 150;
    let calls: Vec<_> = (0..STARTS)
        .map(|i| {
            let run_id = if i % 3 == 0 {
                "run-taken".to_string()
            } else {
                format!("run-{i}")
            };
            store.start_run(start_request(&format!("wf-{i}"), &run_id, T0 + 1))
        })
        .collect();
    let outcomes = futures_util::future::join_all(calls).await;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let run = store.get_run(&format!("wf-{i}"), None).await.unwrap();
        if i % 3 == 0 {
            let err = outcome.expect_err("a start with a taken run id fails");
            assert!(matches!(err, StoreError::Backend(..)), "{err}");
            assert_eq!(run, None, "the failed start of wf-{i} left a run");
        } else {
            let started = outcome.unwrap_or_else(|e| panic!("start {i} failed: {e}"));
            assert!(started.started);
            let run = run.unwrap_or_else(|| panic!("wf-{i} has no run"));
            assert_eq!(
                (run.run_id.as_str(), run.status),
                (format!("run-{i}").as_str(), RunStatus::Running)
            );
            assert_eq!(
                store.read_history(&run.run_id, 1).await.unwrap().len(),
                1,
                "wf-{i}'s WorkflowStarted event"
            );
        }
    }
    // The taken run is as it was.
    let taken = store.get_run("taken", None).await.unwrap().unwrap();
    assert_eq!(
        (taken.run_id.as_str(), taken.next_event_id),
        ("run-taken", 2)
    );
    assert_eq!(store.read_history("run-taken", 1).await.unwrap().len(), 1);
}
