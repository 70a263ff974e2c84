//! The PostgreSQL server restarted under load: while clients start orders and send signals
//! and updates (with ids, retried on errors as a user would) and two worker engines run them,
//! the test's server is restarted twice (`pg_ctl restart -m fast`, then `-m immediate`, a
//! crash and recovery). Every acknowledged start, signal, update and result is in history
//! exactly once, every order finishes with the right result, and each store listens again.
//! Prints how long each restart took and how soon after it an update was acknowledged.
//!
//! Needs the server `.ci/postgres start` made (its state file, `$WF_PG_STATE` or
//! `/tmp/wf-postgres.state`, says how to restart it): skipped, loudly, without
//! `WF_POSTGRES_URL` or without a state file naming that server.
#![cfg(unix)]

mod common;
#[path = "common/load.rs"]
mod load;

use common::*;
use load::{check_history, drive, median_max, order_id, retry, Order, OrderClient, Work, RETRIES};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wf_sdk::history::EventKind;
use wf_sdk::prelude::*;

const ORDERS: u32 = 100;
const PAUSE_MS: u64 = 100;

/// The state file of the test server, if it is the one `url` names.
fn state_file(url: &str) -> Option<PathBuf> {
    let path = PathBuf::from(
        std::env::var("WF_PG_STATE").unwrap_or_else(|_| "/tmp/wf-postgres.state".into()),
    );
    let state = std::fs::read_to_string(&path).ok()?;
    (state.lines().nth(2) == Some(url)).then_some(path)
}

/// Restarts the test server (`.ci/postgres restart MODE`); returns how long it took.
async fn restart_server(state: PathBuf, mode: &'static str) -> Duration {
    tokio::task::spawn_blocking(move || {
        let began = Instant::now();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../.ci/postgres");
        let out = std::process::Command::new(script)
            .args(["restart", mode])
            .env("WF_PG_STATE", &state)
            .output()
            .expect("run .ci/postgres");
        assert!(
            out.status.success(),
            ".ci/postgres restart {mode} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        began.elapsed()
    })
    .await
    .unwrap()
}

/// How many of the database's connections listen on `schema`'s channel (the last statement of
/// a listening connection is its `LISTEN`).
async fn listeners(url: &str, schema: &str) -> Option<i64> {
    let db = wf_postgres::connect_raw(url).await.ok()?;
    let row = db
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE query = $1",
            &[&format!("LISTEN wf_changes_{schema}")],
        )
        .await
        .ok()?;
    Some(row.get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_postgres_under_load_loses_nothing_and_applies_nothing_twice() {
    let Some(url) = wf_postgres::testing::url() else {
        return;
    };
    let Some(state) = state_file(&url) else {
        // Past the test harness's capture, as the other PostgreSQL skips say it.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** pg_restart SKIPPED: no state file of `.ci/postgres start` names {url} \
             ($WF_PG_STATE or /tmp/wf-postgres.state), so the test cannot restart it. To run \
             it: export WF_PG_STATE=/tmp/NAME.state; eval \"$(.ci/postgres start)\". ***\n"
        );
        return;
    };
    let (url, options) = postgres_schema("pg_restart");
    let schema = options.schema.clone();
    let engine = || {
        Engine::builder()
            .postgres_with(url.clone(), options.clone())
            .poll_interval(Duration::from_millis(100))
            .workflow::<Order>()
    };
    let workers = [
        engine().activities(Work).build().await.unwrap(),
        engine().activities(Work).build().await.unwrap(),
    ];
    let clients = engine().client_only().build().await.unwrap();
    let client = clients.client();
    // A probe order, to time the first acknowledged update after each restart.
    let probe = client.start::<Order>("probe", 0).await.unwrap();

    let drivers: Vec<_> = (0..ORDERS)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(u64::from(i) * 30)).await;
                drive(client, i, PAUSE_MS, Duration::from_millis(100)).await;
            })
        })
        .collect();

    let mut after = Vec::new();
    let mut bumps = 0u64;
    for (n, mode) in [(1, "fast"), (2, "immediate")] {
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let took = restart_server(state.clone(), mode).await;
        let up = Instant::now();
        bumps += 1;
        let total = retry("the probe's update", || {
            probe.bump(1).update_id(format!("probe-{n}"))
        })
        .await;
        assert_eq!(total, bumps);
        after.push(up.elapsed());
        println!(
            "restart {n} (-m {mode}): the server was back after {took:?}; an update was \
             acknowledged {:?} later",
            up.elapsed()
        );
    }
    for (i, driver) in drivers.into_iter().enumerate() {
        tokio::time::timeout(Duration::from_secs(180), driver)
            .await
            .unwrap_or_else(|_| panic!("{} did not finish", order_id(i as u32)))
            .unwrap();
    }
    // Activities that ran a second attempt: allowed (at least once), and reported; a lease
    // lost with a commit's answer would show as one after its start-to-close (60 s).
    let mut second_attempts = 0;
    for i in 0..ORDERS {
        let history = client
            .handle::<Order>(&order_id(i))
            .history()
            .await
            .unwrap();
        check_history(i, &history);
        second_attempts += count(
            &history,
            |k| matches!(k, EventKind::ActivityCompleted { attempts, .. } if *attempts > 1),
        );
    }
    // Each store (two workers, one client) listens again.
    let mut heard = 0;
    for _ in 0..500 {
        heard = listeners(&url, &schema).await.unwrap_or(0);
        if heard == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(heard, 3, "every store LISTENs again after the restarts");
    let (median, max) = median_max(&mut after);
    println!(
        "{ORDERS} orders across two restarts: first update acknowledged median {median:?}, \
         max {max:?} after the server was back; {} client calls retried; {second_attempts} \
         of {} activities ran a second attempt",
        RETRIES.load(Ordering::Relaxed),
        ORDERS * load::STEPS
    );
    clients.shutdown().await;
    for w in workers {
        w.shutdown().await;
    }
}
