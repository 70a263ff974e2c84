//! Connections to the server: the parsed URL with wf's settings (the schema on the
//! `search_path`), each connection's I/O driven by a task of its own.

use crate::rows::db;
use std::str::FromStr;
use tokio_postgres::{Client, Config, NoTls};
use wf_core::store::{BackendErrorKind, StoreError};

/// Makes connections to one database, with the store's schema on their `search_path`.
pub(crate) struct Connector {
    config: Config,
    /// Run on each new connection: the session's settings.
    setup: String,
}

impl Connector {
    /// Parses `url` (`postgres://user:password@host:port/db` or `host=... user=...`); with a
    /// `network_timeout`, its connections count as lost once the server has not answered for
    /// about that long (see [`PostgresOptions::network_timeout`]).
    ///
    /// [`PostgresOptions::network_timeout`]: crate::PostgresOptions::network_timeout
    pub(crate) fn new(
        url: &str,
        schema: &str,
        connect_timeout: std::time::Duration,
        network_timeout: Option<std::time::Duration>,
    ) -> Result<Connector, StoreError> {
        let mut config = Config::from_str(url).map_err(|e| {
            StoreError::backend(
                BackendErrorKind::Invalid,
                format!(
                    "PostgreSQL: {:?} is not a connection string \
                     (postgres://user:password@host:port/database): {e}",
                    redact(url)
                ),
            )
        })?;
        config
            .application_name("wf")
            .connect_timeout(connect_timeout);
        // Settings go in statements, not the startup packet's `options`, which PgBouncer
        // refuses. `schema` passed `valid_schema`: a plain identifier.
        let mut setup = format!("SET search_path TO {schema}");
        if let Some(t) = network_timeout {
            crate::liveness::client_side(&mut config, url, t);
            setup.push_str(&crate::liveness::server_side(t));
        }
        Ok(Connector { config, setup })
    }

    /// Runs the session's settings on a new connection.
    async fn set_up(&self, client: Client) -> Result<Client, StoreError> {
        client
            .batch_execute(&self.setup)
            .await
            .map_err(db("set up the session"))?;
        Ok(client)
    }

    /// A new connection.
    pub(crate) async fn connect(&self) -> Result<Client, StoreError> {
        let (client, connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(db("connect to the server"))?;
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
            .connect(NoTls)
            .await
            .map_err(db("connect to the server"))?;
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
}

/// The URL without its password, for error messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &creds[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ if url.contains("password") => "(a connection string with a password)".to_string(),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_stay_out_of_error_messages() {
        assert_eq!(
            super::redact("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(super::redact("postgres://u@h/db"), "postgres://u@h/db");
        assert!(!super::redact("host=h password=secret").contains("secret"));
    }
}
