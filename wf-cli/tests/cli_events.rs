//! `wf events [--type T] [--id ID] [--kind K].. [--after C] [--follow] [--json]` on a SQLite
//! file (`--db`), a PostgreSQL schema (`--postgres`, with `WF_POSTGRES_URL`) and the engine
//! served over HTTP (`--url`): a run's events in feed order,
//! `--json` one feed event object a line, `--follow` printing a later signal and the end
//! without exiting, and a bad kind exiting 2 with the kinds listed.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use wf_sdk::http::{serve, ServeOptions};
use wf_sdk::prelude::*;

const TOKEN: &str = "cli-events-token";

/// Waits for signal `go`, then completes.
#[derive(Default)]
pub struct Gate {
    go: bool,
}

#[workflow(name = "gate")]
impl Gate {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        Ok(())
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

fn command(args: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wf"));
    command.args(args);
    for var in ["WF_DB", "WF_URL", "WF_TOKEN", "WF_POSTGRES", "WF_PG_SCHEMA"] {
        command.env_remove(var);
    }
    command
}

async fn wf(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || command(&args).output().unwrap())
        .await
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The kind column of each printed line.
fn kinds(printed: &str) -> Vec<String> {
    printed
        .lines()
        .map(|l| l.split('\t').nth(2).expect("a kind column").to_string())
        .collect()
}

async fn prints_the_feed(engine: &Engine, target: &[String]) {
    let with = |rest: &[&str]| -> Vec<String> {
        let mut all = target.to_vec();
        all.extend(rest.iter().map(|s| s.to_string()));
        all
    };
    let h = engine.client().start::<Gate>("g-1", ()).await.unwrap();
    h.go().await.unwrap();
    h.result().await.unwrap();
    let printed = ok(&wf(with(&["events", "--id", "g-1"])).await);
    let all = kinds(&printed);
    assert_eq!(
        all.first().map(String::as_str),
        Some("started"),
        "{printed}"
    );
    assert_eq!(
        all.last().map(String::as_str),
        Some("completed"),
        "{printed}"
    );
    assert!(all.iter().any(|k| k == "signal_received"), "{printed}");
    assert!(printed.lines().all(|l| l.split('\t').nth(4) == Some("g-1")));

    let json = ok(&wf(with(&[
        "--json",
        "events",
        "--id",
        "g-1",
        "--kind",
        "signal_received",
    ]))
    .await);
    let lines: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(lines.len(), 1, "{json}");
    assert_eq!(lines[0]["kind"], "signal_received");
    assert_eq!(lines[0]["workflow_type"], "gate");
    assert_eq!(lines[0]["detail"]["name"], "go");
    assert!(lines[0]["cursor"].is_string() && lines[0]["run_id"].is_string());

    // Following: a later run's signal and end, printed while the command keeps going.
    let mut child = command(&with(&["events", "--id", "g-2", "--follow"]))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let done = line.split('\t').nth(2) == Some("completed");
            seen.push(line);
            if done {
                break;
            }
        }
        seen
    });
    let h = engine.client().start::<Gate>("g-2", ()).await.unwrap();
    h.go().await.unwrap();
    let seen = lines.await.unwrap().join("\n");
    assert!(child.try_wait().unwrap().is_none(), "--follow keeps going");
    child.kill().unwrap();
    let _ = child.wait();
    let followed = kinds(&seen);
    assert_eq!(followed.first().map(String::as_str), Some("started"));
    assert!(followed.iter().any(|k| k == "signal_received"), "{seen}");

    let bad = wf(with(&["events", "--kind", "nope"])).await;
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("unknown feed event kind") && stderr.contains("signal_received"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wf_events_on_a_database_file_and_over_http() {
    let db = wf_testkit::temp_path("cli-events", "db");
    let engine = Engine::builder()
        .sqlite(&db)
        .poll_interval(Duration::from_millis(20))
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    prints_the_feed(&engine, &["--db".into(), db.to_str().unwrap().into()]).await;
    engine.shutdown().await;
    for ext in ["db", "db-wal", "db-shm"] {
        let _ = std::fs::remove_file(db.with_extension(ext));
    }

    let engine = Engine::builder()
        .memory()
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    let server = serve(&engine, "127.0.0.1:0", ServeOptions::default().token(TOKEN))
        .await
        .unwrap();
    let target = [
        "--url".to_string(),
        format!("http://{}", server.local_addr()),
        "--token".into(),
        TOKEN.into(),
    ];
    prints_the_feed(&engine, &target).await;
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wf_events_on_postgres() {
    let Some(db) = wf_postgres::testing::TestSchema::new("wf_cli_events") else {
        return;
    };
    let engine = Engine::builder()
        .postgres_with(db.url(), db.options())
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    let target = [
        "--postgres".to_string(),
        db.url().to_string(),
        "--pg-schema".into(),
        db.schema().to_string(),
    ];
    prints_the_feed(&engine, &target).await;
    engine.shutdown().await;
}
