//! Worker processes on one PostgreSQL database, one of them SIGKILLed and restarted again and
//! again while 200 orders run activities and take signals and updates (sent with ids, retried
//! on errors as a user would): every order finishes with the right result, each history holds
//! every acknowledged message once and each activity's completion once. Prints how long the
//! runs a killed process held waited before another process moved them on (the takeover
//! delay: from the kill to the first new event on each such run).
//!
//! Skipped (loudly) without `WF_POSTGRES_URL`; fails under `WF_REQUIRE_POSTGRES=1` without it.
#![cfg(unix)]

mod common;
#[path = "common/load.rs"]
mod load;

use common::*;
use load::{check_history, drive, median_max, order_id, Order, Work, RETRIES};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wf_sdk::prelude::*;

/// Orders in the test, released in waves of [`WAVE`]: a wave after each kill, so that every
/// kill lands in the middle of work.
const ORDERS: u32 = 200;
const WAVE: u32 = 50;
/// Times the victim is killed.
const KILLS: usize = 4;
/// The worker processes' liveness lease: a killed process's leases count as expired once it
/// runs out.
const LIVENESS: Duration = Duration::from_secs(1);
/// Each activity's run time.
const PAUSE_MS: u64 = 150;

/// The worker process: an engine on the schema until killed.
#[test]
#[ignore = "runs only as a worker process of the PostgreSQL crash loop"]
fn pg_crash_loop_worker() {
    let (Ok(schema), Ok(url), Ok(ready)) = (
        std::env::var("WF_PGCL_SCHEMA"),
        std::env::var("WF_PGCL_URL"),
        std::env::var("WF_PGCL_READY"),
    ) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let options = wf_sdk::postgres::PostgresOptions {
            schema,
            writers: 2,
            readers: 1,
            ..Default::default()
        };
        let _engine = Engine::builder()
            .postgres_with(url, options)
            .poll_interval(Duration::from_millis(250))
            .liveness_lease(LIVENESS)
            .max_concurrent_activities(16)
            .workflow::<Order>()
            .activities(Work)
            .build()
            .await
            .unwrap();
        std::fs::write(&ready, b"").unwrap();
        tokio::time::sleep(Duration::from_secs(300)).await;
    });
}

/// The worker processes; killed when dropped (a failing test leaves none behind).
struct Workers {
    schema: String,
    url: String,
    children: Vec<(Child, String)>,
    spawned: usize,
}

