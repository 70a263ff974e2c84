//! Durable timers: due order, firing into the inbox, cancellation, wake-ups.

use super::fixtures::*;
use crate::store::{Delivery, Message, Store};
use std::sync::Arc;

/// Due timers fire in order into the inbox and wake the run.
pub async fn due_timers_fire_in_order_into_the_inbox_and_wake_the_run(store: Arc<dyn Store>) {
    start(&*store, "wf-a", "run-a", T0).await;
    run_task(&*store, T0, |_, c| {
        c.new_timers = vec![timer(1, T0 + 100), timer(2, T0 + 50)]
    })
    .await;
    start(&*store, "wf-b", "run-b", T0).await;
    run_task(&*store, T0, |_, c| c.new_timers = vec![timer(1, T0 + 50)]).await;

    assert!(store.fire_due_timers(T0 + 49, 10).await.unwrap().is_empty());
    let due = store.fire_due_timers(T0 + 100, 2).await.unwrap();
    assert_eq!(due, [fired("run-a", 2), fired("run-b", 1)]);
    assert_eq!(
        store.fire_due_timers(T0 + 100, 10).await.unwrap(),
        [fired("run-a", 1)]
    );
    assert!(
        store
            .fire_due_timers(T0 + 1_000_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "fired once"
    );

    let tasks = store
        .poll_workflow_tasks_any("w", T0 + 100, 1000, 10)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 2);
    for task in tasks {
        let seqs: Vec<Message> = task.messages.into_iter().map(|m| m.message).collect();
        let want = match task.run.run_id.as_str() {
            "run-a" => vec![
                Message::TimerFired { seq: 2 },
                Message::TimerFired { seq: 1 },
            ],
            _ => vec![Message::TimerFired { seq: 1 }],
        };
        assert_eq!(seqs, want, "inbox of {}", task.run.run_id);
    }
}

/// A cancelled timer never fires.
pub async fn a_cancelled_timer_never_fires(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    run_task(&*store, T0, |_, c| {
        c.new_timers = vec![timer(1, T0 + 100), timer(2, T0 + 200)]
    })
    .await;
    store
        .deliver(Delivery::new("wf-1", signal("hurry", None), T0 + 10))
        .await
        .unwrap();
    run_task(&*store, T0 + 10, |_, c| {
        c.cancel_timers = vec![1];
        // A timer started and cancelled in the same task never exists.
        c.new_timers = vec![timer(3, T0 + 50)];
        c.cancel_timers.push(3);
    })
    .await;
    assert_eq!(store.next_wakeup(T0 + 10).await.unwrap(), Some(T0 + 200));
    let due = store.fire_due_timers(T0 + 1000, 10).await.unwrap();
    assert_eq!(due, [fired("run-1", 2)]);
}

/// Next wakeup is the earliest future due time.
pub async fn next_wakeup_is_the_earliest_future_due_time(store: Arc<dyn Store>) {
    assert_eq!(
        store.next_wakeup(T0).await.unwrap(),
        None,
        "an empty store has nothing due"
    );
    start(&*store, "wf-1", "run-1", T0 + 500).await;
    assert_eq!(
        store.next_wakeup(T0).await.unwrap(),
        Some(T0 + 500),
        "a run ready later"
    );
    assert_eq!(
        store.next_wakeup(T0 + 500).await.unwrap(),
        None,
        "due now is not in the future"
    );
    run_task(&*store, T0 + 500, |_, c| {
        c.new_timers = vec![timer(1, T0 + 900)]
    })
    .await;
    assert_eq!(store.next_wakeup(T0 + 500).await.unwrap(), Some(T0 + 900));
    assert_eq!(store.next_wakeup(T0 + 900).await.unwrap(), None);
}
