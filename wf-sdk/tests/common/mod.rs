//! Shared test fixtures: engines on the three stores, and workflows written the way users write
//! them.
#![allow(dead_code)]

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{EngineBuilder, EventKind, HistoryEvent, WorkflowDefinition};

/// Which store a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Memory,
    Sqlite,
    /// A schema of its own on the PostgreSQL that `WF_POSTGRES_URL` names (tests on it are
    /// skipped, loudly, without one; see `wf_postgres::testing`).
    Postgres,
}

/// Whether the PostgreSQL tests run (`WF_POSTGRES_URL` is set); panics under
/// `WF_REQUIRE_POSTGRES=1` without it.
pub fn postgres_available() -> bool {
    wf_postgres::testing::url().is_some()
}

/// A fresh schema on the test PostgreSQL for `tag`, kept for the engines that use it: the
/// URL and the store options on it.
pub fn postgres_schema(tag: &str) -> (String, wf_sdk::PostgresOptions) {
    wf_postgres::testing::TestSchema::new(tag)
        .expect("the PostgreSQL tests run only when a database is configured")
        .keep()
}

/// A store of its own on `backend` (a fresh file or schema), for tests that wrap or share it.
pub async fn open_store(backend: Backend, tag: &str) -> Arc<dyn wf_sdk::Store> {
    match backend {
        Backend::Memory => Arc::new(wf_sdk::MemoryStore::new()),
        Backend::Sqlite => {
            Arc::new(wf_sdk::SqliteStore::open(temp_db(tag)).expect("the test file opens"))
        }
        Backend::Postgres => {
            let (url, options) = postgres_schema(tag);
            Arc::new(
                wf_sdk::PostgresStore::connect_with(&url, options)
                    .await
                    .expect("the test database opens"),
            )
        }
    }
}

/// A fresh SQLite path in cargo's scratch directory for integration tests (under `target/`,
/// so test files do not pile up in the system temp dir). The first call in a test process
/// removes the files earlier runs left there.
pub fn temp_db(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(remove_stale_test_files);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "wf-test-{tag}-{}-{n}-{nanos}.db",
        std::process::id()
    ))
}

/// Removes test databases (and their WAL files) that runs of the test binaries left in cargo's
/// scratch directory: those more than ten minutes old, so that a test binary running at the
/// same time keeps its files.
fn remove_stale_test_files() {
    let Ok(entries) = std::fs::read_dir(env!("CARGO_TARGET_TMPDIR")) else {
        return;
    };
    let stale = |e: &std::fs::DirEntry| {
        e.metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(600))
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with("wf-test-") && stale(&entry) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A builder on `backend` (a fresh file for SQLite), with a fast poll interval.
pub fn builder(backend: Backend, tag: &str) -> EngineBuilder {
    let b = Engine::builder().poll_interval(Duration::from_millis(20));
    match backend {
        Backend::Memory => b.memory(),
        Backend::Sqlite => b.sqlite(temp_db(tag)),
        Backend::Postgres => {
            let (url, options) = postgres_schema(tag);
            b.postgres_with(url, options)
        }
    }
}

/// Builders of engines that share one store on `backend` (one file, or one in-memory store):
/// several processes on one database. Polls every 5 ms.
pub fn shared_store(backend: Backend, tag: &str) -> impl Fn() -> EngineBuilder {
    let path = temp_db(tag);
    let memory = Arc::new(wf_sdk::MemoryStore::new());
    let postgres = (backend == Backend::Postgres).then(|| postgres_schema(tag));
    move || {
        let b = Engine::builder().poll_interval(Duration::from_millis(5));
        match (backend, &postgres) {
            (Backend::Postgres, Some((url, options))) => b.postgres_with(url, options.clone()),
            (Backend::Sqlite, _) => b.sqlite(&path),
            _ => b.store(memory.clone()),
        }
    }
}

/// Runs a test body against the three stores: `both!(name)` for `async fn name(backend:
/// Backend)`; the PostgreSQL one only when `WF_POSTGRES_URL` names a database.
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                super::$name($crate::common::Backend::Memory).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::common::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if $crate::common::postgres_available() {
                    super::$name($crate::common::Backend::Postgres).await
                }
            }
        })*
    };
}

/// Runs this test binary again as a child process that runs only the ignored test `test` (the
/// child's entry point), with `var` set to `value` (the child returns at once without it).
pub fn spawn_test_child(
    test: &str,
    var: &str,
    value: impl AsRef<std::ffi::OsStr>,
) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(var, value)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Polls `f` until it returns `Some`, for at most 10 s of real time (a synchronization aid,
/// not a timing assertion).
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..2000 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Event kind names of a history.
pub fn kinds(history: &[HistoryEvent]) -> Vec<&'static str> {
    history.iter().map(|e| e.kind.name()).collect()
}

/// How many events of a history match `pred`.
pub fn count(history: &[HistoryEvent], pred: impl Fn(&EventKind) -> bool) -> usize {
    history.iter().filter(|e| pred(&e.kind)).count()
}

// ---------------------------------------------------------------------------------------------
// Activities

/// Activities with knobs the tests turn.
#[derive(Default)]
pub struct Tools {
    pub calls: AtomicU32,
    /// `flaky` fails this many times before succeeding.
    pub fail_first: AtomicU32,
}

#[activities]
impl Tools {
    /// Returns its input plus one.
    #[activity]
    pub async fn add_one(&self, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(n + 1)
    }

    /// Fails `fail_first` times (retryable), then returns the attempt number.
    #[activity]
    pub async fn flaky(&self, ctx: ActivityContext) -> Result<u32, ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail_first.load(Ordering::SeqCst) >= ctx.attempt() {
            return Err(ActivityError::retryable(format!(
                "attempt {} failed",
                ctx.attempt()
            )));
        }
        Ok(ctx.attempt())
    }

    /// Always fails with a non-retryable `invalid_card` error.
    #[activity]
    pub async fn decline(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(ActivityError::non_retryable(
            "invalid_card",
            "card declined",
        ))
    }

    /// Never finishes (for timeouts).
    #[activity]
    pub async fn hang(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
        Ok(())
    }

    /// Heartbeats progress from where the previous attempt stopped; the first attempt stops
    /// (hangs) after reaching `stop_at`.
    #[activity]
    pub async fn count_to(
        &self,
        ctx: ActivityContext,
        target: u32,
        stop_at: u32,
    ) -> Result<Vec<u32>, ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let start: u32 = ctx.last_heartbeat().unwrap_or(0);
        let mut done = Vec::new();
        for i in start + 1..=target {
            done.push(i);
            ctx.heartbeat(&i).await?;
            if ctx.attempt() == 1 && i == stop_at {
                std::future::pending::<()>().await;
            }
        }
        Ok(done)
    }

    /// Echoes a string.
    #[activity]
    pub async fn echo(&self, _ctx: ActivityContext, s: String) -> Result<String, ActivityError> {
        Ok(s)
    }
}

pub fn tools() -> Tools {
    Tools::default()
}

pub fn shared_tools() -> Arc<Tools> {
    Arc::new(Tools::default())
}

/// Waits until the history of `h`'s latest run holds an event matching `pred`.
pub async fn until_recorded<W: WorkflowDefinition>(
    h: &WorkflowHandle<W>,
    what: &str,
    pred: impl Fn(&EventKind) -> bool,
) {
    eventually(what, || async {
        let history = h.history().await.ok()?;
        history.iter().any(|e| pred(&e.kind)).then_some(())
    })
    .await
}
