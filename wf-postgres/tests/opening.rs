//! Opening a PostgreSQL store: migrations under the advisory lock (several processes at once),
//! schemas kept apart, refusals with clear errors. Skipped (loudly) without `WF_POSTGRES_URL`.

use std::time::Duration;
use wf_core::store::conformance::{start, T0};
use wf_core::store::{BackendErrorKind, Store, StoreError};
use wf_postgres::testing::TestSchema;
use wf_postgres::{PostgresOptions, PostgresStore};

fn kind(e: &StoreError) -> Option<BackendErrorKind> {
    match e {
        StoreError::Backend(b) => Some(b.kind()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_opened_at_once_migrate_the_schema_once_and_all_work() {
    let Some(db) = TestSchema::new("migrate_at_once") else {
        return;
    };
    // Eight openings race on an empty schema: each connection takes the advisory lock in
    // turn, the first creates the tables, the others find them at the last version.
    let openings = (0..8).map(|_| {
        let (url, options) = (db.url().to_string(), db.options());
        tokio::spawn(async move { PostgresStore::connect_with(&url, options).await })
    });
    let mut stores = Vec::new();
    for opening in openings {
        stores.push(opening.await.expect("join").expect("open"));
    }
    for (i, store) in stores.iter().enumerate() {
        start(store, &format!("wf-{i}"), &format!("run-{i}"), T0).await;
    }
    let client = wf_postgres::connect_raw(db.url()).await.expect("connect");
    let versions = client
        .query(
            &format!(
                "SELECT version FROM {}.wf_migrations ORDER BY version",
                db.schema()
            ),
            &[],
        )
        .await
        .expect("read the migrations");
    let versions: Vec<i32> = versions.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        versions,
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
        "each version is applied exactly once"
    );
    for (i, store) in stores.iter().enumerate() {
        let seen = stores[(i + 1) % stores.len()]
            .get_run(&format!("wf-{i}"), None)
            .await
            .expect("read");
        assert!(seen.is_some(), "every store sees the others' runs");
        let _ = store;
    }
}

#[tokio::test]
async fn two_schemas_on_one_database_are_apart() {
    let (Some(a), Some(b)) = (TestSchema::new("apart_a"), TestSchema::new("apart_b")) else {
        return;
    };
    let (a, b) = (a.open().await, b.open().await);
    start(&a, "order-1", "run-a", T0).await;
    assert!(b.get_run("order-1", None).await.unwrap().is_none());
    assert!(a.get_run("order-1", None).await.unwrap().is_some());
}

#[tokio::test]
async fn a_schema_newer_than_this_wf_is_refused_untouched() {
    let Some(db) = TestSchema::new("newer") else {
        return;
    };
    drop(db.open().await);
    let client = wf_postgres::connect_raw(db.url()).await.expect("connect");
    client
        .batch_execute(&format!(
            "INSERT INTO {}.wf_migrations (version) VALUES (999)",
            db.schema()
        ))
        .await
        .expect("pretend a newer wf migrated it");
    let err = PostgresStore::connect_with(db.url(), db.options())
        .await
        .err()
        .expect("a newer schema is refused");
    assert_eq!(kind(&err), Some(BackendErrorKind::Invalid), "{err}");
    assert!(err.to_string().contains("upgrade wf"), "{err}");
}

#[tokio::test]
async fn bad_schema_names_and_urls_are_refused_with_clear_errors() {
    let options = PostgresOptions {
        schema: "Robert'); DROP TABLE students;--".into(),
        ..Default::default()
    };
    let err = PostgresStore::connect_with("postgres://localhost/x", options)
        .await
        .err()
        .expect("refused");
    assert_eq!(kind(&err), Some(BackendErrorKind::Invalid));
    assert!(err.to_string().contains("schema name"), "{err}");

    let err = PostgresStore::connect("postgres://u:secret@[::1/nope")
        .await
        .err()
        .expect("refused");
    assert_eq!(kind(&err), Some(BackendErrorKind::Invalid), "{err}");
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let options = PostgresOptions {
        connect_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let url = format!("postgres://wf@127.0.0.1:{port}/wf");
    let err = PostgresStore::connect_with(&url, options)
        .await
        .err()
        .expect("refused");
    assert_eq!(kind(&err), Some(BackendErrorKind::Unavailable), "{err}");
    assert!(err.is_retryable());
}
