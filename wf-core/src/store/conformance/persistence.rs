//! Durable stores only: the database is the truth. Closing a store and opening it again loses
//! nothing, a failed request leaves no trace in it, and several stores (processes) may share
//! it.

use super::fixtures::*;
use super::harness::StoreUnderTest;
use crate::store::{DeliverOutcome, Delivery, Message, Store, StoreError, UpdateState};
use std::sync::Arc;

/// Everything survives closing the store and opening it again: runs, histories, inboxes,
/// leases, timers, updates, dedupe ids.
pub async fn everything_survives_close_and_reopen(db: Arc<dyn StoreUnderTest>) {
    let store = db.open().await;
    populate(&*store).await;
    let before = snapshot(&*store).await;
    drop(store);

    let store = db.open().await;
    assert_eq!(snapshot(&*store).await, before);
    let dup = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0 + 7))
        .await
        .unwrap();
    assert_eq!(
        dup,
        DeliverOutcome::DuplicateSignal {
            run_id: "run-1".into()
        }
    );
    let task = lease_one(&*store, "w", T0 + 7).await;
    assert!(
        matches!(&task.messages[..], [m] if matches!(&m.message, Message::Signal { name, .. } if name == "resume"))
    );
    assert_eq!(
        store.fire_due_timers(T0 + 500, 10).await.unwrap(),
        [fired("run-1", 2)]
    );
    assert!(
        store
            .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 8)
            .await
            .unwrap(),
        "the lease survived"
    );
}

/// An update delivered with `deliver_durable` is in the database once the call returned: a
/// store opened again has its record (requested) and the run's inbox holds it; delivering it
/// again is a duplicate.
pub async fn a_durably_delivered_update_survives_reopen(db: Arc<dyn StoreUnderTest>) {
    let store = db.open().await;
    start(&*store, "wf-1", "run-1", T0).await;
    run_task(&*store, T0, |_, _| {}).await;
    let out = store
        .deliver_durable(Delivery::new("wf-1", update("u-1", "grow"), T0 + 1))
        .await
        .unwrap();
    assert_eq!(
        out,
        DeliverOutcome::Enqueued {
            run_id: "run-1".into()
        }
    );
    drop(store);

    let store = db.open().await;
    let record = store.get_update("wf-1", "u-1").await.unwrap().unwrap();
    assert_eq!(record.state, UpdateState::Requested);
    let task = lease_one(&*store, "w", T0 + 2).await;
    assert!(
        matches!(&task.messages[..], [m] if matches!(&m.message, Message::Update { update_id, .. } if update_id == "u-1"))
    );
    let dup = store
        .deliver_durable(Delivery::new("wf-1", update("u-1", "grow"), T0 + 3))
        .await
        .unwrap();
    assert!(matches!(dup, DeliverOutcome::DuplicateUpdate(r) if r.update_id == "u-1"));
}

/// A database opened again holds exactly the committed state: failed requests in between
/// successful ones leave no trace.
pub async fn a_reopened_file_holds_exactly_the_committed_state(db: Arc<dyn StoreUnderTest>) {
    let store = db.open().await;
    populate(&*store).await;
    let err = store
        .start_run(start_request("wf-1", "run-x", T0 + 10))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyStarted { .. }));
    let err = store
        .deliver(Delivery::new("wf-2", signal("late", None), T0 + 10))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::RunFinished { .. }));
    let committed = snapshot(&*store).await;
    drop(store);
    assert_eq!(snapshot(&*db.open().await).await, committed);
}

/// Two stores on one database see each other's writes, dedupe across each other, and never
/// lease one run twice.
pub async fn two_stores_on_one_file_see_each_others_writes(db: Arc<dyn StoreUnderTest>) {
    let a: Arc<dyn Store> = db.open().await;
    let b: Arc<dyn Store> = db.open().await;
    start(&*a, "wf-1", "run-1", T0).await;
    assert_eq!(
        b.get_run("wf-1", None).await.unwrap().unwrap().run_id,
        "run-1"
    );

    let mut handles = Vec::new();
    for i in 0..20 {
        let store = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        handles.push(tokio::spawn(async move {
            store
                .deliver(Delivery::new(
                    "wf-1",
                    signal("s", Some(&format!("id-{}", i / 2))),
                    T0,
                ))
                .await
        }));
    }
    let mut enqueued = 0;
    for h in handles {
        if let DeliverOutcome::Enqueued { .. } = h.await.unwrap().unwrap() {
            enqueued += 1;
        }
    }
    assert_eq!(
        enqueued, 10,
        "each signal id once, whichever store wrote it"
    );
    let task = lease_one(&*b, "w", T0).await;
    assert_eq!(task.messages.len(), 10);
    assert!(
        a.poll_workflow_tasks_any("w2", T0, 1000, 10)
            .await
            .unwrap()
            .is_empty(),
        "leased via b"
    );
}
