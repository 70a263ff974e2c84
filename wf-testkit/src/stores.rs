//! The three stores a test runs on, engines and stores on a fresh file or schema of each, and
//! the `both!` macro that runs a test body on all three.

use crate::scratch::temp_db;
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::engine::EngineBuilder;
use wf_sdk::prelude::*;

/// Which store a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The in-memory store.
    Memory,
    /// A fresh SQLite file under cargo's `target/tmp` ([`temp_db`]).
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
pub fn postgres_schema(tag: &str) -> (String, wf_sdk::postgres::PostgresOptions) {
    wf_postgres::testing::TestSchema::new(tag)
        .expect("the PostgreSQL tests run only when a database is configured")
        .keep()
}

/// A store of its own on `backend` (a fresh file or schema), for tests that wrap or share it.
pub async fn open_store(backend: Backend, tag: &str) -> Arc<dyn wf_sdk::store::Store> {
    match backend {
        Backend::Memory => Arc::new(wf_sdk::store::MemoryStore::new()),
        Backend::Sqlite => {
            Arc::new(wf_sdk::store::SqliteStore::open(temp_db(tag)).expect("the test file opens"))
        }
        Backend::Postgres => {
            let (url, options) = postgres_schema(tag);
            Arc::new(
                wf_sdk::postgres::PostgresStore::connect_with(&url, options)
                    .await
                    .expect("the test database opens"),
            )
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
    let memory = Arc::new(wf_sdk::store::MemoryStore::new());
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
/// Backend)` makes the tests `name::memory`, `name::sqlite` and `name::postgres`, the last
/// running only when `WF_POSTGRES_URL` names a database. The calling crate needs tokio (with
/// the multi-threaded runtime) among its dev-dependencies.
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        $($crate::__store_tests!($name: memory => Memory, sqlite => Sqlite, postgres => Postgres);)*
    };
}

/// Like [`both!`], without the in-memory store, for tests with a process of their own (which
/// has no way into this one's memory): `on_files_and_postgres!(name)` makes `name::sqlite` and
/// `name::postgres`, the last running only when `WF_POSTGRES_URL` names a database.
#[macro_export]
macro_rules! on_files_and_postgres {
    ($($name:ident),* $(,)?) => {
        $($crate::__store_tests!($name: sqlite => Sqlite, postgres => Postgres);)*
    };
}

/// The module of [`both!`] and [`on_files_and_postgres!`]: a test per store, PostgreSQL's
/// only with a database.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_tests {
    ($name:ident: $($test:ident => $backend:ident),*) => {
        mod $name {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let backend = $crate::Backend::$backend;
                if backend != $crate::Backend::Postgres || $crate::postgres_available() {
                    super::$name(backend).await
                }
            })*
        }
    };
}
