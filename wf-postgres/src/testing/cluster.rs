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
            if super::required() {
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

/// A PgBouncer (Debian's `pgbouncer`) of a test's own in front of a [`Cluster`]'s single
/// server, on 127.0.0.1; stopped (by its PID) when dropped.
#[derive(Debug)]
pub struct PgBouncer {
    dir: PathBuf,
    port: u16,
}

impl PgBouncer {
    /// Starts one with `pool_mode` (`session`, `transaction` or `statement`) in front of
    /// `cluster` (a [`ClusterKind::Single`] one); `None` (said loudly on stderr) when
    /// `pgbouncer` is not installed, unless `WF_REQUIRE_PGBOUNCER=1`, under which that panics.
    ///
    /// # Panics
    ///
    /// When it does not start (its log is in the message), or as above.
    pub fn start(cluster: &Cluster, pool_mode: &str) -> Option<PgBouncer> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let Some(binary) = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
            .into_iter()
            .find(|p| Path::new(p).is_file())
        else {
            if std::env::var("WF_REQUIRE_PGBOUNCER").is_ok_and(|v| v.trim() == "1") {
                panic!("WF_REQUIRE_PGBOUNCER=1 but pgbouncer is not installed");
            }
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** PgBouncer tests SKIPPED: pgbouncer is not installed (apt-get install \
                 pgbouncer). ***\n"
            );
            return None;
        };
        let server_port = cluster
            .url
            .rsplit_once(':')
            .and_then(|(_, rest)| rest.split('/').next()?.parse::<u16>().ok())
            .expect("a single server's URL names its port");
        let dir = std::env::temp_dir().join(format!(
            "wf-pgbouncer-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("make PgBouncer's directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let config = format!(
            "[databases]\n\
             * = host=127.0.0.1 port={server_port} user=postgres\n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = any\n\
             pool_mode = {pool_mode}\n\
             max_client_conn = 500\n\
             default_pool_size = 100\n\
             logfile = {dir}/pgbouncer.log\n\
             pidfile = {dir}/pgbouncer.pid\n",
            dir = dir.display()
        );
        let ini = dir.join("pgbouncer.ini");
        std::fs::write(&ini, config).expect("write pgbouncer.ini");
        // PgBouncer refuses to run as root.
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let mut command = if root {
            let _ = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .status();
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", binary]);
            c
        } else {
            Command::new(binary)
        };
        let out = command.arg("-d").arg(&ini).output().expect("run pgbouncer");
        let bouncer = PgBouncer { dir, port };
        let log = || std::fs::read_to_string(bouncer.dir.join("pgbouncer.log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "pgbouncer did not start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            log()
        );
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(bouncer);
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("pgbouncer never listened on {port}: {}", log());
    }

    /// A URL of the cluster's database through this PgBouncer.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
            // It removes its pidfile on the way out.
            for _ in 0..100 {
                if !self.dir.join("pgbouncer.pid").exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
