//! Connections to the server: the connection string parsed as libpq reads it (`conninfo.rs`),
//! TLS resolved from it and from [`PostgresOptions::tls`] (`tls/`), wf's settings (the schema
//! on the `search_path`), each connection's I/O driven by a task of its own; and
//! [`connect_raw`], the same connections for code that runs its own SQL.

use crate::conninfo;
use crate::options::PostgresOptions;
use crate::rows::{error_kind, pg_error};
use crate::tls::{PostgresTls, Tls};
use std::str::FromStr;
use tokio_postgres::{Client, Config};
use wf_core::store::{BackendError, BackendErrorKind, StoreError};

/// Makes connections to one database, with the store's schema on their `search_path`.
pub(crate) struct Connector {
    config: Config,
    tls: Tls,
    /// Run on each new connection: the session's settings (empty for [`connect_raw`]).
    setup: String,
}

impl Connector {
    /// Parses `url` (`postgres://user:password@host:port/db?sslmode=...` or
    /// `host=... user=... sslmode=...`) and reads the TLS files it or `options.tls` names.
    /// Its connections count as lost once the server has not answered for about
    /// [`PostgresOptions::network_timeout`].
    pub(crate) fn new(url: &str, options: &PostgresOptions) -> Result<Connector, StoreError> {
        let mut connector = Connector::plain(url, &options.tls)?;
        connector.config.connect_timeout(options.connect_timeout);
        crate::liveness::client_side(&mut connector.config, url, options.network_timeout);
        // Settings go in statements, not the startup packet's `options` (which PgBouncer
        // refuses). `schema` passed `valid_schema`: a plain identifier.
        connector.setup = format!(
            "SET search_path TO {}{}",
            options.schema,
            crate::liveness::server_side(options.network_timeout)
        );
        Ok(connector)
    }

    /// The connection string's settings only (and `tls`'s overrides).
    fn plain(url: &str, tls: &PostgresTls) -> Result<Connector, StoreError> {
        let invalid = |e: String| {
            StoreError::backend(
                BackendErrorKind::Invalid,
                format!(
                    "PostgreSQL: {:?} is not a connection string wf can use \
                     (postgres://user:password@host:port/database?sslmode=verify-full, or \
                     host=... user=... sslmode=...): {e}",
                    conninfo::redact(url)
                ),
            )
        };
        let info = conninfo::parse(url).map_err(invalid)?;
        let mut config = Config::from_str(&info.rest).map_err(|e| invalid(e.to_string()))?;
        let tls = Tls::resolve(&info.ssl, tls).map_err(|e| {
            StoreError::backend(
                BackendErrorKind::Invalid,
                format!("PostgreSQL: TLS settings: {e}"),
            )
        })?;
        config.ssl_mode(tls.mode);
        if config.get_application_name().is_none() {
            config.application_name("wf");
        }
        Ok(Connector {
            config,
            tls,
            setup: String::new(),
        })
    }

    /// Runs the session's settings on a new connection.
    async fn set_up(&self, client: Client) -> Result<Client, StoreError> {
        if !self.setup.is_empty() {
            client
                .batch_execute(&self.setup)
                .await
                .map_err(|e| pg_error("set up the session", e))?;
        }
        Ok(client)
    }

    /// A new connection.
    pub(crate) async fn connect(&self) -> Result<Client, StoreError> {
        let (client, connection) = self
            .config
            .connect(self.tls.connect.clone())
            .await
            .map_err(|e| self.connect_error(e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "wf-postgres: a connection to the server ended");
            }
        });
        self.set_up(client).await
    }

    /// A new connection whose notifications (`LISTEN`) are sent to `notes`.
    pub(crate) async fn connect_listening(
        &self,
        notes: tokio::sync::mpsc::UnboundedSender<String>,
    ) -> Result<Client, StoreError> {
        let (client, mut connection) = self
            .config
            .connect(self.tls.connect.clone())
            .await
            .map_err(|e| self.connect_error(e))?;
        tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            use futures_util::StreamExt;
            while let Some(message) = messages.next().await {
                match message {
                    Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                        if notes.send(n.payload().to_string()).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "wf-postgres: the listening connection ended");
                        return;
                    }
                }
            }
        });
        self.set_up(client).await
    }

    /// A failed connection attempt as a store error: explained when TLS is the cause.
    fn connect_error(&self, e: tokio_postgres::Error) -> StoreError {
        const WHAT: &str = "connect to the server";
        match crate::tls::explain(&e, &self.tls.about) {
            Some((kind, said)) => StoreError::Backend(
                BackendError::new(kind, format!("PostgreSQL: {WHAT}: {said}")).with_source(e),
            ),
            // A refusal of the server's own (a SQLSTATE) says it all; a failure to connect
            // is told with its causes ("Connection refused"), which its `Display` leaves out.
            None if e.as_db_error().is_some() => pg_error(WHAT, e),
            None => StoreError::Backend(
                BackendError::new(
                    error_kind(&e),
                    format!("PostgreSQL: {WHAT}: {}", crate::tls::causes(&e)),
                )
                .with_source(e),
            ),
        }
    }
}

/// Opens one tokio-postgres connection to the database `url` names, read as the store reads
/// it: libpq's connection string in either form, with `sslmode`, `sslrootcert`, `sslcert`,
/// `sslkey`, several hosts and `target_session_attrs`. For programs that run SQL of their own
/// beside a store (tools, benchmarks, tests), so that they reach the same server the same way.
///
/// The connection's I/O runs on a task of its own: call this inside a tokio runtime. Errors
/// are the store's (`Invalid` for a bad string or TLS file, `Unavailable` when the server
/// cannot be reached), with TLS failures explained, and never show the password.
///
/// ```no_run
/// # async fn demo() -> Result<(), wf_core::store::StoreError> {
/// let client = wf_postgres::connect_raw(
///     "postgres://wf@db.internal/app?sslmode=verify-full&sslrootcert=/etc/wf/db-ca.pem",
/// )
/// .await?;
/// let rows = client.query("SELECT 1", &[]).await;
/// # let _ = rows; Ok(()) }
/// ```
pub async fn connect_raw(url: &str) -> Result<Client, StoreError> {
    connect_raw_with(url, &PostgresTls::default()).await
}

/// [`connect_raw`] with TLS settings from code overriding the string's (as
/// [`PostgresOptions::tls`] does for a store).
pub async fn connect_raw_with(url: &str, tls: &PostgresTls) -> Result<Client, StoreError> {
    Connector::plain(url, tls)?.connect().await
}
