//! The embedded store: one SQLite file in WAL mode, durable by default (`synchronous=FULL`):
//! the same rules as every store (`store::rules`) over SQL primitives, one statement each.
//!
//! # Group commit
//!
//! One writer thread owns the write connection. Every changing method sends its work (a rule
//! over the connection) to that thread and awaits the answer. The writer blocks for a
//! first request, then takes every request already queued (up to
//! [`SqliteOptions::max_batch`]) and runs them all in ONE transaction, each inside its own
//! `SAVEPOINT`, so that one request's failure (`Conflict`, `AlreadyStarted`...) rolls back only
//! that request. It then commits once (one fsync) and only then answers every caller: a caller
//! is answered when its change is durable. If the commit fails, every caller of the batch gets
//! [`StoreError::Backend`].
//!
//! A request is queued when the method is called, not when its future is first polled, and
//! dropping the future does not withdraw it: like [`MemoryStore`](super::MemoryStore), whose
//! methods do their work at once, a call that was made happens.
//!
//! # Reads
//!
//! Reads never wait behind writes: a small pool of reader threads, each with its own connection,
//! runs each read in its own read transaction (a consistent snapshot). WAL lets them run while
//! the writer commits, and since a writer answers only after its commit, a read sent after a
//! write was answered sees that write.
//!
//! # Schema
//!
//! Created on open and migrated by `PRAGMA user_version`: `MIGRATIONS` lists one SQL script per
//! version, and a newer engine appends a script instead of editing one.
//!
//! # Files
//!
//! `options.rs` (how a store is set up), `schema.rs` (the migrations), `writer.rs` (the
//! writer and reader threads), `rows.rs` (row and blob codecs, SQLite errors), `tx.rs` (the
//! transaction the rules see) and one file per table with its primitives. May import:
//! `crate::data`, `crate::error`, the store's records and rules.

mod activities;
mod engines;
mod events;
mod inbox;
mod options;
mod rows;
mod runs;
mod schedules;
mod schema;
mod timers;
mod tx;
mod updates;
mod writer;

pub use options::SqliteOptions;
pub use tx::SqliteTx;

use super::backend::{run_ready, Answer, Backend, Durability, TxOp};
use super::StoreFuture;
use crate::error::{BackendErrorKind, StoreError};
use rows::{db, sqlite_error};
use rusqlite::{Connection, OpenFlags};
use schema::migrate;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use writer::{reader_loop, submit, writer_loop, Request};

/// The SQLite [`Store`](super::Store): one file, WAL, group commit. Several processes may share the file.
///
/// Dropping the store stops its threads; the writer first finishes (commits and answers) the
/// batch it is running.
///
/// ```no_run
/// # async fn demo() -> Result<(), wf_core::store::StoreError> {
/// use wf_core::store::{SqliteStore, Store};
/// let store = SqliteStore::open("wf.db")?;
/// let run = store.get_run("order-42", None).await?;
/// # let _ = run; Ok(()) }
/// ```
pub struct SqliteStore {
    writes: Option<mpsc::Sender<Box<dyn Request>>>,
    reads: Option<mpsc::Sender<Box<dyn Request>>>,
    writer: Option<JoinHandle<()>>,
    readers: Vec<JoinHandle<()>>,
}

impl SqliteStore {
    /// Opens (or creates) the database file at `path` with the default options.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, SqliteOptions::default())
    }

    /// Opens (or creates) the database file at `path`: sets WAL and the sync level, creates or
    /// migrates the schema, and starts the writer and reader threads.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let mut writer = open_connection(path, &options)?;
        let mode: String = writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(db("set journal_mode=WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::backend(
                BackendErrorKind::Invalid,
                format!(
                "{}: SQLite refused WAL journal mode (got {mode}); is the file on a network share?",
                path.display()
            ),
            ));
        }
        migrate(&mut writer)?;
        writer
            .pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)
            .map_err(db("set wal_autocheckpoint"))?;

        let mut readers = Vec::new();
        for _ in 0..options.readers.max(1) {
            let conn = open_connection(path, &options)?;
            conn.pragma_update(None, "query_only", true)
                .map_err(db("set query_only"))?;
            readers.push(conn);
        }

        let (write_tx, write_rx) = mpsc::channel::<Box<dyn Request>>();
        let max_batch = options.max_batch.max(1);
        let full = options.synchronous_full;
        let poll = options.poll_when_quiet;
        let writer = SqliteTx { conn: writer };
        let writer = spawn("wf-sqlite-writer", move || {
            writer_loop(writer, write_rx, max_batch, full, poll)
        })?;
        let (read_tx, read_rx) = mpsc::channel::<Box<dyn Request>>();
        let read_rx = Arc::new(Mutex::new(read_rx));
        let readers = readers
            .into_iter()
            .map(|conn| {
                let rx = Arc::clone(&read_rx);
                spawn("wf-sqlite-reader", move || {
                    reader_loop(SqliteTx { conn }, rx)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SqliteStore {
            writes: Some(write_tx),
            reads: Some(read_tx),
            writer: Some(writer),
            readers,
        })
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing a channel ends its loop once the queued requests are done, and the loop's
        // connection closes. The readers close first, the writer last: the last connection to
        // the file checkpoints the WAL into the database and deletes it, so that after a clean
        // close the database is one self-contained file. Connections closing at the same time
        // each see the others still open, and none does it. (A thread that panicked has
        // already failed its callers: its join error needs nothing more.)
        self.reads.take();
        for t in self.readers.drain(..) {
            let _ = t.join();
        }
        self.writes.take();
        if let Some(t) = self.writer.take() {
            let _ = t.join();
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StoreError> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|e| {
            StoreError::backend(
                BackendErrorKind::Io,
                format!("could not start thread {name}: {e}"),
            )
        })
}

fn open_connection(path: &Path, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| sqlite_error(&format!("could not open {}", path.display()), e))?;
    conn.busy_timeout(options.busy_timeout)
        .map_err(db("set busy_timeout"))?;
    let sync = if options.synchronous_full {
        "FULL"
    } else {
        "NORMAL"
    };
    conn.pragma_update(None, "synchronous", sync)
        .map_err(db("set synchronous"))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

impl Backend for SqliteStore {
    type Tx = SqliteTx;

    fn write<T: Answer>(&self, how: Durability, op: impl TxOp<SqliteTx, T>) -> StoreFuture<'_, T> {
        let durable = how == Durability::Durable;
        submit(self.writes.as_ref(), durable, move |tx| run_ready(op(tx)))
    }

    fn read<T: Answer>(&self, op: impl TxOp<SqliteTx, T>) -> StoreFuture<'_, T> {
        submit(self.reads.as_ref(), false, move |tx| run_ready(op(tx)))
    }
}

/// WAL pages between automatic checkpoints (SQLite's default is 1,000). A checkpoint copies
/// each page once however often the WAL holds it, and hot pages (a busy run's history and
/// row) are rewritten by nearly every commit: checkpointing four times less often copies far
/// fewer pages, for a WAL file of up to ~16 MB beside the database (10,000 pages measured no
/// faster).
const WAL_CHECKPOINT_PAGES: i64 = 4_000;
