//! Asynchronous completion: an attempt held for its outside completer outlives the engine
//! that ran it, keeps its own deadlines and heartbeats, and is then resolved like any other;
//! only a current, running attempt is held.

use super::fixtures::*;
use crate::store::{ActivityOptions, ActivityResolution, EngineRecord, Store};
use std::sync::Arc;
use std::time::Duration;

fn engine(id: &str, lease_until_ms: i64) -> EngineRecord {
    EngineRecord {
        engine_id: id.into(),
        wake_address: None,
        task_queue: "default".into(),
        started_ms: T0,
        lease_until_ms,
    }
}

/// A held attempt is not expired when its engine's liveness runs out, only when its own lease
/// does (a heartbeat extends it); it resolves once; stale, unleased and expired attempts are
/// not held.
pub async fn a_held_attempt_outlives_its_engine_and_keeps_its_deadlines(store: Arc<dyn Store>) {
    store
        .admin()
        .register_engine(engine("dead", T0 + 1_000))
        .await
        .unwrap();
    let options = ActivityOptions {
        start_to_close: Some(Duration::from_secs(600)),
        heartbeat_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    start(&*store, "wf-1", "run-1", T0).await;
    run_task(&*store, T0, |_, c| {
        c.new_activities = vec![activity(1, options.clone())]
    })
    .await;
    assert!(
        !store
            .hold_activity_for_completion(attempt_of("run-1", 1, 1), T0)
            .await
            .unwrap(),
        "an attempt not yet leased is not held"
    );
    let leased = store.poll_activity_tasks_any("dead", T0, 10).await.unwrap();
    assert_eq!(leased.len(), 1);
    assert!(!store
        .hold_activity_for_completion(attempt_of("run-1", 1, 2), T0)
        .await
        .unwrap());
    assert!(!store
        .hold_activity_for_completion(attempt_of("run-9", 1, 1), T0)
        .await
        .unwrap());
    assert!(store
        .hold_activity_for_completion(attempt_of("run-1", 1, 1), T0 + 100)
        .await
        .unwrap());
    let pending = store.pending_activities("run-1").await.unwrap();
    assert_eq!(
        (pending[0].attempt_deadline_ms, pending[0].lease_until_ms),
        (leased[0].attempt_deadline_ms, leased[0].lease_until_ms),
        "its deadlines stay"
    );
    assert!(
        store
            .expired_activities(T0 + 5_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "its engine's liveness ran out at T0 + 1 s, its own lease did not"
    );
    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 8_000)
        .await
        .unwrap());
    assert!(store
        .expired_activities(T0 + 12_000, 10)
        .await
        .unwrap()
        .is_empty());
    let expired = store.expired_activities(T0 + 18_000, 10).await.unwrap();
    assert_eq!(expired.len(), 1, "its heartbeat lease ran out");
    assert!(
        !store
            .hold_activity_for_completion(attempt_of("run-1", 1, 1), T0 + 18_000)
            .await
            .unwrap(),
        "an expired attempt is not held"
    );
    let done = ActivityResolution::Completed {
        result: payload("approved"),
        attempts: 1,
    };
    assert!(store
        .resolve_activity(attempt_of("run-1", 1, 1), done.clone(), T0 + 9_000)
        .await
        .unwrap());
    assert!(!store
        .resolve_activity(attempt_of("run-1", 1, 1), done, T0 + 9_000)
        .await
        .unwrap());
    assert!(store.pending_activities("run-1").await.unwrap().is_empty());
}
