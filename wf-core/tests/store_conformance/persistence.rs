//! SQLite only: the file is the truth. Closing and reopening it loses nothing, a failed
//! request leaves no trace in it, and several stores (processes) may share it.

use crate::harness::*;
use std::sync::Arc;
use std::time::Duration;
use wf_core::store::{ActivityOptions, HistoryEvent};
use wf_core::store::{
    ActivityTask, DeliverOutcome, ListFilter, Message, RunClose, RunRecord, SqliteOptions,
    SqliteStore, Store, StoreError, UpdateRecord, UpdateState,
};

/// Everything observable about the test workflows, without changing anything.
#[derive(Debug, PartialEq)]
struct Snapshot {
    runs: Vec<RunRecord>,
    histories: Vec<Vec<HistoryEvent>>,
    activities: Vec<Vec<ActivityTask>>,
    updates: Vec<Vec<UpdateRecord>>,
    update: Option<UpdateRecord>,
    expired: Vec<ActivityTask>,
    wakeup: Option<i64>,
}

async fn snapshot(store: &dyn Store) -> Snapshot {
    let runs = store.list_runs(ListFilter::default()).await.unwrap();
    let mut histories = Vec::new();
    let mut activities = Vec::new();
    let mut updates = Vec::new();
    for run in &runs {
        histories.push(store.read_history(&run.run_id, 1).await.unwrap());
        activities.push(store.pending_activities(&run.run_id).await.unwrap());
        updates.push(store.pending_updates(&run.run_id).await.unwrap());
    }
    Snapshot {
        runs,
        histories,
        activities,
        updates,
        update: store.get_update("wf-1", "u-1").await.unwrap(),
        expired: store.expired_activities(T0 + 1_000_000, 100).await.unwrap(),
        wakeup: store.next_wakeup(T0).await.unwrap(),
    }
}

/// Two workflows with history, inbox, leased activity, timer, updates and dedupe ids.
async fn populate(store: &dyn Store) {
    start(store, "wf-1", "run-1", T0).await;
    store
        .deliver("wf-1", None, update("u-1", "rename"), T0)
        .await
        .unwrap();
    store
        .deliver("wf-1", None, signal("pause", Some("s-1")), T0)
        .await
        .unwrap();
    let options = ActivityOptions {
        start_to_close: Some(Duration::from_secs(30)),
        heartbeat_timeout: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    run_task(store, T0 + 1, |_, c| {
        c.new_activities = vec![activity(1, options)];
        c.new_timers = vec![(2, T0 + 500)];
        c.updates = vec![("u-1".into(), "rename".into(), UpdateState::Accepted)];
        c.summary = payload("waiting");
    })
    .await;
    store.poll_activity_tasks("aw", T0 + 2, 10).await.unwrap();
    store
        .heartbeat_activity("run-1", 1, 1, Some(payload("half")), T0 + 3)
        .await
        .unwrap();
    store
        .deliver("wf-1", None, signal("resume", None), T0 + 4)
        .await
        .unwrap();
    start(store, "wf-2", "run-2", T0 + 5).await;
    store.terminate("wf-2", "not needed", T0 + 6).await.unwrap();
}

/// A database file holding [`populate`]'s workflows, its store closed; with what that store saw.
async fn populated_and_closed(name: &str) -> (TempDb, Snapshot) {
    let db = TempDb::new(name);
    let store = db.open();
    populate(&*store).await;
    let before = snapshot(&*store).await;
    drop(store);
    (db, before)
}

#[tokio::test]
async fn everything_survives_close_and_reopen() {
    let (db, before) = populated_and_closed("reopen").await;
    let store = db.open();
    assert_eq!(snapshot(&*store).await, before);
    let dup = store
        .deliver("wf-1", None, signal("pause", Some("s-1")), T0 + 7)
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
        [("run-1".to_string(), 2)]
    );
    assert!(
        store
            .heartbeat_activity("run-1", 1, 1, None, T0 + 8)
            .await
            .unwrap(),
        "the lease survived"
    );
}

