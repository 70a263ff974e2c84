//! Where the runs are: a SQLite file (`--db`, opened by a client-only engine: no workers run
//! and reading changes no run; the engine registers itself in the file for wake-ups while the
//! command runs) or a wf-http server (`--url`, `--token`; for `https://` also `--ca`, and
//! `--cert` with `--key` for a client certificate).

use crate::args::TargetArgs;
use crate::exit::{Failure, NOT_FOUND};
use wf_core::{Client, Engine};
use wf_http::ConnectExt;

/// An open connection to the runs.
pub struct Session {
    /// The client every command uses.
    pub client: Client,
    /// The engine holding the file, with `--db`: closed when the command ends.
    engine: Option<Engine>,
}

impl Session {
    /// Opens `--db` or connects to `--url`.
    pub async fn open(target: &TargetArgs) -> Result<Session, Failure> {
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
                "say where the runs are: --db FILE (a SQLite database) or --url URL [--token T] (a wf-http server)",
            )),
        }
    }

    /// Whether the runs are reached over HTTP.
    pub fn is_remote(&self) -> bool {
        self.engine.is_none()
    }

    /// Closes the engine (with `--db`), so that the file is left clean.
    pub async fn close(self) {
        if let Some(engine) = self.engine {
            engine.shutdown().await;
        }
    }
}
