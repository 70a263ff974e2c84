//! Test support (feature `testing`): a fresh schema per test on the database that
//! `WF_POSTGRES_URL` names, and the conformance suite's store under test.
//!
//! Without `WF_POSTGRES_URL`, PostgreSQL tests are skipped, saying so loudly on stderr, unless
//! `WF_REQUIRE_POSTGRES=1` (CI), under which they fail. `.ci/postgres start` starts a
//! throwaway server and prints the variable to export.

mod cluster;

use crate::{PostgresOptions, PostgresStore};
pub use cluster::{Cluster, ClusterKind, PgBouncer};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use wf_core::store::conformance::{OpenFuture, StoreUnderTest};
use wf_core::store::Store;

/// The variable that names the test database.
pub const URL_VAR: &str = "WF_POSTGRES_URL";
/// The variable that makes a missing test database a failure (`1`) instead of a skip.
pub const REQUIRE_VAR: &str = "WF_REQUIRE_POSTGRES";

/// How to get a test database, for messages.
pub const HOW_TO_RUN: &str = "start one with `.ci/postgres start` and export the \
     WF_POSTGRES_URL it prints (e.g. postgres://postgres@127.0.0.1:54329/postgres)";

/// The test database's URL, or `None` when PostgreSQL tests are to be skipped (said once per
/// process on stderr, outside the test harness's capture).
///
/// # Panics
///
/// When `WF_REQUIRE_POSTGRES=1` and `WF_POSTGRES_URL` is unset or empty.
pub fn url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if required() => {
            panic!(
                "{REQUIRE_VAR}=1 but {URL_VAR} is not set: no PostgreSQL to test on; {HOW_TO_RUN}"
            )
        }
        _ => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                let _ = writeln!(
                    std::io::stderr(),
                    "\n*** PostgreSQL tests SKIPPED: {URL_VAR} is not set. To run them, \
                     {HOW_TO_RUN}. ***\n"
                );
            }
            None
        }
    }
}

/// Whether a missing test database is a failure.
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v.trim() == "1")
}

/// A schema of its own on the test database, dropped (with everything in it) on drop, so that
/// tests run in parallel without seeing each other.
pub struct TestSchema {
    url: String,
    schema: String,
    keep: bool,
}

impl TestSchema {
    /// A new schema named after `name`, or `None` when PostgreSQL tests are skipped (see
    /// [`url`]).
    pub fn new(name: &str) -> Option<TestSchema> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let url = url()?;
        let tag: String = name
            .chars()
            .map(|c| c.to_ascii_lowercase())
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(30)
            .collect();
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| sweep_stale_schemas(&url));
        let schema = format!(
            "t_{tag}_{}_{}_{}",
            unix_secs(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Some(TestSchema {
            url,
            schema,
            keep: false,
        })
    }

    /// Keeps the schema after this value is dropped (for a test that hands the schema to
    /// engines it does not outlive); a later test process drops it once it is an hour old.
    pub fn keep(mut self) -> (String, PostgresOptions) {
        self.keep = true;
        (self.url.clone(), self.options())
    }

    /// The database URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema's name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Store options on this schema (otherwise the defaults, with fewer connections: many
    /// tests run at once).
    pub fn options(&self) -> PostgresOptions {
        PostgresOptions {
            schema: self.schema.clone(),
            writers: 2,
            readers: 1,
            ..Default::default()
        }
    }

    /// Opens a store on the schema.
    ///
    /// # Panics
    ///
    /// If the database cannot be reached: a test database was asked for.
    pub async fn open(&self) -> PostgresStore {
        PostgresStore::connect_with(&self.url, self.options())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "cannot open the PostgreSQL test database {URL_VAR}={:?}: {e}",
                    self.url
                )
            })
    }
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Drops the test schemas (`t_..._<unix secs>_<pid>_<n>`) made more than an hour ago: those
/// that tests kept, or that a killed test process left.
fn sweep_stale_schemas(url: &str) {
    let stale_before = unix_secs().saturating_sub(3600);
    let sql = format!(
        "DO $$DECLARE s text; BEGIN
           FOR s IN SELECT nspname FROM pg_namespace
             WHERE nspname ~ '^t_.*_[0-9]+_[0-9]+_[0-9]+$'
               AND (regexp_match(nspname, '_([0-9]+)_[0-9]+_[0-9]+$'))[1]::bigint < {stale_before}
           LOOP EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', s); END LOOP;
         END$$"
    );
    run_on_the_side(url.to_string(), sql);
}

/// Runs `sql` on a connection of its own, on a thread of its own (drop may run inside or
/// outside a runtime); errors are ignored (cleanup only).
fn run_on_the_side(url: String, sql: String) {
    let done = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .ok()?;
            tokio::spawn(conn);
            client.batch_execute(&sql).await.ok()
        })
    });
    let _ = done.join();
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        // An engine a test made "crash" in-process may keep a connection with an open
        // transaction on this schema (a real crash would have closed it): end those
        // backends, so that the drop does not wait for their locks for ever. Only backends
        // holding locks on this schema's tables: other tests' schemas are left alone.
        let sql = format!(
            "SELECT pg_terminate_backend(pid) FROM (SELECT DISTINCT l.pid FROM pg_locks l \
             JOIN pg_class c ON c.oid = l.relation \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = lower('{schema}') AND l.pid <> pg_backend_pid()) AS holders; \
             SET lock_timeout = '30s'; \
             DROP SCHEMA IF EXISTS {schema} CASCADE",
            schema = self.schema
        );
        run_on_the_side(self.url.clone(), sql);
    }
}

/// The conformance suite's store under test: a fresh schema per property.
pub struct TestDatabase {
    schema: Option<TestSchema>,
}

/// A factory of [`TestDatabase`]s for `wf_core::store_conformance_tests!`.
pub fn database(property: &str) -> TestDatabase {
    TestDatabase {
        schema: TestSchema::new(property),
    }
}

impl StoreUnderTest for TestDatabase {
    fn open(&self) -> OpenFuture<'_> {
        Box::pin(async move {
            let schema = self
                .schema
                .as_ref()
                .expect("a skipped test database is never opened");
            Arc::new(schema.open().await) as Arc<dyn Store>
        })
    }

    fn durable(&self) -> bool {
        true
    }

    fn skipped(&self) -> Option<String> {
        self.schema
            .is_none()
            .then(|| format!("{URL_VAR} is not set; {HOW_TO_RUN}"))
    }
}
