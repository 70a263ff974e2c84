//! A store named by one string, for tests whose child processes open the store their parent
//! made: a SQLite file's path, or `postgres:SCHEMA:URL`.

use crate::scratch::temp_db;
use crate::stores::{postgres_schema, Backend};
use std::sync::Arc;
use wf_sdk::engine::EngineBuilder;
use wf_sdk::prelude::*;

/// A fresh store on `backend` for `tag`, as a place: a new SQLite file's path, or a new
/// PostgreSQL schema as `postgres:SCHEMA:URL` (the in-memory store has none: it is a SQLite
/// file then, which a child process can open).
pub fn new_place(backend: Backend, tag: &str) -> String {
    match backend {
        Backend::Postgres => {
            let (url, options) = postgres_schema(tag);
            format!("postgres:{}:{url}", options.schema)
        }
        _ => temp_db(tag).to_string_lossy().into_owned(),
    }
}

/// The PostgreSQL URL and store options of a `postgres:SCHEMA:URL` place; `None` for a file.
fn postgres_place(place: &str) -> Option<(&str, wf_sdk::postgres::PostgresOptions)> {
    let rest = place.strip_prefix("postgres:")?;
    let (schema, url) = rest.split_once(':').expect("a place postgres:SCHEMA:URL");
    let options = wf_sdk::postgres::PostgresOptions {
        schema: schema.to_string(),
        ..Default::default()
    };
    Some((url, options))
}

/// A builder on the store at `place`.
pub fn engine_at(place: &str) -> EngineBuilder {
    match postgres_place(place) {
        Some((url, options)) => Engine::builder().postgres_with(url, options),
        None => Engine::builder().sqlite(place),
    }
}

/// A store handle of its own on the store at `place`.
pub async fn store_at(place: &str) -> Arc<dyn wf_sdk::store::Store> {
    match postgres_place(place) {
        Some((url, options)) => Arc::new(
            wf_sdk::postgres::PostgresStore::connect_with(url, options)
                .await
                .expect("the test database opens"),
        ),
        None => Arc::new(wf_sdk::store::SqliteStore::open(place).expect("the test file opens")),
    }
}
