//! `wf queues ... queue:NAME` on the queues of workflow starts, on every target: a SQLite file
//! (`--db`), a PostgreSQL schema (`--postgres`, when `WF_POSTGRES_URL` names a database) and a
//! served engine (`--url`): `list` shows the queues beside the flow limits, `describe` one
//! queue's settings with its runs waiting and running, `set-limit` and `remove-limit` change
//! one limit and keep the other; `--json` on each; bad forms are usage errors (exit 2).

use serde_json::{json, Value};
use std::process::{Command, Output};
use std::time::Duration;
use wf_sdk::engine::EngineBuilder;
use wf_sdk::flow::WorkflowQueue;
use wf_sdk::http::{serve, ServeOptions};
use wf_sdk::prelude::*;
use wf_testkit::gate::Gate;

/// Runs `wf` with `args` (off the async runtime), without the `WF_*` environment.
async fn wf(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_wf"))
            .args(&args)
            .env_remove("WF_URL")
            .env_remove("WF_DB")
            .env_remove("WF_TOKEN")
            .env_remove("WF_POSTGRES")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// The stdout of a command that must succeed.
fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    out
}

/// Runs the checks with `target` (the arguments that name the store) on `engine`'s store.
async fn queues_are_listed_described_and_changed(engine: &Engine, target: Vec<String>) {
    let run = |rest: &[&str]| {
        let mut args = target.clone();
        args.extend(rest.iter().map(|s| s.to_string()));
        wf(args)
    };
    let json = |o: &Output| -> Value { serde_json::from_str(&ok(o)).unwrap() };
    let queues = engine.client().workflow_queues();
    let empty = ok(&run(&["queues", "list"]).await);
    assert!(
        empty.contains("no flow limits") && empty.contains("no workflow queues"),
        "{empty}"
    );

    // Set from the CLI: one limit, then the other, each kept.
    ok(&run(&["queues", "set-limit", "queue:jobs", "--concurrency", "1"]).await);
    let set = json(
        &run(&[
            "--json",
            "queues",
            "set-limit",
            "queue:jobs",
            "--rate",
            "10",
            "--per",
            "1h",
        ])
        .await,
    );
    assert_eq!(
        set,
        json!({"name": "jobs", "concurrency": 1, "rate": {"limit": 10, "period_ms": 3_600_000}})
    );
    let jobs = WorkflowQueue::new("jobs")
        .concurrency(1)
        .rate(10, Duration::from_secs(3600));
    assert_eq!(queues.list().await.unwrap(), std::slice::from_ref(&jobs));

    // Three runs on the queue of one: one admitted, two held.
    for i in 0..3 {
        engine
            .client()
            .enqueue::<Gate>("jobs", &format!("gate-{i}"), ())
            .await
            .unwrap();
    }
    let described = ok(&run(&["queues", "describe", "queue:jobs"]).await);
    assert!(
        described.contains("queue:jobs: at most 1 at once, at most 10 per 3600s"),
        "{described}"
    );
    let row = described.lines().last().unwrap_or_default();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["2", "1", "9"],
        "waiting, running, tokens: {described}"
    );
    let usage = json(&run(&["--json", "queues", "describe", "queue:jobs"]).await);
    assert_eq!(
        usage,
        json!({"name": "jobs", "concurrency": 1,
            "rate": {"limit": 10, "period_ms": 3_600_000},
            "configured": true, "waiting": 2, "running": 1, "tokens": 9})
    );
    let listed = ok(&run(&["queues", "list"]).await);
    assert!(
        listed.contains("QUEUE") && listed.contains("queue:jobs"),
        "{listed}"
    );
    let items = json(&run(&["--json", "queues", "list"]).await);
    assert_eq!(items[0]["scope"], json!({"queue": "jobs"}), "{items}");
    assert_eq!(items[0]["waiting"], 2, "{items}");
    let unknown = json(&run(&["--json", "queues", "describe", "queue:nothing"]).await);
    assert_eq!(
        (&unknown["configured"], &unknown["waiting"]),
        (&json!(false), &json!(0))
    );

    // Raised, the held runs are admitted; the rate stays.
    ok(&run(&["queues", "set-limit", "queue:jobs", "--concurrency", "3"]).await);
    wf_testkit::eventually("the held runs admitted", || async {
        let u = queues.describe("jobs").await.unwrap();
        (u.running == 3 && u.waiting == 0).then_some(())
    })
    .await;
    assert_eq!(
        queues.list().await.unwrap(),
        [WorkflowQueue::new("jobs")
            .concurrency(3)
            .rate(10, Duration::from_secs(3600))]
    );
    let removed = ok(&run(&["queues", "remove-limit", "queue:jobs", "--rate"]).await);
    assert!(removed.contains("rate limit removed"), "{removed}");
    assert_eq!(
        queues.list().await.unwrap(),
        [WorkflowQueue::new("jobs").concurrency(3)]
    );
    let again = json(&run(&["--json", "queues", "remove-limit", "queue:jobs", "--rate"]).await);
    assert_eq!(again, json!({"removed": false}));
    // The last limit gone, the queue has no settings left.
    ok(&run(&["queues", "remove-limit", "queue:jobs", "--concurrency"]).await);
    assert!(queues.list().await.unwrap().is_empty());

    for bad in [
        &["queues", "describe", "queue:"][..],
        &["queues", "set-limit", "queue:jobs"],
        &[
            "queues",
            "set-limit",
            "queue:jobs",
            "--rate",
            "5",
            "--per",
            "1s",
            "--burst",
            "2",
        ],
        &["queues", "remove-limit", "queue:jobs"],
    ] {
        let refused = run(bad).await;
        let err = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert_eq!(refused.status.code(), Some(2), "{bad:?}: {err}");
    }
    let refused = run(&["queues", "describe", "tenant:x"]).await;
    let err = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(err.contains("queue:NAME"), "{err}");
}

/// An engine on `builder`'s store running the gate.
async fn gate_engine(builder: EngineBuilder) -> Engine {
    builder
        .poll_interval(Duration::from_millis(20))
        .workflow::<Gate>()
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_on_a_sqlite_file() {
    let db = wf_testkit::temp_db("cli-queues");
    let engine = gate_engine(Engine::builder().sqlite(&db)).await;
    let target = vec!["--db".to_string(), db.display().to_string()];
    queues_are_listed_described_and_changed(&engine, target).await;
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_on_postgres() {
    let Some(db) = wf_postgres::testing::TestSchema::new("wf_cli_queues") else {
        return;
    };
    let engine = gate_engine(Engine::builder().postgres_with(db.url(), db.options())).await;
    let target = ["--postgres", db.url(), "--pg-schema", db.schema()]
        .map(String::from)
        .to_vec();
    queues_are_listed_described_and_changed(&engine, target).await;
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_over_http() {
    let engine = gate_engine(Engine::builder().memory()).await;
    let server = serve(
        &engine,
        "127.0.0.1:0",
        ServeOptions::default().token("t-admin"),
    )
    .await
    .unwrap();
    let url = format!("http://{}", server.local_addr());
    let target = ["--url", &url, "--token", "t-admin"]
        .map(String::from)
        .to_vec();
    queues_are_listed_described_and_changed(&engine, target).await;
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}
