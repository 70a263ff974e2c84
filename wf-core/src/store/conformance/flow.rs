//! Flow limits: polls lease no more attempts than a concurrency limit has room for (counted
//! from live leases, a dead engine's freed at its liveness expiry), no more than a rate
//! limit's bucket holds (refilled at its rate, up to its burst), and attempts no full limit
//! covers go past those held back; limits are set, listed and removed.

use super::fixtures::*;
use crate::data::activity::ActivityResolution;
use crate::data::flow::{FlowKind, FlowLimit, FlowScope};
use crate::store::{ActivityOptions, ActivityPoll, EngineRecord, Store, TaskCommit};
use std::sync::Arc;
use std::time::Duration;

/// Starts `runs` runs, each scheduling one `charge` activity, those whose index `keyed`
/// selects with flow key `k`.
async fn schedule(store: &dyn Store, runs: usize, keyed: impl Fn(usize) -> bool) {
    for i in 0..runs {
        start(store, &format!("wf-{i}"), &format!("run-{i}"), T0).await;
        let options = ActivityOptions {
            flow_key: keyed(i).then(|| "k".to_string()),
            start_to_close: Some(Duration::from_secs(600)),
            ..Default::default()
        };
        run_task(store, T0, |_, c| {
            c.new_activities = vec![activity(1, options)]
        })
        .await;
    }
}

fn completed() -> ActivityResolution {
    ActivityResolution::Completed {
        result: payload(()),
        attempts: 1,
    }
}

/// A concurrency limit of 2 on key `k` leases two of the three keyed attempts; the unkeyed
/// one goes past; a resolved attempt frees its slot.
pub async fn a_concurrency_limit_leases_no_more_than_its_room(store: Arc<dyn Store>) {
    let limit = FlowLimit::concurrency(FlowScope::key("k"), 2);
    store.admin().set_flow_limit(limit, T0).await.unwrap();
    schedule(&*store, 4, |i| i < 3).await;
    let leased = store.poll_activity_tasks_any("e-1", T0, 10).await.unwrap();
    let keyed = leased
        .iter()
        .filter(|t| t.options.flow_key.is_some())
        .count();
    assert_eq!((leased.len(), keyed), (3, 2), "{leased:?}");
    assert!(store
        .poll_activity_tasks_any("e-2", T0, 10)
        .await
        .unwrap()
        .is_empty());
    let done = leased
        .iter()
        .find(|t| t.options.flow_key.is_some())
        .unwrap();
    store
        .resolve_activity(done.current_attempt(), completed(), T0 + 10)
        .await
        .unwrap();
    let next = store
        .poll_activity_tasks_any("e-2", T0 + 10, 10)
        .await
        .unwrap();
    assert_eq!(
        next.len(),
        1,
        "the freed slot takes the third keyed attempt"
    );
}

