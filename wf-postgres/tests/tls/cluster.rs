//! The TLS tests' fixtures: certificates made when a test runs ([`Pki`], with rcgen) and a
//! PostgreSQL cluster of the test's own ([`Cluster`]: initdb, `ssl = on`, a `pg_hba.conf` that
//! refuses connections without TLS), listening on 127.0.0.1 only and stopped by its PID on
//! drop.
//!
//! Without PostgreSQL's binaries (initdb on the PATH or in /usr/lib/postgresql/*/bin) the
//! tests are skipped, saying so on stderr, unless WF_REQUIRE_POSTGRES=1, under which they
//! fail. As root the server runs as the `postgres` user (initdb refuses root).

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The user that client-certificate authentication (`hostssl ... cert`) applies to.
pub const CERT_USER: &str = "wf_cert_user";
/// The user that authenticates with a password (`hostssl ... scram-sha-256`), and its
/// password.
pub const SCRAM_USER: &str = "wf_scram_user";
pub const SCRAM_PASSWORD: &str = "s3cret-Pa55";

/// A certificate authority of a test's own.
pub struct Ca {
    key: KeyPair,
    cert: rcgen::Certificate,
}

/// A certificate and its key, PEM.
pub struct Issued {
    pub cert: String,
    pub key: String,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("a self-signed CA");
        Ca { key, cert }
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A server certificate for `names` (DNS names, or IP addresses written as such).
    pub fn server(&self, names: &[&str]) -> Issued {
        self.issue(names, |_| {})
    }

    /// A server certificate for `names` whose validity ended in 2021.
    pub fn expired_server(&self, names: &[&str]) -> Issued {
        self.issue(names, |p| {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        })
    }

