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
//! version, and a newer engine appends a script instead of editing one. Every wf file carries
//! wf's `PRAGMA application_id`; before writing anything, the store checks that the file is
//! new, wf's, or exactly wf's schema from before the mark, and refuses anything else untouched.
//!
//! # Damage
//!
//! The first error that says the file is damaged (SQLite's `CORRUPT` or `NOTADB`, or a row
//! that does not decode) stops every write for good, and every later error says so and how to
//! recover.
//!
//! # Files
//!
//! `options.rs` (how a store is set up), `opening.rs` (path checks and open errors in user
//! terms), `closing.rs` (the WAL folded in at close, or an error saying why not), `identity.rs` (whose file it is: the mark and the look before any write),
//! `schema.rs` (the migrations), `writer.rs` (the writer and reader threads), `damage.rs` (the
//! failed state after damage), `rows.rs` (row and blob codecs, SQLite errors), `tx.rs` (the
//! transaction the rules see) and one file per table with its primitives. May import:
//! `crate::data`, `crate::error`, the store's records and rules.

mod activities;
mod builds;
mod closing;
mod damage;
mod engines;
mod events;
mod feed;
mod flow;
mod identity;
mod inbox;
mod opening;
mod options;
mod purge;
mod queues;
mod rows;
mod runs;
mod schedules;
mod schema;
mod search;
mod starts;
mod streams;
mod timers;
mod tx;
mod updates;
mod writer;

pub use options::SqliteOptions;
pub use tx::SqliteTx;

use super::backend::{run_ready, Answer, Backend, Durability, TxOp};
use super::StoreFuture;
use crate::error::{BackendErrorKind, StoreError};
use crate::metrics::StoreMetrics;
use damage::Health;
use identity::inspect;
use opening::Opening;
use rusqlite::{Connection, OpenFlags};
use schema::{migrate, plan};
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use writer::{reader_loop, submit, writer_loop, Request, WriterSettings};

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
    health: Arc<Health>,
    metrics: Arc<StoreMetrics>,
}

impl SqliteStore {
    /// Opens (or creates) the database file at `path` with the default options.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, SqliteOptions::default())
    }

    /// Opens (or creates) the database file at `path`: checks that the file is wf's (or new)
    /// before writing anything to it, sets WAL and the sync level, creates or migrates the
    /// schema, and starts the writer and reader threads.
    ///
    /// Refused, with an error that names the file and says what is wrong, and the file left as
    /// it was: another application's database (anything that is neither empty, nor marked
    /// as wf's, nor exactly wf's schema from before wf marked its files), a schema newer than
    /// this wf knows, a path that is empty, a directory, in a missing folder, or not readable
    /// and writable.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref();
        let opening = Opening::new(path);
        // Whose file it is, before anything is written (WAL mode writes the header).
        let state = opening.check_path()?;
        plan(inspect(opening, state)?, opening)?;

        let mut writer = open_connection(opening, &options)?;
        let mode: String = writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(|e| opening.sqlite_doing("switching it to WAL journal mode", e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(opening.fail(
                BackendErrorKind::Invalid,
                format!(
                    "SQLite would not put it in WAL journal mode (it stayed in {mode} mode); \
                     wf needs WAL, which works only on a local file system"
                ),
            ));
        }
        migrate(&mut writer, opening)?;
        writer
            .pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)
            .map_err(|e| opening.sqlite_doing("setting it up", e))?;

        let mut readers = Vec::new();
        for _ in 0..options.readers.max(1) {
            let conn = open_connection(opening, &options)?;
            conn.pragma_update(None, "query_only", true)
                .map_err(|e| opening.sqlite_doing("setting up a reader", e))?;
            readers.push(conn);
        }

        let health = Arc::new(Health::new(path));
        let metrics = Arc::new(StoreMetrics::new("sqlite"));
        let (write_tx, write_rx) = mpsc::channel::<Box<dyn Request>>();
        let settings = WriterSettings {
            max_batch: options.max_batch.max(1),
            full: options.synchronous_full,
            poll_when_quiet: options.poll_when_quiet,
            metrics: Arc::clone(&metrics),
        };
        let writer = SqliteTx { conn: writer };
        let writer_health = Arc::clone(&health);
        let writer = spawn(opening, "wf-sqlite-writer", move || {
            writer_loop(writer, write_rx, settings, writer_health)
        })?;
        let (read_tx, read_rx) = mpsc::channel::<Box<dyn Request>>();
        let read_rx = Arc::new(Mutex::new(read_rx));
        let readers = readers
            .into_iter()
            .map(|conn| {
                let rx = Arc::clone(&read_rx);
                let health = Arc::clone(&health);
                spawn(opening, "wf-sqlite-reader", move || {
                    reader_loop(SqliteTx { conn }, rx, health)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SqliteStore {
            writes: Some(write_tx),
            reads: Some(read_tx),
            writer: Some(writer),
            readers,
            health,
            metrics,
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

fn spawn(
    opening: Opening<'_>,
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, StoreError> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|e| {
            opening.fail(
                BackendErrorKind::Io,
                format!("could not start the thread {name} ({e})"),
            )
        })
}

/// A connection to the file. A path is a path, never a `file:` URI: what the path checks
/// looked at is what SQLite opens.
fn open_connection(
    opening: Opening<'_>,
    options: &SqliteOptions,
) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(opening.path, flags).map_err(|e| opening.sqlite(e))?;
    // SQLite opens a file it may not write read-only, without a word.
    if conn
        .is_readonly(rusqlite::DatabaseName::Main)
        .unwrap_or(false)
    {
        return Err(opening.fail(
            BackendErrorKind::Invalid,
            "it is read-only; wf needs to write to it",
        ));
    }
    let sync = if options.synchronous_full {
        "FULL"
    } else {
        "NORMAL"
    };
    conn.busy_timeout(options.busy_timeout)
        .and_then(|()| conn.pragma_update(None, "synchronous", sync))
        .map_err(|e| opening.sqlite_doing("setting up a connection", e))?;
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

    fn metrics(&self) -> Option<Arc<StoreMetrics>> {
        Some(Arc::clone(&self.metrics))
    }

    /// Folds the WAL into the database file (on a thread of its own: it copies up to the
    /// whole WAL), or says why it could not.
    fn close(&self) -> StoreFuture<'_, ()> {
        let health = Arc::clone(&self.health);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("wf-sqlite-close".into())
            .spawn(move || {
                let _ = tx.send(closing::fold_wal(&health));
            });
        Box::pin(async move {
            spawned.map_err(|e| {
                StoreError::backend(
                    BackendErrorKind::Io,
                    format!("could not start a thread to fold the WAL at close ({e})"),
                )
            })?;
            rx.await
                .unwrap_or_else(|_| Err(StoreError::bug("folding the WAL at close panicked")))
        })
    }
}

/// WAL pages between automatic checkpoints (SQLite's default is 1,000). A checkpoint copies
/// each page once however often the WAL holds it, and hot pages (a busy run's history and
/// row) are rewritten by nearly every commit: checkpointing four times less often copies far
/// fewer pages, for a WAL file of up to ~16 MB beside the database (10,000 pages measured no
/// faster).
const WAL_CHECKPOINT_PAGES: i64 = 4_000;
