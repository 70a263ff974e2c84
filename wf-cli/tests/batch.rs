//! `wf batch` against an engine on a SQLite file (`--db`: the CLI stores the batch, the
//! engine running the workflows carries it out) and the same engine served over HTTP
//! (`--url`: the routes `/_batches...`, which need the admin role to start and cancel); a
//! reset batch over runs failed on a bug, once the code is fixed, both ways.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use wf_sdk::http::{serve, ServeOptions, Tokens};
use wf_sdk::prelude::*;

/// Waits for `stop`, counting `poke`s.
#[derive(Default)]
pub struct Job {
    pokes: u32,
    stop: bool,
}

#[workflow(name = "job")]
impl Job {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.stop).await;
        Ok(ctx.state(|s| s.pokes))
    }

    #[signal]
    fn poke(&mut self, n: u32) {
        self.pokes += n;
    }

    #[signal]
    fn stop(&mut self) {
        self.stop = true;
    }

    #[query]
    fn pokes(&self) -> u32 {
        self.pokes
    }
}

async fn wf(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wf"));
        command.args(&args).stdin(Stdio::null());
        for var in ["WF_DB", "WF_URL", "WF_TOKEN", "WF_POSTGRES", "WF_PG_SCHEMA"] {
            command.env_remove(var);
        }
        command.output().unwrap()
    })
    .await
    .unwrap()
}

fn args(target: &[String], rest: &[&str]) -> Vec<String> {
    target
        .iter()
        .cloned()
        .chain(rest.iter().map(|s| s.to_string()))
        .collect()
}

