//! How a PostgreSQL store is set up.

use crate::tls::PostgresTls;
use std::time::Duration;

/// How [`PostgresStore::connect_with`](crate::PostgresStore::connect_with) sets up the store.
///
/// ```
/// use wf_postgres::PostgresOptions;
/// let options = PostgresOptions { schema: "billing_wf".into(), ..Default::default() };
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// The schema wf's tables live in (created on open if missing), so that several
    /// applications can share one database: lower-case letters, digits and `_`, starting with
    /// a letter or `_`, at most 63 bytes. Default `wf`.
    pub schema: String,
    /// Connections that write, each running group commits (requests that arrive together
    /// share one transaction); at least one. More overlap round trips to the server.
    pub writers: usize,
    /// Connections that read, each running reads (several at once share one snapshot).
    pub readers: usize,
    /// Most requests folded into one transaction.
    pub max_batch: usize,
    /// How long a connection attempt may take before it fails.
    pub connect_timeout: Duration,
    /// How long the store keeps trying to reach the server when a connection dropped (a
    /// server restarting, a failover to a standby) before it answers callers with an
    /// `Unavailable` error; callers retry those. Work not yet begun is held, not failed, while
    /// it tries. Opening the store waits as long for a server that refuses connections or is
    /// still starting. Default 30 s.
    pub reconnect_for: Duration,
    /// How soon a connection whose other end stopped answering counts as lost (a network
    /// partition, a server host that died without closing its sockets): the client's TCP
    /// keepalives probe an idle connection and `TCP_USER_TIMEOUT` bounds data left
    /// unacknowledged, so the store notices within about this long instead of the kernel's
    /// 15 minutes, and reconnects. The server is told the same for its side of the
    /// connection (`tcp_keepalives_*`, `tcp_user_timeout`), and to end a session whose
    /// transaction sat idle for three times this long (`idle_in_transaction_session_timeout`),
    /// so that a cut-off process's locks are freed for the others. Keepalive settings in the
    /// URL (`keepalives_idle`, ...) win on the client's side. Default 10 s.
    pub network_timeout: Duration,
    /// Whether a commit waits for the server's WAL flush (`synchronous_commit = on`, the
    /// default). Writes the engine can redo (leases, heartbeats) never wait for it.
    pub synchronous_commit: bool,
    /// Whether the store listens for other processes' commits (`LISTEN`) and tells the engine
    /// when new work or an outcome is committed. Default `true`.
    pub listen: bool,
    /// TLS to the server, set in code: each setting given overrides the connection string's
    /// (`sslmode`, `sslrootcert`, `sslcert`/`sslkey`); by default the string decides. Files
    /// are read when the store opens.
    pub tls: PostgresTls,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: "wf".to_string(),
            writers: 3,
            readers: 2,
            max_batch: 256,
            connect_timeout: Duration::from_secs(10),
            reconnect_for: Duration::from_secs(30),
            network_timeout: Duration::from_secs(10),
            synchronous_commit: true,
            listen: true,
            tls: PostgresTls::default(),
        }
    }
}

/// Whether `schema` is a name wf accepts for its schema (see [`PostgresOptions::schema`]).
pub(crate) fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    let first_ok = matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_');
    first_ok
        && schema.len() <= 63
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::valid_schema;

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(valid_schema("wf"));
        assert!(valid_schema("_app_2"));
        for bad in ["", "2wf", "Wf", "wf;drop", "a\"b", "wf-x", &"a".repeat(64)] {
            assert!(!valid_schema(bad), "{bad:?} must be refused");
        }
    }
}
