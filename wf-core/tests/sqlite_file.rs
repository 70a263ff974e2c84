//! SQLite only: what the file itself holds. Its schema version and migrations, its sync
//! level, a closed store's single self-contained file, no stale marks in its indexes, its
//! mark as a wf file (and the refusal of anyone else's, untouched), and what the store does
//! once it finds the file damaged. (What every durable store must do, the conformance suite
//! checks.)

use std::path::{Path, PathBuf};
use wf_core::store::conformance::*;
use wf_core::store::{
    BackendErrorKind, Delivery, RunClose, SqliteOptions, SqliteStore, Store, StoreError,
};

/// The application_id of a wf file: ASCII "wfdb".
const WF_APPLICATION_ID: i32 = 0x7766_6462;

/// The kind and message of a store error that must be a backend failure.
fn backend(err: StoreError) -> (BackendErrorKind, String) {
    match err {
        StoreError::Backend(e) => (e.kind(), e.message().to_string()),
        other => panic!("expected a backend error, got {other:?}"),
    }
}

/// The error of an open that must fail.
fn open_error(path: impl AsRef<Path>) -> (BackendErrorKind, String) {
    match SqliteStore::open(path) {
        Ok(_) => panic!("the open must fail"),
        Err(e) => backend(e),
    }
}

/// `path` with `suffix` appended (`-wal`, `-shm`, `-journal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    p.into()
}

/// Which of the files SQLite keeps beside a database exist.
fn siblings(path: &Path) -> Vec<&'static str> {
    ["-wal", "-shm", "-journal"]
        .into_iter()
        .filter(|s| sibling(path, s).exists())
        .collect()
}

/// The application_id and user_version of a wf database, read the way the store does not.
fn mark_and_version(path: &Path) -> (i32, i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let id = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    let version = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    (id, version)
}

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
    assert_eq!(version, 18);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);

    let before = std::fs::read(db.path()).unwrap();
    let (kind, message) = open_error(db.path());
    assert_eq!(kind, BackendErrorKind::Invalid);
    assert_eq!(
        message,
        format!(
            "opening \"{}\": it has wf schema version 99, newer than the 18 this wf knows; \
             upgrade wf to open it",
            db.path().display()
        )
    );
    assert_eq!(std::fs::read(db.path()).unwrap(), before);
    assert_eq!(siblings(db.path()), Vec::<&str>::new());
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
    // Make the file look like one written by a v1 engine: no schedules, no task queues, no
    // index of closed runs.
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    conn.execute_batch(
        "DROP TABLE workflow_feed; DROP TABLE workflow_events; DROP TABLE stream_entries; \
         DROP TABLE queue_fair_passes; DROP TABLE queue_fair_clocks; \
         DROP TABLE queued_runs; DROP TABLE workflow_queues; \
         DROP INDEX activities_by_turn; DROP TABLE fair_passes; DROP TABLE fair_clock; \
         ALTER TABLE activities DROP COLUMN priority; ALTER TABLE activities DROP COLUMN fair_key; \
         ALTER TABLE activities DROP COLUMN fair_cost; ALTER TABLE activities DROP COLUMN vstart; \
         ALTER TABLE activities DROP COLUMN pinned; \
         DROP INDEX runs_by_debounce; ALTER TABLE runs DROP COLUMN debounce_key; \
         ALTER TABLE runs DROP COLUMN start_at; \
         DROP INDEX activities_leased_by_name; DROP INDEX activities_leased_by_queue; \
         DROP INDEX activities_leased_by_key; DROP TABLE flow_limits; \
         ALTER TABLE activities DROP COLUMN task_queue; ALTER TABLE activities DROP COLUMN flow_key; \
         DROP INDEX runs_by_closed; DROP TABLE schedules; DROP TABLE engines; \
         DROP TABLE start_requests; DROP TABLE search_attributes; DROP TABLE memos; \
         DROP INDEX runs_by_build; DROP INDEX runs_following_current; \
         DROP TABLE task_queue_builds; ALTER TABLE runs DROP COLUMN build_id; \
         ALTER TABLE runs DROP COLUMN versioning; ALTER TABLE runs DROP COLUMN task_queue; \
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
    store.admin().create_schedule(row).await.unwrap();
    assert_eq!(store.admin().list_schedules().await.unwrap().len(), 1);
    drop(store);
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 18);
}

