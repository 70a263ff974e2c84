//! A worker cut off from PostgreSQL by a network partition (packets dropped, connections left
//! open): the worker runs in a network namespace of its own, joined to this machine by a veth
//! pair, and holds workflow tasks and activity attempts when the link is taken down. The other
//! worker takes its runs over within the liveness lease and every order finishes; the cut
//! worker notices within seconds (TCP keepalives and `TCP_USER_TIMEOUT`, not the kernel's
//! 15-minute retransmission limit); when the link comes back, its late writes are refused by
//! the leases it lost: every history holds each acknowledged message and each activity's
//! completion exactly once.
//!
//! Needs root (network namespaces) and PostgreSQL: elsewhere it says it was skipped and why.
#![cfg(unix)]

mod common;
#[path = "common/load.rs"]
mod load;

use load::{check_history, drive, order_id, Order, Work, RETRIES};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wf_postgres::testing::{Cluster, ClusterKind};
use wf_sdk::prelude::*;

const ORDERS: u32 = 24;
/// Each activity's run time: long enough that the cut finds attempts running.
const PAUSE_MS: u64 = 1500;
/// The engines' liveness lease: the cut worker's leases count as expired this long after its
/// last renewal.
const LIVENESS: Duration = Duration::from_secs(2);
/// The cut worker's `network_timeout`.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(4);
const SCHEMA: &str = "partition";