#[tokio::test]
async fn a_reopened_file_holds_exactly_the_committed_state() {
    let db = TempDb::new("exact");
    let store = db.open();
    populate(&*store).await;
    // Failed requests in between successful ones leave no trace on disk.
    let err = store
        .start_run(start_request("wf-1", "run-x", T0 + 10))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyStarted { .. }));
    let err = store
        .deliver("wf-2", None, signal("late", None), T0 + 10)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::RunFinished { .. }));
    let committed = snapshot(&*store).await;
    drop(store);
    assert_eq!(snapshot(&*db.open()).await, committed);
}

#[tokio::test]
async fn two_stores_on_one_file_see_each_others_writes() {
    let db = TempDb::new("shared");
    let a: Arc<dyn Store> = db.open();
    let b: Arc<dyn Store> = db.open();
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
                .deliver(
                    "wf-1",
                    None,
                    signal("s", Some(&format!("id-{}", i / 2))),
                    T0,
                )
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
        a.poll_workflow_tasks("w2", T0, 1000, 10)
            .await
            .unwrap()
            .is_empty(),
        "leased via b"
    );
}

#[tokio::test]
async fn the_schema_version_is_recorded_and_a_newer_one_is_refused() {
    let db = TempDb::new("schema");
    drop(db.open_sqlite());
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);

    let err = SqliteStore::open(&db.path)
        .err()
        .expect("a newer schema must be refused");
    match err {
        StoreError::Backend(e) => assert!(e.message().contains("newer"), "{e}"),
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn synchronous_normal_is_an_option() {
    let db = TempDb::new("normal");
    let options = SqliteOptions {
        synchronous_full: false,
        ..Default::default()
    };
    let store = SqliteStore::open_with(&db.path, options).unwrap();
    start(&store, "wf-1", "run-1", T0).await;
    drop(store);
    assert!(db.open().get_run("wf-1", None).await.unwrap().is_some());
}

#[tokio::test]
async fn opening_an_unusable_path_is_a_backend_error() {
    let dir = std::env::temp_dir()
        .join("wf-conformance-no-such-dir")
        .join("x")
        .join("wf.db");
    assert!(matches!(
        SqliteStore::open(dir),
        Err(StoreError::Backend(..))
    ));
}

#[tokio::test]
async fn a_version_1_file_is_migrated_to_the_latest_version_on_open() {
    let db = TempDb::new("migrate");
    drop(db.open_sqlite());
    // Make the file look like one written by a v1 engine: no schedules, no task queues.
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    conn.execute_batch(
        "DROP TABLE schedules; ALTER TABLE runs DROP COLUMN task_queue; PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(conn);
    let store = db.open_sqlite();
    let row = wf_core::store::ScheduleRow {
        schedule_id: "s".into(),
        data: wf_core::Payload::encode(&1).unwrap(),
        version: 1,
        next_check_ms: Some(5),
    };
    store.create_schedule(row).await.unwrap();
    assert_eq!(store.list_schedules().await.unwrap().len(), 1);
    drop(store);
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);
}

/// A new database file with run `run-1` of `wf-1` started at `T0` and signal `a` waiting for it.
async fn a_run_with_a_signal(name: &str) -> (TempDb, SqliteStore) {
    let db = TempDb::new(name);
    let store = db.open_sqlite();
    start(&store, "wf-1", "run-1", T0).await;
    store
        .deliver("wf-1", None, signal("a", None), T0)
        .await
        .unwrap();
    (db, store)
}

/// A file written by a v3 engine keeps one event per row; once migrated, those rows read as
/// before, and new commits (one row per commit) extend the same history.
#[tokio::test]
async fn a_version_3_history_of_single_event_rows_reads_and_grows() {
    let (db, store) = a_run_with_a_signal("v3-events").await;
    run_task(&store, T0 + 1, |_, c| {
        c.events.insert(0, (T0 + 1, received("a")));
    })
    .await;
    let before = store.read_history("run-1", 1).await.unwrap();
    drop(store);
    // Rewrite the history as a v3 engine stored it: one row per event.
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    conn.execute("DELETE FROM events", []).unwrap();
    for e in &before {
        conn.execute(
            "INSERT INTO events (run_id, event_id, data) VALUES ('run-1', ?1, ?2)",
            rusqlite::params![
                e.event_id as i64,
                wf_core::store::encode_event(e.time_ms, &e.kind).unwrap()
            ],
        )
        .unwrap();
    }
    conn.pragma_update(None, "user_version", 3).unwrap();
    drop(conn);

    let store = db.open_sqlite();
    assert_eq!(store.read_history("run-1", 1).await.unwrap(), before);
    store
        .deliver("wf-1", None, signal("b", None), T0 + 2)
        .await
        .unwrap();
    run_task(&store, T0 + 2, |_, c| {
        c.events.insert(0, (T0 + 2, received("b")));
        c.events.insert(0, (T0 + 2, received("b")));
    })
    .await;
    let after = store.read_history("run-1", 1).await.unwrap();
    assert_eq!(after.len(), before.len() + 3);
    assert_eq!(&after[..before.len()], &before[..]);
    let ids: Vec<u64> = after.iter().map(|e| e.event_id).collect();
    assert_eq!(ids, (1..=after.len() as u64).collect::<Vec<_>>());
    for from in 1..=after.len() as u64 + 1 {
        let tail = store.read_history("run-1", from).await.unwrap();
        assert_eq!(
            tail,
            after[from as usize - 1..],
            "reading from event {from}"
        );
    }
}

fn received(name: &str) -> wf_core::store::EventKind {
    wf_core::store::EventKind::SignalReceived {
        name: name.into(),
        args: payload(name),
        signal_id: None,
    }
}

/// A closed run keeps no ready or lease mark, however it closed: the marks index the runs that
/// workers poll, and a stale one would be scanned by every poll from then on.
#[tokio::test]
async fn closed_runs_keep_no_ready_or_lease_mark() {
    // Terminated while leased, a message waiting.
    let (db, store) = a_run_with_a_signal("closed-marks").await;
    lease_one(&store, "w", T0).await;
    store.terminate("wf-1", "stop", T0 + 1).await.unwrap();
    // Terminated while ready for its first task.
    start(&store, "wf-2", "run-2", T0 + 2).await;
    store.terminate("wf-2", "stop", T0 + 3).await.unwrap();
    // Completed by a leased task.
    start(&store, "wf-3", "run-3", T0 + 4).await;
    let task = lease_one(&store, "w", T0 + 4).await;
    let mut done = commit_for(&task, "w", T0 + 5);
    done.close = Some(RunClose::Completed(payload(1)));
    store.commit_workflow_task(done).await.unwrap();
    drop(store);

    let conn = rusqlite::Connection::open(&db.path).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT COUNT(*) FROM runs WHERE status != 'running'"),
        3
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM runs WHERE ready_at IS NOT NULL OR lease_owner IS NOT NULL \
             OR lease_until IS NOT NULL"
        ),
        0
    );
}

#[tokio::test]
async fn a_closed_store_leaves_everything_in_the_database_file_alone() {
    let (db, before) = populated_and_closed("close").await;
    // The last connection to close checkpointed the WAL into the database and removed it: a
    // backup that copies the one file gets everything.
    let wal = format!("{}-wal", db.path.display());
    assert!(
        !std::path::Path::new(&wal).exists(),
        "the WAL outlived a clean close"
    );
    let copy = TempDb::new("close-copy");
    std::fs::copy(&db.path, &copy.path).expect("copy the database file");
    assert_eq!(snapshot(&*copy.open()).await, before);
}