/// A new database file with run `run-1` of `wf-1` started at `T0` and signal `a` waiting for it.
async fn a_run_with_a_signal(name: &str) -> (SqliteFile, SqliteStore) {
    let db = SqliteFile::new(name);
    let store = db.open_sqlite();
    start(&store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("a", None), T0))
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
        c.events.insert(0, event(T0 + 1, received("a")));
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
    conn.execute_batch(
        "DROP TABLE workflow_feed; DROP TABLE workflow_events; DROP TABLE stream_entries; \
         DROP TABLE queue_fair_passes; DROP TABLE queue_fair_clocks; \
         DROP TABLE queued_runs; DROP TABLE workflow_queues; \
         DROP INDEX activities_by_turn; DROP TABLE fair_passes; DROP TABLE fair_clock; \
         ALTER TABLE activities DROP COLUMN priority; ALTER TABLE activities DROP COLUMN fair_key; \
         ALTER TABLE activities DROP COLUMN fair_cost; ALTER TABLE activities DROP COLUMN vstart; \
         ALTER TABLE activities DROP COLUMN pinned; \
         DROP INDEX runs_by_debounce; ALTER TABLE runs DROP COLUMN debounce_key; \
         ALTER TABLE runs DROP COLUMN start_at; \
         DROP INDEX activities_leased_by_name; DROP INDEX activities_leased_by_queue; \
         DROP INDEX activities_leased_by_key; DROP TABLE flow_limits; \
         ALTER TABLE activities DROP COLUMN task_queue; ALTER TABLE activities DROP COLUMN flow_key; \
         DROP TABLE engines; DROP INDEX runs_by_closed; DROP TABLE start_requests; \
         DROP TABLE search_attributes; DROP TABLE memos; DROP INDEX runs_by_build; \
         DROP INDEX runs_following_current; DROP TABLE task_queue_builds; \
         ALTER TABLE runs DROP COLUMN build_id; ALTER TABLE runs DROP COLUMN versioning",
    )
    .unwrap();
    conn.pragma_update(None, "user_version", 3).unwrap();
    drop(conn);

    let store = db.open_sqlite();
    assert_eq!(store.read_history("run-1", 1).await.unwrap(), before);
    store
        .deliver(Delivery::new("wf-1", signal("b", None), T0 + 2))
        .await
        .unwrap();
    run_task(&store, T0 + 2, |_, c| {
        c.events.insert(0, event(T0 + 2, received("b")));
        c.events.insert(0, event(T0 + 2, received("b")));
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
        sent_at: None,
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

/// A file another program made with `sql`, closed.
fn foreign(name: &str, sql: &str) -> SqliteFile {
    let db = SqliteFile::new(name);
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    db
}

/// Opens the file, which must be refused, and checks that nothing was written or created.
fn refused_untouched(path: &Path) -> (BackendErrorKind, String) {
    let before = std::fs::read(path).unwrap();
    let around = siblings(path);
    let refused = open_error(path);
    assert_eq!(std::fs::read(path).unwrap(), before, "{refused:?}");
    assert_eq!(siblings(path), around, "{refused:?}");
    refused
}

#[test]
fn another_applications_database_is_refused_and_left_byte_for_byte_unchanged() {
    let db = foreign(
        "foreign-app",
        "PRAGMA application_id = 4660; CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE orders (id INTEGER PRIMARY KEY, user INTEGER); INSERT INTO users VALUES (1, 'a');",
    );
    let (kind, message) = refused_untouched(db.path());
    assert_eq!(kind, BackendErrorKind::Invalid);
    assert_eq!(
        message,
        format!(
            "opening \"{}\": it is not a wf database: it has application_id 0x1234 and tables \
             orders, users; wf did not change it; open a new file for wf",
            db.path().display()
        )
    );
    assert_eq!(siblings(db.path()), Vec::<&str>::new());
}

#[test]
fn unmarked_databases_that_are_not_exactly_wfs_are_refused_untouched() {
    let cases = [
        // Its own tables, no mark, no version: wf used to add its tables beside them.
        ("foreign-plain", "CREATE TABLE notes (body TEXT);", "application_id 0 and tables notes"),
        // A version wf also has: wf used to fail half-way through a migration.
        (
            "foreign-v2",
            "CREATE TABLE users (id); PRAGMA user_version = 2;",
            "application_id 0, user_version 2 and tables users",
        ),
        // A table named like one of wf's.
        (
            "foreign-runs",
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT);",
            "application_id 0 and tables runs",
        ),
        // Someone's mark on an empty database.
        ("foreign-marked", "PRAGMA application_id = 5;", "application_id 0x5 and no tables"),
        // A WAL-mode database, closed: a read-only connection would create its -wal and -shm.
        (
            "foreign-wal",
            "PRAGMA journal_mode = WAL; CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');",
            "application_id 0 and tables notes",
        ),
    ];
    for (name, sql, has) in cases {
        let db = foreign(name, sql);
        let (kind, message) = refused_untouched(db.path());
        assert_eq!(kind, BackendErrorKind::Invalid, "{name}");
        assert_eq!(
            message,
            format!(
                "opening \"{}\": it is not a wf database: it has {has}; wf did not change it; \
                 open a new file for wf",
                db.path().display()
            ),
            "{name}"
        );
        assert!(!message.contains("CREATE"), "{message}");
        assert_eq!(siblings(db.path()), Vec::<&str>::new(), "{name}");
    }
}

#[test]
fn wfs_schema_with_a_table_of_someone_elses_is_not_adopted() {
    let db = SqliteFile::new("wf-plus-users");
    drop(db.open_sqlite());
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    conn.execute_batch("PRAGMA application_id = 0; CREATE TABLE users (id);")
        .unwrap();
    drop(conn);
    let (_, message) = refused_untouched(db.path());
    assert!(
        message.contains(
            "it has application_id 0, user_version 18 and tables activities, engines, events, \
             fair_clock, fair_passes, flow_limits, inbox, memos and 16 more;"
        ),
        "{message}"
    );
}

#[test]
fn a_foreign_database_in_use_is_refused_and_its_wal_left_alone() {
    let db = foreign(
        "foreign-in-use",
        "PRAGMA journal_mode = WAL; CREATE TABLE notes (body TEXT);",
    );
    // The other application is running: its last commit is in its -wal file.
    let app = rusqlite::Connection::open(db.path()).unwrap();
    app.execute("INSERT INTO notes VALUES ('not yet checkpointed')", [])
        .unwrap();
    let wal = std::fs::read(sibling(db.path(), "-wal")).unwrap();
    assert!(!wal.is_empty());
    let (_, message) = refused_untouched(db.path());
    assert!(message.contains("tables notes"), "{message}");
    assert_eq!(std::fs::read(sibling(db.path(), "-wal")).unwrap(), wal);
    let notes: i64 = app
        .query_row("SELECT count(*) FROM notes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(notes, 1);
}

#[test]
fn a_file_that_is_not_sqlite_at_all_is_refused_untouched() {
    let db = SqliteFile::new("text-file");
    std::fs::write(db.path(), "name,age\nada,36\n".repeat(100)).unwrap();
    let (kind, message) = refused_untouched(db.path());
    assert_eq!(kind, BackendErrorKind::Invalid);
    assert_eq!(
        message,
        format!(
            "opening \"{}\": it is not a wf database: it is not a SQLite database at all (its \
             first bytes are not SQLite's header); wf did not change it; open a new file for wf",
            db.path().display()
        )
    );
}

#[tokio::test]
async fn a_new_file_an_empty_file_and_an_empty_database_become_wf_databases() {
    let new = SqliteFile::new("new-file");
    let empty = SqliteFile::new("empty-file");
    std::fs::write(empty.path(), b"").unwrap();
    // A SQLite database with nothing in it (a table made and dropped).
    let emptied = foreign(
        "emptied-db",
        "CREATE TABLE t (x); DROP TABLE t; PRAGMA journal_mode = DELETE;",
    );
    for db in [&new, &empty, &emptied] {
        let store = db.open_sqlite();
        start(&store, "wf-1", "run-1", T0).await;
        drop(store);
        assert_eq!(mark_and_version(db.path()), (WF_APPLICATION_ID, 18));
        assert!(db
            .open_sqlite()
            .get_run("wf-1", None)
            .await
            .unwrap()
            .is_some());
    }
}

#[tokio::test]
async fn a_wf_file_from_before_the_mark_is_adopted_marked_and_keeps_its_data() {
    let (db, before) = populated_and_closed("unmarked").await;
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    conn.pragma_update(None, "application_id", 0).unwrap();
    drop(conn);
    assert_eq!(mark_and_version(db.path()), (0, 18));
    assert_eq!(snapshot(&db.open_sqlite()).await, before);
    assert_eq!(mark_and_version(db.path()), (WF_APPLICATION_ID, 18));

    // One written by a v1 engine: no schedules, no task queues, no mark.
    let old = SqliteFile::new("unmarked-v1");
    let store = old.open_sqlite();
    start(&store, "wf-1", "run-1", T0).await;
    drop(store);
    let conn = rusqlite::Connection::open(old.path()).unwrap();
    conn.execute_batch(
        "DROP TABLE workflow_feed; DROP TABLE workflow_events; DROP TABLE stream_entries; \
         DROP TABLE queue_fair_passes; DROP TABLE queue_fair_clocks; \
         DROP TABLE queued_runs; DROP TABLE workflow_queues; \
         DROP INDEX activities_by_turn; DROP TABLE fair_passes; DROP TABLE fair_clock; \
         ALTER TABLE activities DROP COLUMN priority; ALTER TABLE activities DROP COLUMN fair_key; \
         ALTER TABLE activities DROP COLUMN fair_cost; ALTER TABLE activities DROP COLUMN vstart; \
         ALTER TABLE activities DROP COLUMN pinned; \
         DROP INDEX runs_by_debounce; ALTER TABLE runs DROP COLUMN debounce_key; \
         ALTER TABLE runs DROP COLUMN start_at; \
         DROP INDEX activities_leased_by_name; DROP INDEX activities_leased_by_queue; \
         DROP INDEX activities_leased_by_key; DROP TABLE flow_limits; \
         ALTER TABLE activities DROP COLUMN task_queue; ALTER TABLE activities DROP COLUMN flow_key; \
         DROP INDEX runs_by_closed; DROP TABLE schedules; DROP TABLE engines; \
         DROP TABLE start_requests; DROP TABLE search_attributes; DROP TABLE memos; \
         DROP INDEX runs_by_build; DROP INDEX runs_following_current; \
         DROP TABLE task_queue_builds; ALTER TABLE runs DROP COLUMN build_id; \
         ALTER TABLE runs DROP COLUMN versioning; ALTER TABLE runs DROP COLUMN task_queue; \
         PRAGMA user_version = 1; PRAGMA application_id = 0;",
    )
    .unwrap();
    drop(conn);
    let store = old.open_sqlite();
    assert!(store.get_run("wf-1", None).await.unwrap().is_some());
    drop(store);
    assert_eq!(mark_and_version(old.path()), (WF_APPLICATION_ID, 18));
}

#[test]
fn paths_that_cannot_hold_a_database_get_errors_that_say_why() {
    let tmp = std::env::temp_dir();
    let missing = tmp
        .join(format!("wf-no-such-folder-{}", std::process::id()))
        .join("wf.db");
    let file = SqliteFile::new("a-plain-file");
    std::fs::write(file.path(), b"x").unwrap();
    let under_a_file = file.path().join("wf.db");
    let cases: Vec<(PathBuf, String)> = vec![
        (
            PathBuf::new(),
            "opening \"\": the path is empty; give wf a file name, such as \"wf.db\"".into(),
        ),
        (
            tmp.clone(),
            format!(
                "opening \"{}\": it is a directory; give wf a file path, such as \"{}\"",
                tmp.display(),
                tmp.join("wf.db").display()
            ),
        ),
        (
            missing.clone(),
            format!(
                "opening \"{}\": the folder \"{}\" does not exist; create it first",
                missing.display(),
                missing.parent().unwrap().display()
            ),
        ),
        (
            under_a_file.clone(),
            format!(
                "opening \"{}\": \"{}\" is not a folder",
                under_a_file.display(),
                file.path().display()
            ),
        ),
    ];
    for (path, expected) in cases {
        let (kind, message) = open_error(&path);
        assert_eq!(kind, BackendErrorKind::Invalid, "{message}");
        assert_eq!(message, expected);
    }
    assert!(!missing.parent().unwrap().exists());
}

#[cfg(unix)]
#[test]
fn a_file_wf_may_not_read_and_write_is_refused_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let db = SqliteFile::new("no-access");
    drop(db.open_sqlite());
    for mode in [0o000, 0o444] {
        std::fs::set_permissions(db.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        let writable = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(db.path())
            .is_ok();
        if writable {
            continue; // root may read and write anything: nothing to check here
        }
        let (kind, message) = open_error(db.path());
        assert_eq!(kind, BackendErrorKind::Invalid, "{message}");
        assert!(
            message.starts_with(&format!(
                "opening \"{}\": wf cannot read and write it (",
                db.path().display()
            )),
            "{message}"
        );
        assert!(
            message.to_lowercase().contains("permission denied"),
            "{message}"
        );
        assert_eq!(siblings(db.path()), Vec::<&str>::new());
    }
    std::fs::set_permissions(db.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
}

// ---- A damaged file -------------------------------------------------------------------------

/// `PRAGMA integrity_check` of the file as SQLite sees it (database and WAL), read without
/// writing or creating anything: the problems it lists, then the error that stopped it, if
/// one did (a page of garbage can).
fn integrity(path: &Path) -> Vec<String> {
    use rusqlite::OpenFlags;
    let conn = if sibling(path, "-wal").exists() {
        rusqlite::Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
    } else {
        rusqlite::Connection::open_with_flags(
            format!("file:{}?immutable=1", path.display()),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
        )
    }
    .unwrap();
    let mut stmt = conn.prepare("PRAGMA integrity_check").unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut out = Vec::new();
    loop {
        match rows.next() {
            Ok(Some(row)) => out.push(row.get(0).unwrap()),
            Ok(None) => break,
            Err(e) => {
                out.push(format!("stopped: {e}"));
                break;
            }
        }
    }
    out
}

/// The ids of the runs [`with_a_damaged_events_page`] starts.
fn run_ids() -> Vec<String> {
    (0..200).map(|i| format!("run-{i:03}")).collect()
}

/// A closed database of 200 runs whose histories span many pages of the `events` b-tree, one
/// leaf page in the middle of it overwritten with garbage; with the runs whose history is on
/// that page, and the file's integrity check.
async fn with_a_damaged_events_page(name: &str) -> (SqliteFile, Vec<String>, Vec<String>) {
    let db = SqliteFile::new(name);
    let options = SqliteOptions {
        synchronous_full: false,
        ..Default::default()
    };
    let store = SqliteStore::open_with(db.path(), options).unwrap();
    for (i, run_id) in run_ids().iter().enumerate() {
        let mut req = start_request(&format!("wf-{i:03}"), run_id, T0);
        req.run.input = payload(format!("{run_id} {}", "x".repeat(600)));
        assert!(store.start_run(req).await.unwrap().started);
    }
    drop(store);

    let conn = rusqlite::Connection::open(db.path()).unwrap();
    let page_size: u64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    let leaves: Vec<u64> = conn
        .prepare(
            "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' \
             ORDER BY pageno",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    drop(conn);
    assert!(leaves.len() >= 10, "events spans {} leaves", leaves.len());
    let page = leaves[leaves.len() / 2];
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(db.path())
            .unwrap();
        f.seek(SeekFrom::Start((page - 1) * page_size)).unwrap();
        f.write_all(&vec![0xA5; page_size as usize]).unwrap();
        f.sync_all().unwrap();
    }

    // Which histories the damage took, asked of SQLite directly.
    let conn = rusqlite::Connection::open_with_flags(
        format!("file:{}?immutable=1", db.path().display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let damaged: Vec<String> = run_ids()
        .into_iter()
        .filter(|id| {
            conn.query_row("SELECT count(*) FROM events WHERE run_id = ?1", [id], |r| {
                r.get::<_, i64>(0)
            })
            .is_err()
        })
        .collect();
    drop(conn);
    assert!(!damaged.is_empty() && damaged.len() < 200, "{damaged:?}");
    let check = integrity(db.path());
    assert_ne!(check, ["ok"]);
    (db, damaged, check)
}

/// Every write kind a store takes, each of which must now be refused.
async fn every_write_fails(store: &SqliteStore) -> Vec<String> {
    let mut messages = Vec::new();
    let mut refused = |result: Result<(), StoreError>, what: &str| {
        let err = result.expect_err(what);
        let (kind, message) = backend(err);
        assert_eq!(kind, BackendErrorKind::Corrupt, "{what}: {message}");
        messages.push(message);
    };
    refused(
        store
            .start_run(start_request("wf-new", "run-new", T0 + 1))
            .await
            .map(|_| ()),
        "a start",
    );
    refused(
        store
            .deliver(Delivery::new("wf-000", signal("a", None), T0 + 1))
            .await
            .map(|_| ()),
        "a signal",
    );
    refused(
        store.terminate("wf-199", "stop", T0 + 1).await.map(|_| ()),
        "a terminate",
    );
    refused(
        store
            .poll_workflow_tasks_any("w", T0 + 1, 1_000, 10)
            .await
            .map(|_| ()),
        "a poll",
    );
    messages
}

#[tokio::test]
async fn after_the_first_read_that_meets_damage_nothing_more_is_written() {
    let (db, damaged, check) = with_a_damaged_events_page("damaged-read").await;
    let before = std::fs::read(db.path()).unwrap();
    // Opening succeeds: the schema is intact.
    let store = db.open_sqlite();
    let mut first_error = None;
    for run_id in run_ids() {
        match store.read_history(&run_id, 1).await {
            Ok(history) => assert_eq!(history.len(), 1, "{run_id}"),
            Err(e) => {
                assert_eq!(
                    run_id, damaged[0],
                    "the first history that fails is a damaged one"
                );
                first_error = Some(e);
                break;
            }
        }
    }
    let (kind, first) = backend(first_error.expect("a damaged history fails"));
    assert_eq!(kind, BackendErrorKind::Corrupt);
    let path = db.path().display().to_string();
    assert!(
        first.starts_with(&format!("the database \"{path}\" is damaged: SQLite: ")),
        "{first}"
    );
    assert!(first.contains("malformed"), "{first}");
    assert!(first.contains("wf has stopped writing to it"), "{first}");
    assert!(first.contains(".recover"), "{first}");

    for message in every_write_fails(&store).await {
        assert!(
            message.starts_with(&format!("the database \"{path}\" is damaged (since ")),
            "{message}"
        );
        assert!(message.contains("malformed"), "{message}");
        assert!(
            message.contains("wf did not write this change"),
            "{message}"
        );
        assert!(message.contains(".recover"), "{message}");
    }
    // Reads are still tried: an intact history reads, a damaged one says the state.
    assert_eq!(store.read_history("run-000", 1).await.unwrap().len(), 1);
    let (kind, again) = backend(
        store
            .read_history(damaged.last().unwrap(), 1)
            .await
            .unwrap_err(),
    );
    assert_eq!(kind, BackendErrorKind::Corrupt);
    assert!(
        again.starts_with(&format!("the database \"{path}\" is damaged")),
        "{again}"
    );
    assert!(again.contains("malformed (first found at "), "{again}");
    assert!(again.contains(".recover"), "{again}");

    assert_eq!(std::fs::read(db.path()).unwrap(), before);
    assert_eq!(integrity(db.path()), check);
    drop(store);
    // Closed without copying its WAL into the damaged file.
    assert_eq!(std::fs::read(db.path()).unwrap(), before);
    assert_eq!(integrity(db.path()), check);
}

#[tokio::test]
async fn a_write_that_meets_damage_is_rolled_back_and_stops_every_later_write() {
    let (db, damaged, check) = with_a_damaged_events_page("damaged-write").await;
    let before = std::fs::read(db.path()).unwrap();
    let store = db.open_sqlite();
    // A run id that sorts right after a damaged history: its first event goes on the damaged page.
    let run_id = format!("{}a", damaged[0]);
    let err = store
        .start_run(start_request("wf-next", &run_id, T0 + 1))
        .await
        .expect_err("the write meets the damage");
    let (kind, first) = backend(err);
    assert_eq!(kind, BackendErrorKind::Corrupt, "{first}");
    assert!(first.contains("is damaged: "), "{first}");
    assert!(store.get_run("wf-next", None).await.unwrap().is_none());
    assert_eq!(every_write_fails(&store).await.len(), 4);
    assert_eq!(std::fs::read(db.path()).unwrap(), before);
    assert_eq!(integrity(db.path()), check);
    drop(store);
    assert_eq!(std::fs::read(db.path()).unwrap(), before);
}

#[tokio::test]
async fn a_row_that_does_not_decode_stops_every_later_write() {
    let (db, _) = populated_and_closed("undecodable").await;
    let conn = rusqlite::Connection::open(db.path()).unwrap();
    conn.execute(
        "UPDATE events SET data = x'c1c1c1c1' WHERE run_id = 'run-2'",
        [],
    )
    .unwrap();
    drop(conn);
    let store = db.open_sqlite();
    assert!(store.read_history("run-1", 1).await.is_ok());
    let (kind, first) = backend(store.read_history("run-2", 1).await.unwrap_err());
    assert_eq!(kind, BackendErrorKind::Corrupt);
    assert!(first.contains("is damaged: "), "{first}");
    let err = store
        .start_run(start_request("wf-3", "run-3", T0 + 10))
        .await
        .unwrap_err();
    let (kind, message) = backend(err);
    assert_eq!(kind, BackendErrorKind::Corrupt);
    assert!(
        message.contains("wf did not write this change"),
        "{message}"
    );
    assert!(message.contains(".recover"), "{message}");
}

#[test]
fn a_damaged_schema_fails_the_open_and_says_how_to_recover() {
    let db = SqliteFile::new("damaged-schema");
    drop(db.open_sqlite());
    // Page 1 after the 100-byte file header: the root of the schema table.
    let mut bytes = std::fs::read(db.path()).unwrap();
    bytes[100..4096].fill(0xA5);
    std::fs::write(db.path(), &bytes).unwrap();
    let (kind, message) = refused_untouched(db.path());
    assert_eq!(kind, BackendErrorKind::Corrupt);
    let path = db.path().display().to_string();
    assert!(
        message.starts_with(&format!("opening \"{path}\": the database is damaged (")),
        "{message}"
    );
    assert!(
        message.contains(&format!("sqlite3 \"{path}\" .recover")),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn a_folder_wf_may_not_write_in_gets_an_error_that_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("wf-read-only-folder-{}", std::process::id()));
    let _ = std::fs::create_dir(&dir);
    let path = dir.join("wf.db");
    drop(SqliteStore::open(&path).unwrap());
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = dir.join("probe");
    let root = std::fs::write(&probe, b"").is_ok();
    if !root {
        // The database may be written, but its -wal file cannot be created beside it.
        let before = std::fs::read(&path).unwrap();
        let (kind, message) = open_error(&path);
        assert!(
            message.starts_with(&format!("opening \"{}\": ", path.display())),
            "{message}"
        );
        assert!(message.contains("-wal"), "{message}");
        assert!(!message.contains("SQLite: "), "{message}");
        assert!(!kind_is_retryable(kind), "{message}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

fn kind_is_retryable(kind: BackendErrorKind) -> bool {
    wf_core::store::BackendError::new(kind, "").is_retryable()
}