/// The worker in the namespace: an engine until killed, with a probe that prints when its
/// store stops and starts answering (`LOST <ms>` / `BACK <ms>`, milliseconds since the Unix
/// epoch).
#[test]
#[ignore = "runs only as the cut-off worker of the partition test"]
fn pg_partition_worker() {
    let Ok(url) = std::env::var("WF_PARTITION_URL") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let options = wf_sdk::postgres::PostgresOptions {
            schema: SCHEMA.into(),
            writers: 2,
            readers: 1,
            network_timeout: NETWORK_TIMEOUT,
            reconnect_for: Duration::from_secs(2),
            ..Default::default()
        };
        let engine = Engine::builder()
            .postgres_with(url, options)
            .poll_interval(Duration::from_millis(100))
            .liveness_lease(LIVENESS)
            .workflow::<Order>()
            .activities(Work)
            .build()
            .await
            .unwrap();
        println!("READY");
        let client = engine.client();
        let mut up = true;
        loop {
            let answered = client.list(Default::default()).await.is_ok();
            if answered != up {
                up = answered;
                println!("{} {}", if up { "BACK" } else { "LOST" }, unix_ms());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Why this machine cannot run the test, if it cannot.
fn cannot_run() -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        return Some("network namespaces need root".into());
    }
    let ip = Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ip {
        return Some("the `ip` command (iproute2) is missing".into());
    }
    None
}

/// Runs `ip` with `args`; panics (with its error output) if it fails.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace joined to this one by a veth pair (`HOST_ADDR` here, `.2` there);
/// removed with its links when dropped.
struct Link {
    ns: String,
    host_if: String,
    host_addr: String,
}

impl Link {
    fn new() -> Link {
        let n = std::process::id() % 10_000;
        let subnet = format!("10.231.{}", n % 250);
        let link = Link {
            ns: format!("wfpart{n}"),
            host_if: format!("wfh{n}"),
            host_addr: format!("{subnet}.1"),
        };
        let peer = format!("wfn{n}");
        // Leftovers of a killed run of the same pid.
        let _ = Command::new("ip").args(["netns", "del", &link.ns]).output();
        let _ = Command::new("ip")
            .args(["link", "del", &link.host_if])
            .output();
        ip(&["netns", "add", &link.ns]);
        ip(&[
            "link",
            "add",
            &link.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &peer,
        ]);
        ip(&["link", "set", &peer, "netns", &link.ns]);
        ip(&[
            "addr",
            "add",
            &format!("{}/24", link.host_addr),
            "dev",
            &link.host_if,
        ]);
        ip(&["link", "set", &link.host_if, "up"]);
        ip(&[
            "netns",
            "exec",
            &link.ns,
            "ip",
            "addr",
            "add",
            &format!("{subnet}.2/24"),
            "dev",
            &peer,
        ]);
        ip(&["netns", "exec", &link.ns, "ip", "link", "set", &peer, "up"]);
        ip(&["netns", "exec", &link.ns, "ip", "link", "set", "lo", "up"]);
        link
    }

    /// Takes the link down (packets to and from the namespace are dropped) or up again.
    fn set(&self, up: bool) {
        ip(&["link", "set", &self.host_if, if up { "up" } else { "down" }]);
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
    }
}

/// The cut-off worker process, killed (by PID) when dropped.
struct CutWorker {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl CutWorker {
    fn spawn(link: &Link, url: &str) -> CutWorker {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &link.ns])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "pg_partition_worker",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("WF_PARTITION_URL", url)
            .stdout(Stdio::piped())
            .stderr(
                std::fs::File::create(
                    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                        .join("pg_partition_worker.log"),
                )
                .map_or_else(|_| Stdio::null(), Stdio::from),
            )
            .spawn()
            .expect("start the worker in the namespace");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        CutWorker { child, lines }
    }

    /// What follows the first `word` printed within `limit` (the test harness may print on
    /// the same line first), if any.
    fn wait_for(&self, word: &str, limit: Duration) -> Option<String> {
        let until = Instant::now() + limit;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(word) => {
                    let at = line.find(word).unwrap_or(0) + word.len();
                    return Some(line[at..].trim().to_string());
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    }
}

impl Drop for CutWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The activity attempts leased at the moment (the cut worker's, while it is the only one).
async fn leased_attempts(db: &tokio_postgres::Client) -> i64 {
    db.query_one(
        &format!("SELECT count(*) FROM {SCHEMA}.activities WHERE lease_owner IS NOT NULL"),
        &[],
    )
    .await
    .map(|r| r.get(0))
    .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_worker_is_fenced_and_its_runs_move_on() {
    if let Some(why) = cannot_run() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** pg_partition SKIPPED: {why} (it makes a network namespace and a veth pair). ***\n"
        );
        return;
    }
    let link = Link::new();
    let host_addr = link.host_addr.clone();
    let Some(cluster) = tokio::task::spawn_blocking(move || {
        Cluster::start_listening(ClusterKind::Single, Some(&host_addr))
    })
    .await
    .unwrap() else {
        return;
    };
    let url = cluster.url().to_string();
    let cut_url = url.replace("127.0.0.1", &link.host_addr);
    let db = wf_postgres::connect_raw(&url).await.unwrap();
    let options = wf_sdk::postgres::PostgresOptions {
        schema: SCHEMA.into(),
        writers: 2,
        readers: 1,
        ..Default::default()
    };
    let engine = || {
        Engine::builder()
            .postgres_with(url.clone(), options.clone())
            .poll_interval(Duration::from_millis(100))
            .liveness_lease(LIVENESS)
            .workflow::<Order>()
    };
    let clients = engine().client_only().build().await.unwrap();
    let client = clients.client();

    // The cut worker alone takes the orders' first tasks and activities.
    let cut = CutWorker::spawn(&link, &cut_url);
    assert!(
        cut.wait_for("READY", Duration::from_secs(60)).is_some(),
        "the worker in the namespace started"
    );
    let drivers: Vec<_> = (0..ORDERS)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { drive(client, i, PAUSE_MS, Duration::from_millis(50)).await })
        })
        .collect();
    let held = common::eventually("the cut worker to run attempts", || async {
        let n = leased_attempts(&db).await;
        (n >= i64::from(ORDERS) / 2).then_some(n)
    })
    .await;

    link.set(false);
    let cut_at = Instant::now();
    let cut_ms = unix_ms();
    // The other worker, on this side of the cut.
    let worker = engine().activities(Work).build().await.unwrap();
    let lost = tokio::task::spawn_blocking(move || {
        let line = cut.wait_for("LOST", Duration::from_secs(60));
        (cut, line)
    });
    for (i, driver) in drivers.into_iter().enumerate() {
        tokio::time::timeout(Duration::from_secs(120), driver)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} did not finish while its worker was cut off",
                    order_id(i as u32)
                )
            })
            .unwrap();
    }
    let finished = cut_at.elapsed();
    let (cut, lost) = lost.await.unwrap();
    let noticed = lost
        .and_then(|l| l.split_whitespace().next()?.parse::<u128>().ok())
        .map(|at| Duration::from_millis((at.saturating_sub(cut_ms)) as u64))
        .expect("the cut worker noticed that its store stopped answering");
    assert!(
        noticed < NETWORK_TIMEOUT * 4,
        "the cut worker noticed after {noticed:?}, not within seconds"
    );

    // The link comes back: the cut worker reconnects, and what it still wanted to write
    // (attempts it finished meanwhile, tasks it held) is refused by the leases it lost.
    link.set(true);
    let back = tokio::task::spawn_blocking(move || {
        let line = cut.wait_for("BACK", Duration::from_secs(60));
        (cut, line)
    });
    let (cut, back) = back.await.unwrap();
    assert!(back.is_some(), "the cut worker reached its store again");
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(cut);

    for i in 0..ORDERS {
        let history = client
            .handle::<Order>(&order_id(i))
            .history()
            .await
            .unwrap();
        check_history(i, &history);
    }
    println!(
        "{ORDERS} orders, {held} activity attempts held by the worker when its link was cut: \
         it noticed after {noticed:?}; every order finished {finished:?} after the cut; {} \
         client calls retried",
        RETRIES.load(Ordering::Relaxed)
    );
    worker.shutdown().await;
    clients.shutdown().await;
    drop(cluster);
    drop(link);
}