/// The attempts of an engine whose liveness lease expired stop counting at its expiry.
pub async fn a_dead_engines_attempts_free_their_slots_at_its_liveness_expiry(
    store: Arc<dyn Store>,
) {
    let dead = EngineRecord {
        engine_id: "dead".into(),
        wake_address: None,
        task_queue: "default".into(),
        started_ms: T0,
        lease_until_ms: T0 + 1_000,
    };
    store.admin().register_engine(dead).await.unwrap();
    let limit = FlowLimit::concurrency(FlowScope::activity("charge"), 1);
    store.admin().set_flow_limit(limit, T0).await.unwrap();
    schedule(&*store, 2, |_| false).await;
    assert_eq!(
        store
            .poll_activity_tasks_any("dead", T0, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    let during = store
        .poll_activity_tasks_any("live", T0 + 500, 10)
        .await
        .unwrap();
    assert!(
        during.is_empty(),
        "the dead engine's lease still counts: {during:?}"
    );
    let after = store
        .poll_activity_tasks_any("live", T0 + 1_000, 10)
        .await
        .unwrap();
    assert_eq!(after.len(), 1, "its slot is free at its liveness expiry");
}

/// A rate limit of 10/s with a burst of 2 leases 2 at once, then one per 100 ms, and never
/// more than the burst after a quiet spell; set again, it keeps its bucket.
pub async fn a_rate_limit_refills_at_its_rate_up_to_its_burst(store: Arc<dyn Store>) {
    let limit =
        FlowLimit::rate(FlowScope::task_queue("default"), 10, Duration::from_secs(1)).burst(2);
    store
        .admin()
        .set_flow_limit(limit.clone(), T0)
        .await
        .unwrap();
    schedule(&*store, 8, |_| false).await;
    let poll = |at: i64| {
        let store = store.clone();
        async move {
            store
                .poll_activity_tasks_any("e", at, 10)
                .await
                .unwrap()
                .len()
        }
    };
    assert_eq!(poll(T0).await, 2, "the burst");
    assert_eq!(poll(T0).await, 0);
    assert_eq!(poll(T0 + 150).await, 1, "1.5 tokens refilled");
    assert_eq!(
        poll(T0 + 200).await,
        1,
        "the half token left, and half of one more"
    );
    // Set again: no fresh burst.
    store.admin().set_flow_limit(limit, T0 + 200).await.unwrap();
    assert_eq!(poll(T0 + 200).await, 0);
    assert_eq!(poll(T0 + 10_000).await, 2, "never more than the burst");
}

/// Limits are listed by scope and kind, replaced per scope and kind, and removed.
pub async fn flow_limits_are_set_listed_and_removed(store: Arc<dyn Store>) {
    let admin = store.admin();
    assert!(admin.flow_limits().await.unwrap().is_empty());
    let rate = FlowLimit::rate(FlowScope::key("k"), 5, Duration::from_millis(1_500)).burst(3);
    admin
        .set_flow_limit(FlowLimit::concurrency(FlowScope::key("k"), 1), T0)
        .await
        .unwrap();
    admin.set_flow_limit(rate.clone(), T0).await.unwrap();
    let four = FlowLimit::concurrency(FlowScope::key("k"), 4);
    admin.set_flow_limit(four.clone(), T0).await.unwrap();
    let queue = FlowLimit::concurrency(FlowScope::task_queue("q"), 2);
    admin.set_flow_limit(queue.clone(), T0).await.unwrap();
    assert_eq!(
        admin.flow_limits().await.unwrap(),
        [four, rate, queue.clone()]
    );
    assert!(admin
        .remove_flow_limit(FlowScope::key("k"), FlowKind::Concurrency)
        .await
        .unwrap());
    assert!(admin
        .remove_flow_limit(FlowScope::key("k"), FlowKind::Rate)
        .await
        .unwrap());
    assert!(!admin
        .remove_flow_limit(FlowScope::key("k"), FlowKind::Rate)
        .await
        .unwrap());
    assert_eq!(admin.flow_limits().await.unwrap(), [queue]);
    let bad = FlowLimit::rate(FlowScope::key("k"), 5, Duration::ZERO);
    assert!(admin.set_flow_limit(bad, T0).await.is_err());
}

/// Under a concurrency limit of 1 on activity `charge`, a run's first task commit that
/// schedules a `charge`.
async fn limited_commit(store: &dyn Store) -> TaskCommit {
    let limit = FlowLimit::concurrency(FlowScope::activity("charge"), 1);
    store.admin().set_flow_limit(limit, T0).await.unwrap();
    start(store, "wf-1", "run-1", T0).await;
    let task = lease_one(store, "w", T0).await;
    let mut c = commit_for(&task, "w", T0);
    c.new_activities
        .push(activity(1, ActivityOptions::default()));
    c
}

/// A commit that would lease, at once, an activity a flow limit covers is refused and changes
/// nothing, whichever kind of scope covers it; limits that cover none of its activities let
/// it through.
pub async fn a_commit_leasing_a_limited_activity_at_once_is_refused(store: Arc<dyn Store>) {
    let mut c = limited_commit(&*store).await;
    c.lease_activities_to = Some("w".into());
    let refused = store.commit_workflow_task(c.clone()).await.unwrap_err();
    assert!(
        matches!(&refused, crate::store::StoreError::Conflict { reason, .. }
            if reason == crate::store::EAGER_LEASE_REFUSED),
        "{refused:?}"
    );
    assert!(store.pending_activities("run-1").await.unwrap().is_empty());
    // Each kind of scope refuses what it covers.
    let admin = store.admin();
    admin
        .remove_flow_limit(FlowScope::activity("charge"), FlowKind::Concurrency)
        .await
        .unwrap();
    let keyed = ActivityOptions {
        flow_key: Some("k".into()),
        ..ActivityOptions::default()
    };
    let mut keyed_commit = c.clone();
    keyed_commit.new_activities = vec![activity(1, keyed)];
    let queue = crate::data::run::DEFAULT_TASK_QUEUE;
    for scope in [FlowScope::key("k"), FlowScope::task_queue(queue)] {
        admin
            .set_flow_limit(FlowLimit::concurrency(scope.clone(), 1), T0)
            .await
            .unwrap();
        let refused = store.commit_workflow_task(keyed_commit.clone()).await;
        assert!(
            matches!(&refused, Err(crate::store::StoreError::Conflict { reason, .. })
                if reason == crate::store::EAGER_LEASE_REFUSED),
            "a limit of {scope} let its activity through: {refused:?}"
        );
        admin
            .remove_flow_limit(scope, FlowKind::Concurrency)
            .await
            .unwrap();
    }
    // Limits of other names cover nothing here: the commit goes through, leased at once.
    for scope in [
        FlowScope::key("other"),
        FlowScope::activity("other"),
        FlowScope::task_queue("other"),
    ] {
        let limit = FlowLimit::concurrency(scope, 1);
        admin.set_flow_limit(limit, T0).await.unwrap();
    }
    store.commit_workflow_task(keyed_commit).await.unwrap();
    let pending = store.pending_activities("run-1").await.unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert!(pending[0].lease_until_ms.is_some(), "{pending:?}");
}

/// Without the lease, a commit scheduling a limited activity goes through, and polls lease
/// the activity under the limit.
pub async fn a_limited_activity_is_leased_by_a_poll(store: Arc<dyn Store>) {
    let c = limited_commit(&*store).await;
    store.commit_workflow_task(c).await.unwrap();
    assert_eq!(
        store
            .poll_activity_tasks_any("w", T0, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

/// A commit that leases its activities at once as the limits admit (`lease_admitted`) leases
/// those with room, counted with the attempts already running and spending a rate limit's
/// tokens as a poll would, and leaves the others for a poll; it says which it leased.
pub async fn a_commit_leases_at_once_what_the_limits_admit(store: Arc<dyn Store>) {
    let mut c = limited_commit(&*store).await;
    let rate = FlowLimit::rate(FlowScope::key("k"), 1, Duration::from_secs(3600));
    store.admin().set_flow_limit(rate, T0).await.unwrap();
    let keyed = ActivityOptions {
        flow_key: Some("k".into()),
        ..ActivityOptions::default()
    };
    let free = ActivityOptions::default();
    let mut other = activity(4, free);
    other.name = "refund".into();
    c.new_activities = vec![
        activity(1, ActivityOptions::default()),
        activity(2, ActivityOptions::default()),
        activity(3, keyed.clone()),
        other,
    ];
    let mut fifth = activity(5, keyed);
    fifth.name = "refund".into();
    c.new_activities.push(fifth);
    c.lease_activities_to = Some("w".into());
    c.lease_admitted = true;
    let done = store.commit_workflow_task_leasing(c).await.unwrap();
    // `charge` 1 takes the one slot of `charge`, so 2 and 3 (a `charge` too) wait; `refund` 4
    // no limit covers; `refund` 5 takes the one token of key `k`.
    assert_eq!(done.leased, [1, 4, 5], "{done:?}");
    assert!(done.held_back, "two attempts wait for `charge`: {done:?}");
    let pending = store.pending_activities("run-1").await.unwrap();
    let leased: Vec<u32> = pending
        .iter()
        .filter(|a| a.lease_until_ms.is_some())
        .map(|a| a.seq)
        .collect();
    assert_eq!(leased, [1, 4, 5]);
    // The slot and the token are spent: a poll now leases nothing.
    assert!(store
        .poll_activity_tasks_any("w2", T0 + 1, 10)
        .await
        .unwrap()
        .is_empty());
}

/// While an attempt waits in the store, a commit leasing at once as the limits admit leases
/// none that a limit covers, room or not (the waiting go first); those no limit covers it
/// leases.
pub async fn a_commit_leases_nothing_covered_at_once_while_attempts_wait(store: Arc<dyn Store>) {
    let limit = FlowLimit::concurrency(FlowScope::activity("charge"), 5);
    store.admin().set_flow_limit(limit, T0).await.unwrap();
    start(&*store, "wf-1", "run-1", T0).await;
    run_task(&*store, T0, |_, c| {
        c.new_activities = vec![activity(1, ActivityOptions::default())]
    })
    .await;
    start(&*store, "wf-2", "run-2", T0).await;
    let task = lease_one(&*store, "w", T0).await;
    assert_eq!(task.run.run_id, "run-2");
    let mut c = commit_for(&task, "w", T0);
    let mut refund = activity(2, ActivityOptions::default());
    refund.name = "refund".into();
    c.new_activities = vec![activity(1, ActivityOptions::default()), refund];
    c.lease_activities_to = Some("w".into());
    c.lease_admitted = true;
    let done = store.commit_workflow_task_leasing(c).await.unwrap();
    assert_eq!(done.leased, [2], "{done:?}");
    assert!(done.held_back, "{done:?}");
    // The waiting one is leased first, then the new one.
    let polled = store.poll_activity_tasks_any("w", T0 + 1, 1).await.unwrap();
    assert_eq!(polled[0].run_id, "run-1", "{polled:?}");
}

/// A poll and a commit say whether the limits may be holding attempts back: a poll that a
/// full limit refused, or that left one full, says so; one that left every limit with room does
/// not, nor does a commit whose activities leave their limit room; nor anything without limits.
pub async fn polls_and_commits_say_whether_limits_hold_attempts_back(store: Arc<dyn Store>) {
    let poll = |max| ActivityPoll {
        worker_id: "w".into(),
        now_ms: T0,
        max,
        names: None,
        task_queues: None,
    };
    schedule(&*store, 1, |_| true).await;
    let free = store.poll_activity_leases(poll(10)).await.unwrap();
    assert_eq!((free.tasks.len(), free.held_back), (1, false), "{free:?}");
    let limit = FlowLimit::concurrency(FlowScope::key("k"), 2);
    store.admin().set_flow_limit(limit, T0).await.unwrap();
    // One running (the first), three more keyed: one leased, two refused.
    for i in 1..4 {
        start(&*store, &format!("wf-k{i}"), &format!("run-k{i}"), T0).await;
        let options = ActivityOptions {
            flow_key: Some("k".to_string()),
            start_to_close: Some(Duration::from_secs(600)),
            ..Default::default()
        };
        run_task(&*store, T0, |_, c| {
            c.new_activities = vec![activity(1, options)]
        })
        .await;
    }
    let full = store.poll_activity_leases(poll(10)).await.unwrap();
    assert_eq!((full.tasks.len(), full.held_back), (1, true), "{full:?}");
    for task in free.tasks.iter().chain(&full.tasks) {
        let done = store
            .resolve_activity(task.current_attempt(), completed(), T0 + 10)
            .await
            .unwrap();
        assert!(done);
    }
    // Two waiting, two slots: both leased, the limit full again.
    let refilled = store.poll_activity_leases(poll(10)).await.unwrap();
    assert_eq!((refilled.tasks.len(), refilled.held_back), (2, true));
    for task in &refilled.tasks {
        let at = task.current_attempt();
        assert!(store
            .resolve_activity(at, completed(), T0 + 20)
            .await
            .unwrap());
    }
    let empty = store.poll_activity_leases(poll(10)).await.unwrap();
    assert_eq!(
        (empty.tasks.len(), empty.held_back),
        (0, false),
        "{empty:?}"
    );
    // A commit whose one keyed activity leaves the limit a slot: not held back.
    start(&*store, "wf-c", "run-c", T0).await;
    let task = lease_one(&*store, "w", T0).await;
    let mut c = commit_for(&task, "w", T0);
    let keyed = ActivityOptions {
        flow_key: Some("k".into()),
        ..ActivityOptions::default()
    };
    c.new_activities = vec![activity(7, keyed)];
    c.lease_activities_to = Some("w".into());
    c.lease_admitted = true;
    let done = store.commit_workflow_task_leasing(c).await.unwrap();
    assert_eq!((done.leased.as_slice(), done.held_back), (&[7][..], false));
}

/// The usage of each limit: the attempts it covers running (a live lease) and waiting (due,
/// not leased), and a rate limit's whole tokens; a dead engine's attempts count as neither.
pub async fn flow_usage_counts_running_and_waiting_attempts(store: Arc<dyn Store>) {
    let admin = store.admin();
    let limit = FlowLimit::concurrency(FlowScope::key("k"), 1);
    admin.set_flow_limit(limit.clone(), T0).await.unwrap();
    let rate = FlowLimit::rate(FlowScope::activity("charge"), 5, Duration::from_secs(60));
    admin.set_flow_limit(rate.clone(), T0).await.unwrap();
    schedule(&*store, 4, |i| i < 3).await;
    let leased = store.poll_activity_tasks_any("e-1", T0, 10).await.unwrap();
    assert_eq!(leased.len(), 2, "one keyed, one not: {leased:?}");
    let usage = admin.flow_usage(T0).await.unwrap();
    let of = |l: &FlowLimit| {
        let u = usage.iter().find(|u| &u.limit == l).unwrap();
        (u.running, u.waiting, u.tokens)
    };
    assert_eq!(of(&limit), (1, 2, None), "{usage:?}");
    // Both leased attempts are `charge`s, and spent 2 of the rate's 5 tokens.
    assert_eq!(of(&rate), (2, 2, Some(3)), "{usage:?}");
}

/// A poll whose clock reading is older than the rate limit's last refill (it waited on the
/// limit while another process polled) spends what is there but never moves the refill back
/// in time: the interval between is not refilled twice.
pub async fn a_late_poll_never_refills_a_rate_limit_twice(store: Arc<dyn Store>) {
    let rate = FlowLimit::rate(FlowScope::key("k"), 1, Duration::from_secs(1)).burst(2);
    store.admin().set_flow_limit(rate, T0).await.unwrap();
    schedule(&*store, 4, |_| true).await;
    let poll = |at: i64| store.poll_activity_tasks_any("e-1", at, 1);
    assert_eq!(
        poll(T0 + 1_000).await.unwrap().len(),
        1,
        "one of the burst's two"
    );
    assert_eq!(
        poll(T0 + 500).await.unwrap().len(),
        1,
        "the other, by a late clock"
    );
    assert!(
        poll(T0 + 1_500).await.unwrap().is_empty(),
        "half a token since the last refill (at T0 + 1,000), not a whole one since T0 + 500"
    );
    assert_eq!(poll(T0 + 2_000).await.unwrap().len(), 1);
}