impl Drop for Workers {
    fn drop(&mut self) {
        for (child, _) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Workers {
    /// Starts worker process `slot` (replacing the one there, if any), and returns once its
    /// engine is registered; keeps its engine id.
    async fn spawn(&mut self, db: &tokio_postgres::Client, slot: usize) {
        let before = engine_ids(db, &self.schema).await;
        let n = self.spawned;
        self.spawned += 1;
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let tag = format!("wf-test-pgcl-{}-{n}", std::process::id());
        let ready = dir.join(format!("{tag}.ready"));
        let log = std::fs::File::create(dir.join(format!("{tag}.log"))).unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "pg_crash_loop_worker",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("WF_PGCL_SCHEMA", &self.schema)
            .env("WF_PGCL_URL", &self.url)
            .env("WF_PGCL_READY", &ready)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let id = eventually_for(
            Duration::from_secs(60),
            "a worker process to start",
            || async {
                if !ready.exists() {
                    return None;
                }
                let now = engine_ids(db, &self.schema).await;
                let new: Vec<String> = now.difference(&before).cloned().collect();
                assert!(new.len() <= 1, "one engine registered at a time: {new:?}");
                new.into_iter().next()
            },
        )
        .await;
        let _ = std::fs::remove_file(&ready);
        if slot < self.children.len() {
            self.children[slot] = (child, id);
        } else {
            self.children.push((child, id));
        }
    }

    /// SIGKILLs worker process `slot`; returns its engine id.
    fn kill(&mut self, slot: usize) -> String {
        let (child, id) = &mut self.children[slot];
        child.kill().unwrap();
        child.wait().unwrap();
        id.clone()
    }
}

async fn engine_ids(db: &tokio_postgres::Client, schema: &str) -> HashSet<String> {
    db.query(&format!("SELECT engine_id FROM {schema}.engines"), &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The running runs `engine` holds (a workflow task or an activity attempt leased), with the
/// next event id of each.
async fn held_by(db: &tokio_postgres::Client, schema: &str, engine: &str) -> HashMap<String, i64> {
    db.query(
        &format!(
            "SELECT run_id, next_event_id FROM {schema}.runs WHERE status = 'running' \
             AND (lease_owner = $1 OR run_id IN \
             (SELECT run_id FROM {schema}.activities WHERE lease_owner = $1))"
        ),
        &[&engine],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// Waits until each run of `held` has an event past the one it had at the kill, and returns
/// how long after `killed` each was first seen to move.
async fn takeover_delays(
    db: &tokio_postgres::Client,
    schema: &str,
    held: HashMap<String, i64>,
    killed: Instant,
) -> Vec<Duration> {
    let ids: Vec<String> = held.keys().cloned().collect();
    let mut waiting: HashSet<String> = ids.iter().cloned().collect();
    let mut delays = Vec::new();
    let sql = format!("SELECT run_id, next_event_id FROM {schema}.runs WHERE run_id = ANY($1)");
    while !waiting.is_empty() {
        if killed.elapsed() > Duration::from_secs(60) {
            let stuck: Vec<String> = waiting.iter().cloned().collect();
            panic!(
                "the killed process's runs did not move on: {}",
                describe_runs(db, schema, &stuck).await
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        let rows = db.query(&sql, &[&ids]).await.unwrap();
        let now = killed.elapsed();
        for row in rows {
            let run: String = row.get(0);
            let next: i64 = row.get(1);
            if next > held[&run] && waiting.remove(&run) {
                delays.push(now);
            }
        }
    }
    delays
}

/// The store's rows of `runs`, for a failure message.
async fn describe_runs(db: &tokio_postgres::Client, schema: &str, runs: &[String]) -> String {
    let mut out = String::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    out += &format!("(now {now})\n");
    for (what, sql) in [
        ("run", format!("SELECT run_id || ' next ' || next_event_id || ' ready ' || COALESCE(ready_at::text, '-') || ' lease ' || COALESCE(lease_owner, '-') || ' until ' || COALESCE(lease_until::text, '-') FROM {schema}.runs WHERE run_id = ANY($1)")),
        ("activity", format!("SELECT run_id || '/' || seq || ' attempt ' || attempt || ' visible ' || visible_at || ' lease ' || COALESCE(lease_owner, '-') || ' until ' || COALESCE(lease_until::text, '-') || ' deadline ' || COALESCE(attempt_deadline::text, '-') FROM {schema}.activities WHERE run_id = ANY($1)")),
        ("inbox", format!("SELECT run_id || ' #' || seq FROM {schema}.inbox WHERE run_id = ANY($1)")),
        ("engine", format!("SELECT engine_id || ' until ' || lease_until FROM {schema}.engines WHERE $1::text[] IS NOT NULL")),
    ] {
        for row in db.query(&sql, &[&runs]).await.unwrap() {
            out += &format!("{what} {}\n", row.get::<_, String>(0));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_one_killed_again_and_again_lose_nothing() {
    if !postgres_available() {
        return;
    }
    let (url, options) = postgres_schema("pg_crash_loop");
    let schema = options.schema.clone();
    let db = wf_postgres::connect_raw(&url).await.unwrap();
    // The users' side: a client-only engine in this process.
    let clients = Engine::builder()
        .postgres_with(url.clone(), options)
        .client_only()
        .poll_interval(Duration::from_millis(100))
        .workflow::<Order>()
        .build()
        .await
        .unwrap();
    let mut workers = Workers {
        schema: schema.clone(),
        url,
        children: Vec::new(),
        spawned: 0,
    };
    for slot in 0..3 {
        workers.spawn(&db, slot).await;
    }

    let (release, waves) = tokio::sync::watch::channel(1u32);
    let drivers: Vec<_> = (0..ORDERS)
        .map(|i| {
            let client = clients.client();
            let mut waves = waves.clone();
            tokio::spawn(async move {
                waves.wait_for(|w| *w > i / WAVE).await.unwrap();
                tokio::time::sleep(Duration::from_millis(u64::from(i % WAVE) * 20)).await;
                drive(client, i, PAUSE_MS, Duration::from_millis(100)).await;
            })
        })
        .collect();

    // Worker 0 is the victim: killed once it holds work, restarted at once, `KILLS` times.
    let mut delays = Vec::new();
    let mut held_runs = 0;
    for kill in 0..KILLS {
        let victim = workers.children[0].1.clone();
        eventually_for(
            Duration::from_secs(60),
            "the victim to hold work",
            || async { (!held_by(&db, &schema, &victim).await.is_empty()).then_some(()) },
        )
        .await;
        let id = workers.kill(0);
        let killed = Instant::now();
        let held = held_by(&db, &schema, &id).await;
        held_runs += held.len();
        let mut these = takeover_delays(&db, &schema, held, killed).await;
        let (median, max) = median_max(&mut these);
        println!(
            "kill {}: {} runs held, taken over after median {median:?}, max {max:?}",
            kill + 1,
            these.len()
        );
        delays.extend(these);
        workers.spawn(&db, 0).await;
        release.send_replace(kill as u32 + 2);
    }
    for (i, driver) in drivers.into_iter().enumerate() {
        tokio::time::timeout(Duration::from_secs(180), driver)
            .await
            .unwrap_or_else(|_| panic!("{} did not finish", order_id(i as u32)))
            .unwrap();
    }

    for i in 0..ORDERS {
        let history = clients
            .client()
            .handle::<Order>(&order_id(i))
            .history()
            .await
            .unwrap();
        check_history(i, &history);
    }
    let left: i64 = db
        .query_one(&format!("SELECT count(*) FROM {schema}.activities"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "activities left behind");
    assert!(
        held_runs > 0,
        "every kill was made while the victim held work"
    );
    let (median, max) = median_max(&mut delays);
    let min = delays.first().copied().unwrap_or_default();
    println!(
        "takeover delay over {KILLS} kills ({} runs held, liveness lease {LIVENESS:?}, \
         activities of {PAUSE_MS} ms): min {min:?}, median {median:?}, max {max:?}; \
         {} client calls retried",
        delays.len(),
        RETRIES.load(Ordering::Relaxed)
    );
    clients.shutdown().await;
}
