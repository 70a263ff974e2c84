//! [`PostgresStore`]: opening (connections, migrations), the [`Backend`] that the rules run on,
//! and shutting down.

use crate::connect::Connector;
use crate::notify::Notifier;
use crate::options::{valid_schema, PostgresOptions};
use crate::tx::PostgresTx;
use crate::writer::{reader_loop, submit, writer_loop, Inbox, Queue, Settings};
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex};
use wf_core::metrics::StoreMetrics;
use wf_core::store::{
    Answer, Backend, BackendErrorKind, Durability, StoreError, StoreFuture, TxOp,
};

/// The PostgreSQL [`Store`](wf_core::store::Store): many processes on many machines share one
/// database. Writes that arrive together share one transaction (group commit); workflow and
/// activity tasks are leased with `FOR UPDATE SKIP LOCKED`; wake-ups between processes go
/// through `LISTEN/NOTIFY` (sent just after the commit, see `notify.rs`).
///
/// Opened inside a tokio runtime, whose tasks drive its connections. Dropping the store ends
/// them once the work already queued is answered.
///
/// ```no_run
/// # async fn demo() -> Result<(), wf_core::store::StoreError> {
/// use wf_core::store::Store;
/// use wf_postgres::PostgresStore;
/// let store = PostgresStore::connect("postgres://wf@db.internal/app").await?;
/// let run = store.get_run("order-42", None).await?;
/// # let _ = run; Ok(()) }
/// ```
pub struct PostgresStore {
    writes: Queue,
    reads: Queue,
    pub(crate) wake: crate::listen::Listening,
    /// The writers' transactions, batch sizes and commit times.
    metrics: Arc<StoreMetrics>,
}

impl PostgresStore {
    /// Connects with the default options (schema `wf`).
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects to the database at `url`, creates or migrates wf's schema (under an advisory
    /// lock, so several processes may open it at once) and starts the connection tasks.
    ///
    /// Fails with an `Invalid` error for a bad URL, a bad schema name or a schema newer than
    /// this wf, and `Unavailable` if the server cannot be reached.
    pub async fn connect_with(
        url: &str,
        options: PostgresOptions,
    ) -> Result<PostgresStore, StoreError> {
        if !valid_schema(&options.schema) {
            return Err(StoreError::backend(
                BackendErrorKind::Invalid,
                format!(
                    "PostgreSQL: {:?} is not a schema name wf accepts: use lower-case letters, \
                     digits and '_', starting with a letter or '_', at most 63 bytes",
                    options.schema
                ),
            ));
        }
        let connector = Arc::new(Connector::new(url, &options)?);
        let first = open_schema(&connector, &options).await?;
        let channel = crate::listen::channel(&options.schema);
        let instance = crate::listen::instance_id();
        let metrics = Arc::new(StoreMetrics::new("postgres"));
        let settings = Settings {
            max_batch: options.max_batch.max(1),
            synchronous_commit: options.synchronous_commit,
            reconnect_for: options.reconnect_for,
            notifier: Some(Notifier::start(
                Arc::clone(&connector),
                format!("NOTIFY {channel}, '{instance}'"),
            )),
            metrics: Some(Arc::clone(&metrics)),
        };
        let (writes, write_rx) = mpsc::unbounded_channel();
        let write_rx: Inbox = Arc::new(Mutex::new(write_rx));
        let mut first = Some(first);
        for _ in 0..options.writers.max(1) {
            let client = match first.take() {
                Some(client) => client,
                None => connector.connect().await?,
            };
            let tx = PostgresTx::new(client, true);
            tokio::spawn(writer_loop(
                tx,
                Arc::clone(&write_rx),
                Arc::clone(&connector),
                settings.clone(),
            ));
        }
        let (reads, read_rx) = mpsc::unbounded_channel();
        let read_rx: Inbox = Arc::new(Mutex::new(read_rx));
        let read_settings = Settings {
            notifier: None,
            metrics: None,
            ..settings
        };
        for _ in 0..options.readers.max(1) {
            let tx = PostgresTx::new(connector.connect().await?, false);
            tokio::spawn(reader_loop(
                tx,
                Arc::clone(&read_rx),
                Arc::clone(&connector),
                read_settings.clone(),
            ));
        }
        let wake = crate::listen::Listening::start(connector, channel, instance, options.listen);
        Ok(PostgresStore {
            writes,
            reads,
            wake,
            metrics,
        })
    }
}

