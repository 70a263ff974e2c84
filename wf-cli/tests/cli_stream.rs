//! `wf stream ID NAME [--from N] [--json]` on the three targets: a SQLite file (`--db`), a
//! PostgreSQL schema (`--postgres`, when `WF_POSTGRES_URL` names a database) and the engine
//! served over HTTP (`--url`). Started before the writes, it prints each entry as it commits
//! and exits at the close; `--from` skips, `--json` gives one object a line, and an unknown
//! workflow id exits 3.

use serde_json::{json, Value};
use std::process::{Command, Output};
use std::time::Duration;
use wf_sdk::http::{serve, ServeOptions};
use wf_sdk::prelude::*;

const TOKEN: &str = "cli-stream-token";

/// Writes `n` entries `"said i"` to stream `out`, the i-th once `allowed` passed i, then
/// closes it.
#[derive(Default)]
pub struct Talker {
    allowed: u32,
}

#[workflow(name = "talker")]
impl Talker {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<(), WorkflowError> {
        for i in 0..n {
            ctx.wait_condition(move |s| s.allowed > i).await;
            ctx.stream("out").write(&format!("said {i}"))?;
        }
        ctx.stream("out").close()?;
        Ok(())
    }

    #[signal]
    fn allow(&mut self, up_to: u32) {
        self.allowed = up_to;
    }
}

/// Runs `wf` with `args` (off the async runtime: it waits for the entries), with no `WF_*`
/// variables of the test's environment.
async fn wf(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wf"));
        command.args(&args);
        for var in ["WF_DB", "WF_URL", "WF_TOKEN", "WF_POSTGRES", "WF_PG_SCHEMA"] {
            command.env_remove(var);
        }
        command.output().unwrap()
    })
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

/// The scenario on `engine`, with `target` the arguments that reach its store or server.
async fn follows_a_stream(engine: &Engine, target: &[String]) {
    let with = |rest: &[&str]| -> Vec<String> {
        let mut all = target.to_vec();
        all.extend(rest.iter().map(|s| s.to_string()));
        all
    };
    let h = engine.client().start::<Talker>("t-1", 3).await.unwrap();
    // Started before any write: it waits, then prints each entry as it commits.
    let follower = tokio::spawn(wf(with(&["stream", "t-1", "out"])));
    h.allow(1).await.unwrap();
    wf_testkit::eventually("the first entry to be written", || async {
        let first = engine
            .client()
            .handle::<Talker>("t-1")
            .stream::<String>("out")
            .next()
            .await;
        matches!(first, Some(Ok(_))).then_some(())
    })
    .await;
    h.allow(3).await.unwrap();
    let printed = ok(&follower.await.unwrap());
    assert_eq!(printed, "0\t\"said 0\"\n1\t\"said 1\"\n2\t\"said 2\"\n");

    let tail = ok(&wf(with(&["--json", "stream", "t-1", "out", "--from", "1"])).await);
    let lines: Vec<Value> = tail
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert_eq!(
        lines,
        vec![
            json!({ "offset": 1, "value": "said 1" }),
            json!({ "offset": 2, "value": "said 2" }),
        ]
    );
    let missing = wf(with(&["stream", "nobody", "out"])).await;
    assert_eq!(missing.status.code(), Some(3), "{missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wf_stream_on_a_database_file_and_over_http() {
    let db = wf_testkit::temp_path("cli-stream", "db");
    let engine = Engine::builder()
        .sqlite(&db)
        .poll_interval(Duration::from_millis(20))
        .workflow::<Talker>()
        .build()
        .await
        .unwrap();
    follows_a_stream(&engine, &["--db".into(), db.to_str().unwrap().into()]).await;
    engine.shutdown().await;
    for ext in ["db", "db-wal", "db-shm"] {
        let _ = std::fs::remove_file(db.with_extension(ext));
    }

    let engine = Engine::builder()
        .memory()
        .workflow::<Talker>()
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
    follows_a_stream(&engine, &target).await;
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wf_stream_on_postgres() {
    let Some(db) = wf_postgres::testing::TestSchema::new("wf_cli_stream") else {
        return;
    };
    let engine = Engine::builder()
        .postgres_with(db.url(), db.options())
        .workflow::<Talker>()
        .build()
        .await
        .unwrap();
    let target = [
        "--postgres".to_string(),
        db.url().to_string(),
        "--pg-schema".into(),
        db.schema().to_string(),
    ];
    follows_a_stream(&engine, &target).await;
    engine.shutdown().await;
}
