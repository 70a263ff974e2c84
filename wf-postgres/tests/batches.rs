//! Group commits with queued statements (write-behind): a request whose queued write fails
//! once sent fails alone, and the requests batched with it keep their changes. Skipped
//! (loudly) without `WF_POSTGRES_URL`.

use wf_core::store::conformance::{event, start, start_request, timer, PollAny, T0};
use wf_core::store::{Delivery, LeaseRequest, ResolvedAttempt, RunStatus, Store, StoreError};
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

/// A group commit runs without savepoints until a request needs one: requests whose checks
/// fail before they write are answered and the batch goes on; a request that fails after its
/// writes were sent makes the batch run again with savepoints. Either way each caller gets its
/// own outcome, and only the failed requests' changes are missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_failing_before_and_after_their_writes_fail_alone_in_a_group_commit() {
    use std::future::Future;
    use std::pin::Pin;
    use wf_core::store::conformance::{commit_for, signal};
    use wf_core::store::EventKind;

    let Some(db) = TestSchema::new("batched_checks") else {
        return;
    };
    let store = db.open().await;
    const RUNS: usize = 40;
    for i in 0..RUNS {
        start(&store, &format!("wf-{i}"), &format!("run-{i}"), T0).await;
    }
    let mut tasks = Vec::new();
    for _ in 0..RUNS / 2 {
        let mut polled = store
            .poll_workflow_tasks_any("w", T0 + 1, 10_000, 1)
            .await
            .unwrap();
        tasks.push(polled.pop().expect("a ready run"));
    }
    type Call<'a> = Pin<Box<dyn Future<Output = (String, Result<(), StoreError>)> + Send + 'a>>;
    let mut calls: Vec<Call<'_>> = Vec::new();
    let mut bad_runs = Vec::new();
    let mut good_runs = Vec::new();
    for (k, task) in tasks.iter().enumerate() {
        let mut commit = commit_for(task, "w", T0 + 2);
        let run_id = task.run.run_id.clone();
        if k % 2 == 0 {
            // A timer is queued, then resolving an activity that is not pending fails the
            // commit after its writes went out.
            commit.events.push(event(
                T0 + 2,
                EventKind::TimerStarted {
                    seq: 5,
                    fire_at_ms: T0 + 10,
                },
            ));
            commit.new_timers = vec![timer(5, T0 + 10)];
            commit.resolve_activities = vec![ResolvedAttempt { seq: 9, attempt: 1 }];
            bad_runs.push(run_id.clone());
        } else {
            good_runs.push(run_id.clone());
        }
        let store = &store;
        calls.push(Box::pin(async move {
            let r = store.commit_workflow_task(commit).await.map(|_| ());
            (run_id, r)
        }));
    }
    // Signals to the runs no task leased, and to workflows that do not exist (refused on what
    // their check read: nothing written).
    for i in RUNS / 2..RUNS {
        let store = &store;
        calls.push(Box::pin(async move {
            let wf = format!("wf-{i}");
            let r = store
                .deliver(Delivery::new(&wf, signal("go", None), T0 + 2))
                .await
                .map(|_| ());
            (wf, r)
        }));
        calls.push(Box::pin(async move {
            let wf = format!("missing-{i}");
            let r = store
                .deliver(Delivery::new(&wf, signal("go", None), T0 + 2))
                .await
                .map(|_| ());
            (wf, r)
        }));
    }
    for (who, outcome) in futures_util::future::join_all(calls).await {
        if bad_runs.contains(&who) {
            let err = outcome.expect_err("a commit resolving no pending activity fails");
            assert!(
                matches!(&err, StoreError::Conflict { run_id, reason }
                    if *run_id == who && reason == "activity #9 attempt 1 is no longer pending"),
                "{who}: {err:?}"
            );
        } else if who.starts_with("missing-") {
            let err = outcome.expect_err("a signal to no workflow fails");
            assert!(matches!(err, StoreError::NotFound { .. }), "{who}: {err}");
        } else {
            outcome.unwrap_or_else(|e| panic!("{who} failed: {e}"));
        }
    }
    for run_id in &bad_runs {
        assert_eq!(
            store.read_history(run_id, 1).await.unwrap().len(),
            1,
            "the failed commit of {run_id} left events"
        );
    }
    for run_id in &good_runs {
        assert_eq!(store.read_history(run_id, 1).await.unwrap().len(), 2);
    }
    // No failed commit's timer is left, and every delivered signal waits in its inbox.
    assert!(store
        .fire_due_timers(T0 + 10, 100)
        .await
        .unwrap()
        .is_empty());
    let ready = store
        .poll_workflow_tasks_any("w2", T0 + 3, 10_000, 100)
        .await
        .unwrap();
    assert_eq!(ready.len(), RUNS / 2, "the signalled runs, ready");
    for task in ready {
        assert_eq!(task.messages.len(), 1, "{}'s inbox", task.run.run_id);
    }
}