/// The first connection, with wf's schema created or migrated on it. While the server cannot
/// be reached (refusing connections, starting up, in recovery, no server of a multi-host URL
/// accepting writes yet), tries again for up to [`PostgresOptions::reconnect_for`], so that a
/// process started beside its database (or during a failover) waits for it instead of failing.
async fn open_schema(
    connector: &Connector,
    options: &PostgresOptions,
) -> Result<tokio_postgres::Client, StoreError> {
    let until = std::time::Instant::now() + options.reconnect_for;
    let mut pause = std::time::Duration::from_millis(50);
    loop {
        let opened = async {
            let client = connector.connect().await?;
            own_sessions(connector, &client).await?;
            crate::schema::migrate(&client, &options.schema).await?;
            Ok::<_, StoreError>(client)
        }
        .await;
        match opened {
            Ok(client) => return Ok(client),
            Err(e) if unavailable(&e) && std::time::Instant::now() < until => {
                tracing::warn!(error = %e, "wf-postgres: cannot open the store yet; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_secs(1));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Refuses a pooler that lets connections share server sessions (PgBouncer's `pool_mode =
/// transaction` or `statement`): the store needs a session of its own per connection (`LISTEN`,
/// session advisory locks, prepared statements, its `search_path`). Two connections open at
/// once that find the same backend behind them share one. Asked with the simple query
/// protocol, which such a pooler serves.
async fn own_sessions(
    connector: &Connector,
    first: &tokio_postgres::Client,
) -> Result<(), StoreError> {
    async fn backend(client: &tokio_postgres::Client) -> Result<Option<String>, StoreError> {
        let messages = client
            .simple_query("SELECT pg_backend_pid()")
            .await
            .map_err(crate::rows::db("ask for the server session's process id"))?;
        Ok(messages.into_iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        }))
    }
    let one = backend(first).await?;
    let other = connector.connect().await?;
    let two = backend(&other).await?;
    if one.is_some() && one == two {
        return Err(StoreError::backend(
            BackendErrorKind::Invalid,
            "PostgreSQL: two connections of this store share one server session: a pooler in              transaction or statement mode sits between wf and the server (PgBouncer's              pool_mode = transaction). wf needs a session of its own per connection (LISTEN,              session advisory locks, prepared statements): use pool_mode = session, or connect              to the server directly",
        ));
    }
    Ok(())
}

/// Whether `e` says the server could not be reached (worth trying again).
fn unavailable(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(b) if b.kind() == BackendErrorKind::Unavailable)
}

impl Backend for PostgresStore {
    type Tx = PostgresTx;

    fn write<T: Answer>(
        &self,
        how: Durability,
        op: impl TxOp<PostgresTx, T>,
    ) -> StoreFuture<'_, T> {
        submit(&self.writes, how == Durability::Durable, None, op)
    }

    /// The latest runs of the workflow ids a group's requests name are read in one statement
    /// (see `writer.rs`'s `prefetch`).
    fn write_for<T: Answer>(
        &self,
        how: Durability,
        workflow_id: &str,
        op: impl TxOp<PostgresTx, T>,
    ) -> StoreFuture<'_, T> {
        let reads = Some(workflow_id.to_string());
        submit(&self.writes, how == Durability::Durable, reads, op)
    }

    fn read<T: Answer>(&self, op: impl TxOp<PostgresTx, T>) -> StoreFuture<'_, T> {
        submit(&self.reads, false, None, op)
    }

    /// Moves when another process commits new work (`LISTEN/NOTIFY`); `None` when
    /// [`PostgresOptions::listen`] is off.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.wake.changes()
    }

    /// The writers' transactions: how many requests each folded together, how long each
    /// took, and its `COMMIT` round trip.
    fn metrics(&self) -> Option<Arc<StoreMetrics>> {
        Some(Arc::clone(&self.metrics))
    }

    /// A commit of a run held in memory then skips the read of its run (see
    /// `PostgresTx::assume_run_row`).
    fn takes_assumed_rows(&self) -> bool {
        true
    }
}
