//! Priority and fairness: a poll leases the waiting attempts of a lower priority level first,
//! and within a level takes turns between fairness keys by weight, whatever their backlogs; a
//! key that arrives behind a backlog is served at once, not after it; retries keep their key.

use super::fixtures::*;
use crate::data::activity::{ActivityFailure, ActivityResolution};
use crate::store::{ActivityOptions, ActivityTask, Store};
use std::sync::Arc;
use std::time::Duration;

/// Options of fairness key `key` (weight `weight`) and priority `priority`.
fn options(key: &str, weight: f64, priority: Option<u8>) -> ActivityOptions {
    ActivityOptions {
        fairness_key: Some(key.to_string()),
        fairness_weight: Some(weight),
        priority,
        start_to_close: Some(Duration::from_secs(600)),
        ..Default::default()
    }
}

/// Starts run `run_id` and schedules `n` activities with `options` in its first task.
async fn schedule(store: &dyn Store, run_id: &str, n: u32, options: ActivityOptions) {
    start(store, &format!("wf-{run_id}"), run_id, T0).await;
    run_task(store, T0, |_, c| {
        c.new_activities = (1..=n).map(|seq| activity(seq, options.clone())).collect()
    })
    .await;
}

/// Leases `n` attempts one poll at a time, as engines with one free slot each would.
async fn lease(store: &dyn Store, n: usize) -> Vec<ActivityTask> {
    let mut leased = Vec::new();
    for _ in 0..n {
        leased.extend(store.poll_activity_tasks_any("e", T0, 1).await.unwrap());
    }
    leased
}

/// How many of `tasks` have fairness key `key`.
fn of_key(tasks: &[ActivityTask], key: &str) -> usize {
    let key = Some(key);
    tasks
        .iter()
        .filter(|t| t.options.fairness_key.as_deref() == key)
        .count()
}

/// Attempts of priority 1 are leased before those of 5 scheduled earlier, and those of the
/// default level 3 between them, whatever their fairness keys.
pub async fn polls_lease_lower_priority_levels_first(store: Arc<dyn Store>) {
    schedule(&*store, "run-late", 4, options("a", 1.0, Some(5))).await;
    schedule(&*store, "run-mid", 2, options("b", 1.0, None)).await;
    schedule(&*store, "run-soon", 3, options("c", 1.0, Some(1))).await;
    let leased = store.poll_activity_tasks_any("e", T0, 100).await.unwrap();
    let runs: Vec<&str> = leased.iter().map(|t| t.run_id.as_str()).collect();
    let mut expected = vec!["run-soon"; 3];
    expected.extend(["run-mid"; 2]);
    expected.extend(["run-late"; 4]);
    assert_eq!(runs, expected);
}

/// A key with 300 attempts waiting, half of them leased already, and a key that then
/// schedules 3: the newcomer's 3 go within its next 6 turns, one for one with the backlog's,
/// not after the backlog's 150 left.
pub async fn keys_of_equal_weight_take_turns_whatever_their_backlogs(store: Arc<dyn Store>) {
    schedule(&*store, "run-big", 300, options("big", 1.0, None)).await;
    let first = lease(&*store, 150).await;
    assert_eq!(of_key(&first, "big"), 150);
    schedule(&*store, "run-small", 3, options("small", 1.0, None)).await;
    let next = lease(&*store, 6).await;
    assert_eq!(
        (of_key(&next, "small"), of_key(&next, "big")),
        (3, 3),
        "{:?}",
        next.iter().map(|t| (&t.run_id, t.seq)).collect::<Vec<_>>()
    );
    // The backlog's own order is kept: its attempts go by seq.
    let big: Vec<u32> = first
        .iter()
        .chain(&next)
        .filter(|t| t.run_id == "run-big")
        .map(|t| t.seq)
        .collect();
    assert_eq!(big, (1..=153).collect::<Vec<_>>());
}

/// Two keys waiting at once, of weights 2 and 1, share 30 leases about 20 to 10.
pub async fn keys_share_turns_by_weight(store: Arc<dyn Store>) {
    schedule(&*store, "run-heavy", 100, options("heavy", 2.0, None)).await;
    schedule(&*store, "run-light", 100, options("light", 1.0, None)).await;
    let leased = lease(&*store, 30).await;
    let (heavy, light) = (of_key(&leased, "heavy"), of_key(&leased, "light"));
    assert!(
        (19..=21).contains(&heavy) && heavy + light == 30,
        "weights 2:1 leased {heavy}:{light}"
    );
}

/// Attempts without a fairness key share the key `""`: with no keys, first come, first
/// served; a retried attempt keeps its key and waits its key's next turn.
pub async fn unkeyed_attempts_go_in_order_and_retries_keep_their_key(store: Arc<dyn Store>) {
    start(&*store, "wf-plain", "run-plain", T0).await;
    run_task(&*store, T0, |_, c| {
        c.new_activities = (1..=5)
            .map(|seq| activity(seq, ActivityOptions::default()))
            .collect()
    })
    .await;
    let leased = lease(&*store, 2).await;
    let seqs: Vec<u32> = leased.iter().map(|t| t.seq).collect();
    assert_eq!(seqs, [1, 2]);
    let failure = ActivityFailure {
        kind: "retryable".into(),
        message: "again".into(),
        non_retryable: false,
    };
    assert!(store
        .retry_activity(leased[0].current_attempt(), T0, failure, T0)
        .await
        .unwrap());
    let rest = lease(&*store, 4).await;
    let seqs: Vec<(u32, u32)> = rest.iter().map(|t| (t.seq, t.attempt)).collect();
    assert_eq!(
        seqs,
        [(3, 1), (4, 1), (5, 1), (1, 2)],
        "the retry waits its turn"
    );
    let done = ActivityResolution::Completed {
        result: payload(()),
        attempts: 2,
    };
    let retried = &rest[3];
    assert!(store
        .resolve_activity(retried.current_attempt(), done, T0)
        .await
        .unwrap());
}