fn ok(o: Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "wf failed ({:?}): {}{}",
        o.status.code(),
        out,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

async fn engine_on(db: &Path) -> Engine {
    Engine::builder()
        .sqlite(db)
        .poll_interval(Duration::from_millis(20))
        .workflow::<Job>()
        .build()
        .await
        .unwrap()
}

async fn batches_run_through(target: Vec<String>, engine: &Engine) {
    let client = engine.client();
    for i in 0..6 {
        client.start::<Job>(&format!("job-{i}"), ()).await.unwrap();
    }
    // Without --yes and without a terminal: it says how many runs, and refuses.
    let refused = wf(args(&target, &["batch", "terminate", "--type", "job"])).await;
    assert_eq!(code(&refused), Some(2), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("selects 6 runs"),
        "{refused:?}"
    );
    assert!(client.batches().list().await.unwrap().is_empty());

    let out = ok(wf(args(
        &target,
        &[
            "--json", "batch", "signal", "poke", "[2]", "--type", "job", "--status", "running",
            "--yes", "--id", "b1", "--rate", "100",
        ],
    ))
    .await);
    let b: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            b["status"].as_str(),
            b["selected"].as_u64(),
            b["done"].as_u64()
        ),
        (Some("completed"), Some(6), Some(6)),
        "{b}"
    );
    for i in 0..6 {
        assert_eq!(
            client
                .handle::<Job>(&format!("job-{i}"))
                .pokes()
                .await
                .unwrap(),
            2
        );
    }
    // Pause and unpause by batch: describe names the batch as who paused.
    let out = ok(wf(args(
        &target,
        &[
            "--json", "batch", "pause", "--type", "job", "--status", "running", "--yes", "--id",
            "bp",
        ],
    ))
    .await);
    let b: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (b["action"].as_str(), b["done"].as_u64()),
        (Some("pause"), Some(6)),
        "{b}"
    );
    let paused = client
        .describe("job-0")
        .await
        .unwrap()
        .paused
        .expect("paused by the batch");
    assert_eq!(paused.by, "batch bp");
    ok(wf(args(
        &target,
        &[
            "batch", "unpause", "--type", "job", "--status", "running", "--yes", "--id", "bu",
        ],
    ))
    .await);
    assert!(client.describe("job-0").await.unwrap().paused.is_none());
    let listed = ok(wf(args(&target, &["batch", "list"])).await);
    assert!(
        listed.contains("b1") && listed.contains("signal") && listed.contains("6/6"),
        "{listed}"
    );
    let shown = ok(wf(args(&target, &["batch", "describe", "b1"])).await);
    assert!(
        shown.contains("signal poke") && shown.contains("completed"),
        "{shown}"
    );
    let missing = wf(args(&target, &["batch", "describe", "nope"])).await;
    assert_eq!(code(&missing), Some(3), "{missing:?}");

    // Terminate by a search on status; cancel of a finished batch leaves it completed.
    client.handle::<Job>("job-0").stop().await.unwrap();
    client.handle::<Job>("job-0").result().await.unwrap();
    let out = ok(wf(args(
        &target,
        &[
            "--json",
            "batch",
            "terminate",
            "--type",
            "job",
            "--status",
            "running",
            "--yes",
            "--id",
            "b2",
            "--reason",
            "cleanup",
        ],
    ))
    .await);
    let b: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            b["selected"].as_u64(),
            b["done"].as_u64(),
            b["failed"].as_u64()
        ),
        (Some(5), Some(5), Some(0)),
        "{b}"
    );
    for i in 1..6 {
        let d = client.describe(&format!("job-{i}")).await.unwrap();
        assert_eq!(d.status, RunStatus::Terminated);
    }
    let cancelled = ok(wf(args(&target, &["--json", "batch", "cancel", "b2"])).await);
    assert!(cancelled.contains("\"completed\""), "{cancelled}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_over_a_database_file() {
    let db = wf_testkit::temp_path("cli-batch-db", "db");
    let engine = engine_on(&db).await;
    let target = vec!["--db".to_string(), db.to_str().unwrap().to_string()];
    batches_run_through(target, &engine).await;
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_over_http_needs_the_admin_role_to_start() {
    let db = wf_testkit::temp_path("cli-batch-http", "db");
    let engine = engine_on(&db).await;
    let tokens = Tokens::parse("admin admin-token\nwrite write-token\n", "test tokens").unwrap();
    let server = serve(
        &engine,
        "127.0.0.1:0",
        ServeOptions::default().tokens(tokens),
    )
    .await
    .unwrap();
    let url = format!("http://{}", server.local_addr());
    let writer = vec![
        "--url".into(),
        url.clone(),
        "--token".into(),
        "write-token".into(),
    ];
    let denied = wf(args(
        &writer,
        &["batch", "cancel", "--type", "job", "--yes"],
    ))
    .await;
    assert_eq!(code(&denied), Some(4), "{denied:?}");
    ok(wf(args(&writer, &["batch", "list"])).await);
    let admin = vec!["--url".into(), url, "--token".into(), "admin-token".into()];
    batches_run_through(admin, &engine).await;
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

/// A bug: fails once told to go.
#[derive(Default)]
pub struct BuggyChore {
    go: bool,
}

#[workflow(name = "chore")]
impl BuggyChore {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        Err(WorkflowError::new(format!("bug on {n}")))
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// The fix, under the same name.
#[derive(Default)]
pub struct FixedChore {
    go: bool,
}

#[workflow(name = "chore")]
impl FixedChore {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        Ok(n * 2)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// `wf batch reset --to last-good-task` over the runs that failed on a bug, once the code is
/// fixed: each goes on from its last good task, takes its `go` signal again, and completes.
async fn a_reset_batch_fixes_failed_runs(db: &Path, over_http: bool) {
    let builder = || {
        Engine::builder()
            .sqlite(db)
            .poll_interval(Duration::from_millis(20))
    };
    let buggy = builder().workflow::<BuggyChore>().build().await.unwrap();
    let client = buggy.client();
    for i in 0..3u32 {
        let h = client
            .start::<BuggyChore>(&format!("chore-{i}"), i)
            .await
            .unwrap();
        h.go().await.unwrap();
        assert!(h.result().await.is_err(), "chore-{i} fails on the bug");
    }
    buggy.shutdown().await;

    let fixed = builder().workflow::<FixedChore>().build().await.unwrap();
    let server = match over_http {
        true => Some(
            serve(&fixed, "127.0.0.1:0", ServeOptions::default())
                .await
                .unwrap(),
        ),
        false => None,
    };
    let target = match &server {
        Some(s) => vec!["--url".to_string(), format!("http://{}", s.local_addr())],
        None => vec!["--db".to_string(), db.to_str().unwrap().to_string()],
    };
    // `--to` is required, and names a point.
    let no_point = wf(args(
        &target,
        &["batch", "reset", "--type", "chore", "--yes"],
    ))
    .await;
    assert_eq!(code(&no_point), Some(2), "{no_point:?}");
    let event = wf(args(
        &target,
        &["batch", "reset", "--to", "7", "--type", "chore", "--yes"],
    ))
    .await;
    assert_eq!(code(&event), Some(2), "{event:?}");
    let out = ok(wf(args(
        &target,
        &[
            "--json",
            "batch",
            "reset",
            "--to",
            "last-good-task",
            "--type",
            "chore",
            "--status",
            "failed",
            "--yes",
            "--id",
            "fix",
            "--reason",
            "fixed the bug",
        ],
    ))
    .await);
    let b: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            b["action"].as_str(),
            b["reset"]["to"].as_str(),
            b["reset"]["drop_messages"].as_bool(),
            b["status"].as_str(),
            b["selected"].as_u64(),
            b["done"].as_u64(),
            b["failed"].as_u64()
        ),
        (
            Some("reset"),
            Some("last-good-task"),
            Some(false),
            Some("completed"),
            Some(3),
            Some(3),
            Some(0)
        ),
        "{b}"
    );
    let client = fixed.client();
    for i in 0..3u32 {
        let h = client.handle::<FixedChore>(&format!("chore-{i}"));
        assert_eq!(h.result().await.unwrap(), i * 2, "chore-{i}");
        let origin = h.describe().await.unwrap().repaired_from.unwrap();
        assert_eq!(
            (origin.identity.as_str(), origin.reason.as_str()),
            ("batch fix", "fixed the bug")
        );
    }
    let shown = ok(wf(args(&target, &["batch", "describe", "fix"])).await);
    assert!(shown.contains("reset to last-good-task"), "{shown}");
    if let Some(server) = server {
        server.shutdown().await.unwrap();
    }
    fixed.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_reset_over_a_database_file() {
    let db = wf_testkit::temp_path("cli-batch-reset-db", "db");
    a_reset_batch_fixes_failed_runs(&db, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_reset_over_http() {
    let db = wf_testkit::temp_path("cli-batch-reset-http", "db");
    a_reset_batch_fixes_failed_runs(&db, true).await;
}
