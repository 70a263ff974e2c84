//! Where the runs are: a SQLite file (`--db`, opened by a client-only engine: no workers run
//! and reading changes no run; the engine registers itself in the file for wake-ups while the
//! command runs), a PostgreSQL database (`--postgres`, the same with a client-only engine on
//! the PostgreSQL store) or a wf-http server (`--url`, `--token`; for `https://` also `--ca`,
//! and `--cert` with `--key` for a client certificate).

use crate::args::TargetArgs;
use crate::exit::{Failure, NOT_FOUND};
use std::sync::Arc;
use wf_core::{Client, Engine};
use wf_http::ConnectExt;
use wf_postgres::{PostgresOptions, PostgresStore};

/// An open connection to the runs.
pub struct Session {
    /// The client every command uses.
    pub client: Client,
    /// The engine holding the file or the database, with `--db` or `--postgres`: closed when
    /// the command ends.
    engine: Option<Engine>,
}

impl Session {
    /// Opens `--db` or `--postgres`, or connects to `--url`.
    pub async fn open(target: &TargetArgs) -> Result<Session, Failure> {
        if let Some(url) = &target.postgres {
            return Session::postgres(url, &target.pg_schema).await;
        }
        match (&target.db, &target.url) {
            (Some(path), None) => {
                if !path.is_file() {
                    return Err(Failure::new(
                        NOT_FOUND,
                        format!("database file {} not found", path.display()),
                    ));
                }
                let engine = Engine::builder()
                    .sqlite(path)
                    .client_only()
                    .build()
                    .await
                    .map_err(|e| {
                        Failure::from(e).with_context(&format!("opening {}", path.display()))
                    })?;
                Ok(Session {
                    client: engine.client(),
                    engine: Some(engine),
                })
            }
            (None, Some(url)) => {
                let mut connecting = Client::connect(url.as_str());
                if let Some(token) = &target.token {
                    connecting = connecting.token(token.as_str());
                }
                if let Some(ca) = &target.ca {
                    connecting = connecting.ca_file(ca);
                }
                if let (Some(cert), Some(key)) = (&target.cert, &target.key) {
                    connecting = connecting.client_cert(cert, key);
                }
                let client = connecting
                    .await
                    .map_err(|e| Failure::from(e).with_context(&format!("connecting to {url}")))?;
                Ok(Session {
                    client,
                    engine: None,
                })
            }
            _ => Err(Failure::usage(
                "say where the runs are: --db FILE (a SQLite database), --postgres URL (a PostgreSQL \
                 database) or --url URL [--token T] (a wf-http server)",
            )),
        }
    }

    /// A client-only engine on the PostgreSQL database at `url` (whose password, if any, no
    /// message shows: the store's errors leave it out, and the context names only the schema).
    async fn postgres(url: &str, schema: &str) -> Result<Session, Failure> {
        let context = format!("opening the PostgreSQL database (schema {schema})");
        // Two connections are enough for one command; LISTEN stays on, so that a waiting
        // update hears of its outcome from the worker that runs it.
        let options = PostgresOptions {
            schema: schema.to_string(),
            writers: 1,
            readers: 1,
            ..Default::default()
        };
        let store = PostgresStore::connect_with(url, options)
            .await
            .map_err(|e| Failure::from(wf_core::WfError::from(e)).with_context(&context))?;
        let engine = Engine::builder()
            .store(Arc::new(store))
            .client_only()
            .build()
            .await
            .map_err(|e| Failure::from(e).with_context(&context))?;
        Ok(Session {
            client: engine.client(),
            engine: Some(engine),
        })
    }

    /// Whether the runs are reached over HTTP.
    pub fn is_remote(&self) -> bool {
        self.engine.is_none()
    }

    /// Closes the engine (with `--db` or `--postgres`), so that the file is left clean and the
    /// connections are closed.
    pub async fn close(self) {
        if let Some(engine) = self.engine {
            engine.shutdown().await;
        }
    }
}
