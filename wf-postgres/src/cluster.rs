//! Throwaway PostgreSQL servers of a test's own (feature `testing`), made by the repository's
//! `.ci/postgres` script: a plain server, or a primary with a synchronous streaming standby,
//! that the test may stop, promote and restart. Stopped (by the script, which stops each server
//! by its data directory's PID) when the [`Cluster`] is dropped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The script that makes the servers.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/postgres")
}

/// What kind of cluster to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterKind {
    /// One server.
    Single,
    /// A primary and a synchronous standby (`synchronous_standby_names = '*'`): every commit
    /// the primary acknowledges is on the standby too. The URL names both, primary first, with
    /// `target_session_attrs=read-write`.
    Standby,
}

/// Servers of a test's own; see the module docs.
#[derive(Debug)]
pub struct Cluster {
    state: PathBuf,
    url: String,
    primary_port: Option<u16>,
    standby_port: Option<u16>,
}

impl Cluster {
    /// Starts a cluster of `kind`; `None` (said loudly on stderr) when this machine has no
    /// PostgreSQL to start, unless `WF_REQUIRE_POSTGRES=1`, under which that panics.
    ///
    /// # Panics
    ///
    /// When the script fails (its error output is in the message), or as above.
    pub fn start(kind: ClusterKind) -> Option<Cluster> {
        Cluster::start_listening(kind, None)
    }

    /// As [`start`](Self::start), the server listening on `extra_address` too (an address of
    /// the test's own link, e.g. a veth pair into a network namespace: it must exist), whose
    /// /24 it trusts.
    pub fn start_listening(kind: ClusterKind, extra_address: Option<&str>) -> Option<Cluster> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if !postgres_installed() {
            if crate::testing::required() {
                panic!("WF_REQUIRE_POSTGRES=1 but no PostgreSQL server binaries were found");
            }
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** PostgreSQL cluster tests SKIPPED: no initdb on PATH or in \
                 /usr/lib/postgresql/*/bin (apt-get install postgresql). ***\n"
            );
            return None;
        }
        let state = std::env::temp_dir().join(format!(
            "wf-cluster-{}-{}.state",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut cluster = Cluster {
            state,
            url: String::new(),
            primary_port: None,
            standby_port: None,
        };
        let args: &[&str] = match kind {
            ClusterKind::Single => &["start"],
            ClusterKind::Standby => &["start", "--standby"],
        };
        let out = cluster.run_with(args, extra_address);
        for line in out.lines() {
            let Some(exports) = line.strip_prefix("export ") else {
                continue;
            };
            if let Some(url) = exports.strip_prefix("WF_POSTGRES_URL=") {
                cluster.url = url.trim_matches('\'').to_string();
                continue;
            }
            for pair in exports.split_whitespace() {
                let port = |v: &str| v.parse::<u16>().ok();
                if let Some(v) = pair.strip_prefix("WF_PG_PRIMARY_PORT=") {
                    cluster.primary_port = port(v);
                } else if let Some(v) = pair.strip_prefix("WF_PG_STANDBY_PORT=") {
                    cluster.standby_port = port(v);
                }
            }
        }
        assert!(
            !cluster.url.is_empty(),
            ".ci/postgres printed no URL: {out}"
        );
        Some(cluster)
    }

    /// The connection string (for [`ClusterKind::Standby`], both servers').
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The primary's port ([`ClusterKind::Standby`] only).
    pub fn primary_port(&self) -> Option<u16> {
        self.primary_port
    }

    /// The standby's port ([`ClusterKind::Standby`] only).
    pub fn standby_port(&self) -> Option<u16> {
        self.standby_port
    }

    /// Stops the primary: `immediate` as if it crashed (no shutdown checkpoint, clients cut
    /// off), or `fast`.
    pub fn stop_primary(&self, mode: &str) {
        self.run(&["stop-primary", mode]);
    }

    /// Starts the primary (or the single server) again after [`stop_primary`](Self::stop_primary).
    pub fn start_primary(&self) {
        self.run(&["start-primary"]);
    }

    /// Promotes the standby; returns once it accepts writes.
    pub fn promote(&self) {
        self.run(&["promote"]);
    }

    /// Restarts the (single) server with `mode` (`fast` or `immediate`).
    pub fn restart(&self, mode: &str) {
        self.run(&["restart", mode]);
    }

    /// The state file the script keeps (to hand to a test that runs `.ci/postgres` itself).
    pub fn state_file(&self) -> &Path {
        &self.state
    }

    /// Runs the script with `args` on this cluster's state file; its standard output.
    fn run(&self, args: &[&str]) -> String {
        self.run_with(args, None)
    }

    /// [`run`](Self::run), with `WF_PG_EXTRA_LISTEN` set to `extra_address`.
    fn run_with(&self, args: &[&str], extra_address: Option<&str>) -> String {
        let mut command = Command::new(script());
        command.args(args).env("WF_PG_STATE", &self.state);
        if let Some(address) = extra_address {
            command.env("WF_PG_EXTRA_LISTEN", address);
        }
        let out = command
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script().display()));
        assert!(
            out.status.success(),
            ".ci/postgres {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .env("WF_PG_STATE", &self.state)
            .output();
    }
}

/// Whether `initdb` is on PATH or in Debian's PostgreSQL directories.
fn postgres_installed() -> bool {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("initdb").is_file()));
    on_path
        || std::fs::read_dir("/usr/lib/postgresql")
            .map(|versions| {
                versions
                    .flatten()
                    .any(|v| v.path().join("bin/initdb").is_file())
            })
            .unwrap_or(false)
}
