//! SQLite only: what the file itself holds. Its schema version and migrations, its sync
//! level, a closed store's single self-contained file, no stale marks in its indexes. (What
//! every durable store must do, the conformance suite checks.)

use wf_core::store::conformance::*;
use wf_core::store::{RunClose, SqliteOptions, SqliteStore, Store, StoreError};

/// A database file holding [`populate`]'s workflows, its store closed; with what that store saw.
async fn populated_and_closed(name: &str) -> (SqliteFile, Snapshot) {
    let db = SqliteFile::new(name);
    let store = db.open_sqlite();
    populate(&store).await;
    let before = snapshot(&store).await;
    drop(store);
    (db, before)
}

#[tokio::test]
async fn the_schema_version_is_recorded_and_a_newer_one_is_refused() {
    let db = SqliteFile::new("schema");
    drop(db.open_sqlite());
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 5);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);

    let err = SqliteStore::open(db.path())
        .err()
        .expect("a newer schema must be refused");
    match err {
        StoreError::Backend(e) => assert!(e.message().contains("newer"), "{e}"),
        other => panic!("expected a backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn synchronous_normal_is_an_option() {
    let db = SqliteFile::new("normal");
    let options = SqliteOptions {
        synchronous_full: false,
        ..Default::default()
    };
    let store = SqliteStore::open_with(db.path(), options).unwrap();
    start(&store, "wf-1", "run-1", T0).await;
    drop(store);
    assert!(db
        .open_sqlite()
        .get_run("wf-1", None)
        .await
        .unwrap()
        .is_some());
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
    let db = SqliteFile::new("migrate");
    drop(db.open_sqlite());
    // Make the file look like one written by a v1 engine: no schedules, no task queues.
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    conn.execute_batch(
        "DROP TABLE schedules; DROP TABLE engines; ALTER TABLE runs DROP COLUMN task_queue; \
         PRAGMA user_version = 1;",
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
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 5);
}

/// A new database file with run `run-1` of `wf-1` started at `T0` and signal `a` waiting for it.
async fn a_run_with_a_signal(name: &str) -> (SqliteFile, SqliteStore) {
    let db = SqliteFile::new(name);
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
    let conn = rusqlite::Connection::open(db.path()).unwrap();
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
    conn.execute_batch("DROP TABLE engines").unwrap();
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

    let conn = rusqlite::Connection::open(db.path()).unwrap();
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
    let wal = format!("{}-wal", db.path().display());
    assert!(
        !std::path::Path::new(&wal).exists(),
        "the WAL outlived a clean close"
    );
    let copy = SqliteFile::new("close-copy");
    std::fs::copy(db.path(), copy.path()).expect("copy the database file");
    assert_eq!(snapshot(&copy.open_sqlite()).await, before);
}