/// A commit without a lease whose worker says what the run's row is takes it for the row
/// (no read: one round trip) under a check that fails the transaction when the row moved on,
/// the run got a lease or a message; the writer then runs it again with a read, so that the
/// caller gets the answer a read would have given, and its group commit's other requests
/// stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_that_assume_their_runs_row_are_checked_in_their_transaction() {
    use wf_core::store::conformance::{commit_for, lease_one, signal};
    use wf_core::store::WorkflowTask;

    let Some(db) = TestSchema::new("assumed_rows") else {
        return;
    };
    let store = db.open().await;
    // wf-ok: as assumed; wf-msg: a message waits; wf-moved: the assumed row is stale (the
    // history moved on); wf-leased: another worker holds the lease.
    for wf in ["wf-ok", "wf-msg", "wf-moved", "wf-leased"] {
        start(&store, wf, &format!("run-{wf}"), T0).await;
    }
    let assumed = |record: wf_core::store::RunRecord| {
        let task = WorkflowTask {
            run: record.clone(),
            messages: Vec::new(),
        };
        let mut commit = commit_for(&task, "me", T0 + 5);
        commit.without_lease = true;
        commit.assumed = Some(Box::new(record));
        commit
    };
    let row = |wf: &'static str| {
        let store = &store;
        async move { store.get_run(wf, None).await.unwrap().unwrap() }
    };
    let ok = assumed(row("wf-ok").await);
    let msg = assumed(row("wf-msg").await);
    let moved = assumed(row("wf-moved").await);
    let leased = assumed(row("wf-leased").await);
    store
        .deliver(Delivery::new("wf-msg", signal("go", None), T0 + 1))
        .await
        .unwrap();
    // wf-moved: a task of another worker commits first; wf-leased: another worker leases it.
    let lease = |run_id: &'static str| {
        let store = &store;
        async move {
            store
                .lease_run(LeaseRequest {
                    run_id: String::from(run_id),
                    worker_id: String::from("other"),
                    now_ms: T0 + 2,
                    lease_ms: 10_000,
                    build_id: None,
                })
                .await
                .unwrap()
                .expect("a free run")
        }
    };
    let task = lease("run-wf-moved").await;
    store
        .commit_workflow_task(commit_for(&task, "other", T0 + 3))
        .await
        .unwrap();
    lease("run-wf-leased").await;
    // Alone (a wrong assumption is then caught by the check alone), and two in one group
    // commit (the group runs again; the request that was right stands).
    let msg = store.commit_workflow_task(msg).await;
    let leased = store.commit_workflow_task(leased).await;
    let (ok, moved) = tokio::join!(
        store.commit_workflow_task(ok),
        store.commit_workflow_task(moved),
    );
    let ok = ok.expect("the commit whose row was as assumed");
    assert_eq!(ok.next_event_id, 3);
    assert_eq!(ok, store.get_run("wf-ok", None).await.unwrap().unwrap());
    assert!(
        matches!(msg, Err(StoreError::NewMessages { .. })),
        "{msg:?}"
    );
    assert!(
        matches!(&moved, Err(StoreError::Conflict { reason, .. }) if reason.contains("next event id")),
        "{moved:?}"
    );
    assert!(
        matches!(&leased, Err(StoreError::Conflict { reason, .. }) if reason.contains("lease")),
        "{leased:?}"
    );
    // Nothing of the refused commits was written.
    for (wf, events) in [("wf-msg", 1), ("wf-moved", 2), ("wf-leased", 1)] {
        let run = store.get_run(wf, None).await.unwrap().unwrap();
        assert_eq!(
            store.read_history(&run.run_id, 1).await.unwrap().len(),
            events,
            "{wf}"
        );
    }
    // The message still waits for wf-msg's next task.
    let task = lease_one(&store, "me", T0 + 6).await;
    assert_eq!(task.run.workflow_id, "wf-msg");
    assert_eq!(task.messages.len(), 1);
}

