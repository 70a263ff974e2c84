//! Engines and their liveness leases: registration, renewal, removal, and the leases of an
//! engine whose liveness lease expired being free at once.

use super::fixtures::*;
use crate::store::{ActivityOptions, EngineRecord, LeaseRequest, Store};
use std::sync::Arc;
use std::time::Duration;

fn engine(id: &str, lease_until_ms: i64) -> EngineRecord {
    EngineRecord {
        engine_id: id.into(),
        wake_address: Some(format!("/tmp/{id}.sock")),
        task_queue: "default".into(),
        started_ms: T0,
        lease_until_ms,
    }
}

/// Engines register, renew, expire from the live list, and are removed.
pub async fn engines_register_renew_and_leave(store: Arc<dyn Store>) {
    assert!(store.admin().live_engines(T0).await.unwrap().is_empty());
    store
        .admin()
        .register_engine(engine("e-1", T0 + 3_000))
        .await
        .unwrap();
    store
        .admin()
        .register_engine(engine("e-2", T0 + 1_000))
        .await
        .unwrap();
    let live = store.admin().live_engines(T0).await.unwrap();
    assert_eq!(live, [engine("e-1", T0 + 3_000), engine("e-2", T0 + 1_000)]);
    assert_eq!(
        store.admin().live_engines(T0 + 2_000).await.unwrap(),
        [engine("e-1", T0 + 3_000)],
        "an engine whose lease ran out is not live"
    );
    assert!(store.admin().renew_engine("e-2", T0 + 5_000).await.unwrap());
    assert_eq!(
        store.admin().live_engines(T0 + 4_000).await.unwrap().len(),
        1
    );
    assert_eq!(
        store.admin().live_engines(T0 + 4_000).await.unwrap()[0].engine_id,
        "e-2"
    );
    assert!(!store
        .admin()
        .renew_engine("nobody", T0 + 5_000)
        .await
        .unwrap());
    store.admin().remove_engine("e-2").await.unwrap();
    assert!(store
        .admin()
        .live_engines(T0)
        .await
        .unwrap()
        .iter()
        .all(|e| e.engine_id == "e-1"));
    assert!(
        !store.admin().renew_engine("e-2", T0 + 5_000).await.unwrap(),
        "removed"
    );
    assert_eq!(
        store.next_wakeup(T0).await.unwrap(),
        Some(T0 + 3_000),
        "an engine's lease expiry is a wake-up"
    );
}

/// A workflow task leased by an engine whose liveness lease expired is free at once; the
/// engine itself never sees its own lease as lost.
pub async fn a_dead_engines_workflow_task_is_free_at_its_liveness_expiry(store: Arc<dyn Store>) {
    store
        .admin()
        .register_engine(engine("dead", T0 + 1_000))
        .await
        .unwrap();
    store
        .admin()
        .register_engine(engine("alive", T0 + 60_000))
        .await
        .unwrap();
    start(&*store, "wf-1", "run-1", T0).await;
    let tasks = store
        .poll_workflow_tasks_any("dead", T0, 600_000, 10)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1, "leased for ten minutes");
    assert!(store
        .poll_workflow_tasks_any("alive", T0 + 500, 600_000, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .lease_run(LeaseRequest {
            run_id: String::from("run-1"),
            worker_id: String::from("alive"),
            now_ms: T0 + 500,
            lease_ms: 600_000,
            build_id: None
        })
        .await
        .unwrap()
        .is_none());
    assert!(
        store
            .poll_workflow_tasks_any("dead", T0 + 2_000, 600_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "the owner itself does not re-lease what it holds"
    );
    let tasks = store
        .poll_workflow_tasks_any("alive", T0 + 2_000, 600_000, 10)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1, "free once its engine's liveness ran out");
}

/// An activity attempt leased by an engine whose liveness lease expired is reported expired
/// at once, whatever its own lease; one leased by an owner that is not a registered engine
/// keeps its own lease.
pub async fn a_dead_engines_activity_attempt_expires_at_its_liveness_expiry(store: Arc<dyn Store>) {
    store
        .admin()
        .register_engine(engine("dead", T0 + 1_000))
        .await
        .unwrap();
    let long = ActivityOptions {
        start_to_close: Some(Duration::from_secs(600)),
        ..Default::default()
    };
    for (workflow_id, run_id) in [("wf-1", "run-1"), ("wf-2", "run-2")] {
        start(&*store, workflow_id, run_id, T0).await;
        run_task(&*store, T0, |_, c| {
            c.new_activities = vec![activity(1, long.clone())]
        })
        .await;
    }
    let leased = store.poll_activity_tasks_any("dead", T0, 1).await.unwrap();
    assert_eq!(leased.len(), 1);
    let other = store
        .poll_activity_tasks_any("unregistered", T0, 1)
        .await
        .unwrap();
    assert_eq!(other.len(), 1);
    assert!(store
        .expired_activities(T0 + 500, 10)
        .await
        .unwrap()
        .is_empty());
    let expired = store.expired_activities(T0 + 1_000, 10).await.unwrap();
    assert_eq!(
        expired.len(),
        1,
        "only the dead engine's attempt: {expired:?}"
    );
    assert_eq!(expired[0].run_id, leased[0].run_id);
    assert!(
        store
            .admin()
            .renew_engine("dead", T0 + 10_000)
            .await
            .unwrap(),
        "an engine back to life renews"
    );
    assert!(store
        .expired_activities(T0 + 1_000, 10)
        .await
        .unwrap()
        .is_empty());
}