    /// A client certificate whose common name is `user`.
    pub fn client(&self, user: &str) -> Issued {
        let key = KeyPair::generate().expect("a client key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params.distinguished_name.push(DnType::CommonName, user);
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("a client certificate");
        Issued {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    fn issue(&self, names: &[&str], edit: impl FnOnce(&mut CertificateParams)) -> Issued {
        let key = KeyPair::generate().expect("a server key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("server params");
        params.distinguished_name.push(DnType::CommonName, names[0]);
        params.subject_alt_names = names
            .iter()
            .map(|n| match n.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*n).try_into().expect("a DNS name")),
            })
            .collect();
        edit(&mut params);
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("a server certificate");
        Issued {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// What a cluster's server presents and trusts.
pub struct ServerTls<'a> {
    /// Its certificate and key.
    pub identity: &'a Issued,
    /// The CA its clients' certificates must chain to.
    pub client_ca: &'a Ca,
}

/// A PostgreSQL cluster of one test.
pub struct Cluster {
    dir: PathBuf,
    port: u16,
    pid: Option<u32>,
}

/// The directory of PostgreSQL's programs, found as `.ci/postgres` finds them.
fn bin_dir() -> Option<PathBuf> {
    // The PATH may hold links to some programs only: take the dir of the real initdb.
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        let initdb = std::env::split_paths(&paths)
            .map(|dir| dir.join("initdb"))
            .find(|initdb| initdb.is_file())?;
        Some(std::fs::canonicalize(initdb).ok()?.parent()?.to_path_buf())
    });
    on_path.or_else(|| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|bin| bin.join("initdb").is_file())
            .collect();
        dirs.sort_by_key(|d| {
            d.parent()
                .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
                .unwrap_or(0)
        });
        dirs.pop()
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program args...`, as the `postgres` user when we are root; panics with its output when it
/// fails.
fn run_as_server(program: &Path, args: &[&str]) {
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = command
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

impl Cluster {
    /// A cluster named after the test, with TLS as `tls` says (`None`: `ssl = off` and plain
    /// connections allowed); `None` when the tests are skipped for want of PostgreSQL.
    ///
    /// `pg_hba.conf` with TLS: [`CERT_USER`] must show a client certificate (`cert`),
    /// [`SCRAM_USER`] its password (SCRAM), every other user is trusted over TLS, and
    /// connections without TLS are rejected.
    pub fn start(test: &str, tls: Option<ServerTls<'_>>) -> Option<Cluster> {
        let Some(bin) = bin_dir() else {
            let how = "install PostgreSQL (apt-get install postgresql), or let .ci/postgres \
                       install it";
            if std::env::var("WF_REQUIRE_POSTGRES").is_ok_and(|v| v.trim() == "1") {
                panic!("WF_REQUIRE_POSTGRES=1 but no initdb was found: {how}");
            }
            eprintln!("\n*** PostgreSQL TLS test {test} SKIPPED: no initdb found: {how}. ***\n");
            return None;
        };
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "wf-pgtls-{test}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("the cluster's dir");
        let mut cluster = Cluster {
            dir,
            port: free_port(),
            pid: None,
        };
        let data = cluster.dir.join("data");
        if is_root() {
            let chown = Command::new("chown")
                .arg("postgres")
                .arg(&cluster.dir)
                .status();
            assert!(
                chown.is_ok_and(|s| s.success()),
                "chown postgres {}: is there a `postgres` user?",
                cluster.dir.display()
            );
        }
        run_as_server(
            &bin.join("initdb"),
            &[
                "-D",
                path(&data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "-N",
            ],
        );
        let mut settings = format!(
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n\
             fsync = off\nmax_connections = 40\n",
            cluster.port,
            path(&cluster.dir)
        );
        let hba = match &tls {
            Some(tls) => {
                let cert = cluster.server_file("server.crt", &tls.identity.cert);
                let key = cluster.server_file("server.key", &tls.identity.key);
                let ca = cluster.server_file("client-ca.crt", &tls.client_ca.pem());
                settings += &format!(
                    "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\nssl_ca_file = '{}'\n",
                    path(&cert),
                    path(&key),
                    path(&ca)
                );
                format!(
                    "local all all trust\n\
                     hostssl all {CERT_USER} 127.0.0.1/32 cert\n\
                     hostssl all {SCRAM_USER} 127.0.0.1/32 scram-sha-256\n\
                     hostssl all all 127.0.0.1/32 trust\n\
                     hostnossl all all 0.0.0.0/0 reject\n"
                )
            }
            None => "local all all trust\nhost all all 127.0.0.1/32 trust\n".to_string(),
        };
        cluster.server_file("data/postgresql.auto.conf", &settings);
        cluster.server_file("data/pg_hba.conf", &hba);
        let log = cluster.dir.join("server.log");
        run_as_server(
            &bin.join("pg_ctl"),
            &[
                "-D",
                path(&data),
                "-l",
                path(&log),
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        let pid = std::fs::read_to_string(data.join("postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse().ok())
            .expect("the postmaster's PID in postmaster.pid");
        cluster.pid = Some(pid);
        if tls.is_some() {
            run_as_server(
                &bin.join("psql"),
                &[
                    "-h",
                    path(&cluster.dir),
                    "-p",
                    &cluster.port.to_string(),
                    "-U",
                    "postgres",
                    "-d",
                    "postgres",
                    "-q",
                    "-c",
                    &format!("CREATE ROLE {CERT_USER} LOGIN"),
                    "-c",
                    &format!("GRANT CREATE ON DATABASE postgres TO {CERT_USER}"),
                    "-c",
                    &format!("CREATE ROLE {SCRAM_USER} LOGIN PASSWORD '{SCRAM_PASSWORD}'"),
                ],
            );
        }
        Some(cluster)
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Writes a file for the client (a CA, a client certificate or key) in the cluster's dir.
    pub fn client_file(&self, name: &str, contents: &str) -> String {
        let file = self.dir.join(name);
        std::fs::write(&file, contents).expect("a client file");
        file.display().to_string()
    }

    /// Writes a file the server reads: owned by it, readable by it only (as PostgreSQL wants
    /// of its key).
    fn server_file(&self, name: &str, contents: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let file = self.dir.join(name);
        std::fs::write(&file, contents).expect("a server file");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
        if is_root() {
            let chown = Command::new("chown").arg("postgres").arg(&file).status();
            assert!(
                chown.is_ok_and(|s| s.success()),
                "chown postgres {}",
                file.display()
            );
        }
        file
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            // SIGQUIT: PostgreSQL's immediate shutdown; then wait for the postmaster to go.
            let _ = Command::new("kill")
                .args(["-QUIT", &pid.to_string()])
                .status();
            for _ in 0..100 {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