/// The starts and messages to workflow ids that a group commit carries read their ids' latest
/// runs in one statement before the group's requests run. A request earlier in the group that
/// changes one of those runs (a task that closes it, a start of a new run of its id) makes the
/// later ones read it again: each answer is the one the requests would get one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_reads_its_starts_latest_runs_ahead_and_sees_its_own_changes() {
    use std::future::Future;
    use std::pin::Pin;
    use wf_core::store::conformance::{commit_for, signal};
    use wf_core::store::{DeliverOutcome, RunClose, StartOutcome, WorkflowTask};

    let Some(db) = TestSchema::new("prefetched_runs") else {
        return;
    };
    // One writer connection: the group's requests run in the order they were made (with two,
    // a later request may reach the server first, as any two concurrent calls may).
    let options = wf_postgres::PostgresOptions {
        writers: 1,
        ..db.options()
    };
    let store = wf_postgres::PostgresStore::connect_with(db.url(), options)
        .await
        .expect("open the store");
    const N: usize = 12;
    // closing-i: running, closed by a task in the group before a start of its id; waiting-i:
    // running, signalled; fresh-i: started twice in the group.
    // Half the closing tasks hold a lease; the other half commit as a worker that holds the
    // run in memory does (no lease, the row it knows assumed).
    let mut tasks = Vec::new();
    for i in 0..N {
        let record = start(&store, &format!("closing-{i}"), &format!("c-{i}-1"), T0).await;
        start(&store, &format!("waiting-{i}"), &format!("w-{i}"), T0).await;
        let task = if i % 2 == 0 {
            store
                .lease_run(LeaseRequest {
                    run_id: String::from(&format!("c-{i}-1")),
                    worker_id: String::from("me"),
                    now_ms: T0 + 1,
                    lease_ms: 10_000,
                    build_id: None,
                })
                .await
                .unwrap()
                .expect("a free run")
        } else {
            WorkflowTask {
                run: record,
                messages: Vec::new(),
            }
        };
        tasks.push(task);
    }
    type Call<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;
    #[derive(Debug)]
    enum Outcome {
        Committed(Result<Box<wf_core::store::RunRecord>, StoreError>),
        Started(Result<StartOutcome, StoreError>),
        Delivered(Result<DeliverOutcome, StoreError>),
    }
    let close = |task: &WorkflowTask, leased: bool| {
        let mut c = commit_for(task, "me", T0 + 2);
        if !leased {
            c.without_lease = true;
            c.assumed = Some(Box::new(task.run.clone()));
        }
        c.close = Some(RunClose::Completed(wf_core::store::conformance::payload(
            "done",
        )));
        c
    };
    // Made in this order, queued in this order (the store queues a call when it is made).
    let mut calls: Vec<Call<'_>> = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let store = &store;
        let commit = close(task, i % 2 == 0);
        calls.push(Box::pin(async move {
            Outcome::Committed(store.commit_workflow_task(commit).await.map(Box::new))
        }));
        let again = start_request(&format!("closing-{i}"), &format!("c-{i}-2"), T0 + 3);
        calls.push(Box::pin(async move {
            Outcome::Started(store.start_run(again).await)
        }));
        for k in 0..2 {
            let fresh = start_request(&format!("fresh-{i}"), &format!("f-{i}-{k}"), T0 + 3);
            calls.push(Box::pin(async move {
                Outcome::Started(store.start_run(fresh).await)
            }));
        }
        let to = format!("waiting-{i}");
        calls.push(Box::pin(async move {
            Outcome::Delivered(
                store
                    .deliver(Delivery::new(&to, signal("go", None), T0 + 3))
                    .await,
            )
        }));
    }
    let outcomes = futures_util::future::join_all(calls).await;
    for (i, chunk) in outcomes.chunks(5).enumerate() {
        let [Outcome::Committed(closed), Outcome::Started(again), Outcome::Started(fresh), Outcome::Started(twice), Outcome::Delivered(waiting)] =
            chunk
        else {
            panic!("outcomes out of order: {chunk:?}");
        };
        let closed = closed.as_ref().expect("the closing task's commit");
        assert_eq!(closed.status, RunStatus::Completed);
        // The start after the close sees the run closed: a new run (not "already running").
        let again = again.as_ref().expect("a start after the close");
        assert!(again.started, "closing-{i} started again: {again:?}");
        assert_eq!(again.run_id, format!("c-{i}-2"));
        // Of two starts of one new id, the first starts it, the second finds it running.
        let fresh = fresh.as_ref().expect("the first start of a new id");
        assert!(
            fresh.started && fresh.run_id == format!("f-{i}-0"),
            "{fresh:?}"
        );
        assert!(
            !matches!(twice, Ok(o) if o.started),
            "fresh-{i} started twice: {twice:?}"
        );
        assert!(
            matches!(waiting, Ok(DeliverOutcome::Enqueued { run_id }) if *run_id == format!("w-{i}")),
            "waiting-{i}'s signal: {waiting:?}"
        );
        let latest = store.get_run(&format!("fresh-{i}"), None).await.unwrap();
        assert_eq!(latest.map(|r| r.run_id), Some(format!("f-{i}-0")));
        let latest = store.get_run(&format!("closing-{i}"), None).await.unwrap();
        assert_eq!(latest.map(|r| r.run_id), Some(format!("c-{i}-2")));
    }
}
