//! The built `wf` binary against a SQLite file written by an engine in the test (`--db`), a
//! PostgreSQL schema (`--postgres`, on `WF_POSTGRES_URL`'s database, TLS or not) and against a
//! served engine on 127.0.0.1:0 (`--url`, over HTTP and over HTTPS with `--ca`): what it
//! prints, what it changes, and its exit codes. Tests that do not need the file itself run
//! three ways (`three_ways!`): on the file, and on its engine served over HTTP and HTTPS.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;
use wf_http::testing::{TestPki, TestPkiFiles};
use wf_sdk::flow::{FlowLimit, FlowScope};
use wf_sdk::http::{serve, ServeOptions, Server};
use wf_sdk::prelude::*;
use wf_sdk::{
    history::{EventKind, History},
    schedule::{ScheduleAction, SchedulePolicies, ScheduleSpec},
};

/// An order: waits for `ship`, takes `add` updates, answers `notes`.
#[derive(Default)]
pub struct Order {
    notes: Vec<String>,
    total: u32,
    shipped: bool,
}

#[workflow(name = "order")]
impl Order {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, name: String) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.shipped).await;
        Ok(ctx.state(|s| format!("{name}: {} ({})", s.notes.join(","), s.total)))
    }

    #[signal]
    fn ship(&mut self, note: String) {
        self.notes.push(note);
        self.shipped = true;
    }

    #[signal]
    fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    #[query]
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    #[update]
    fn add(&mut self, n: u32) -> Result<u32, UpdateError> {
        self.total += n;
        Ok(self.total)
    }

    #[validator(add)]
    fn check_add(&self, n: &u32) -> Result<(), Rejection> {
        if *n == 0 {
            Err(Rejection::new("nothing to add"))
        } else {
            Ok(())
        }
    }
}

const TOKEN: &str = "cli-test-token";

/// A fresh path in cargo's scratch directory.
fn scratch(tag: &str, ext: &str) -> PathBuf {
    wf_testkit::temp_path(&format!("cli-{tag}"), ext)
}

/// Removes a test database and its WAL files (disk space is shared).
fn remove_db(db: &Path) {
    for ext in ["db", "db-wal", "db-shm"] {
        let _ = std::fs::remove_file(db.with_extension(ext));
    }
}

async fn engine_on(db: &Path) -> Engine {
    Engine::builder()
        .sqlite(db)
        .poll_interval(Duration::from_millis(20))
        .workflow::<Order>()
        .build()
        .await
        .unwrap()
}

/// An engine running orders, in memory.
async fn memory_engine() -> Engine {
    Engine::builder()
        .memory()
        .workflow::<Order>()
        .build()
        .await
        .unwrap()
}

/// Runs `wf` with `args` (off the async runtime: the binary may wait on the engine).
async fn wf(args: &[&str]) -> Output {
    wf_with_env(args, &[]).await
}

/// Runs `wf` with `args` and, of its `WF_*` variables, only `env`.
async fn wf_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wf"));
        command.args(&args);
        for var in [
            "WF_DB",
            "WF_URL",
            "WF_TOKEN",
            "WF_CA",
            "WF_CERT",
            "WF_KEY",
            "WF_POSTGRES",
            "WF_PG_SCHEMA",
        ] {
            command.env_remove(var);
        }
        command.envs(env).output().unwrap()
    })
    .await
    .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The output of a command that must succeed.
fn ok(o: Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// The stderr of a command that must fail with `code`, checked to be one line.
fn fails(o: Output, code: i32) -> String {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("wf: error: "), "{err}");
    err
}

/// How a test reaches its server: plain HTTP, or HTTPS with a throwaway CA given to `wf`
/// with `--ca`.
#[derive(Clone, Copy, Debug)]
enum Net {
    Http,
    Https,
}

/// The test process's certificates, as files (`wf` reads files).
fn pki() -> &'static (TestPki, TestPkiFiles) {
    static PKI: OnceLock<(TestPki, TestPkiFiles)> = OnceLock::new();
    PKI.get_or_init(|| {
        let pki = TestPki::generate(&["localhost", "127.0.0.1"]).expect("certificates");
        let dir = scratch("pki", "d");
        let files = pki.write_to(&dir).expect("certificate files");
        (pki, files)
    })
}

fn path(p: &Path) -> String {
    p.to_str().expect("a UTF-8 path").to_string()
}

impl Net {
    /// Serves `engine` on 127.0.0.1:0 with `options` (and the test certificate for HTTPS).
    async fn serve(self, engine: &Engine, options: ServeOptions) -> Server {
        let options = match self {
            Net::Http => options,
            Net::Https => options.tls(pki().0.server_tls()),
        };
        serve(engine, "127.0.0.1:0", options).await.unwrap()
    }

    /// `--url URL`, and `--ca FILE` for HTTPS.
    fn target(self, server: &Server) -> Vec<String> {
        match self {
            Net::Http => vec!["--url".into(), format!("http://{}", server.local_addr())],
            Net::Https => vec![
                "--url".into(),
                format!("https://{}", server.local_addr()),
                "--ca".into(),
                path(&pki().1.ca),
            ],
        }
    }
}

/// Where a test's `wf` commands go: the SQLite file itself (`--db`), or the engine on it
/// served over HTTP or HTTPS (`--url`).
#[derive(Clone, Copy, Debug)]
enum Via {
    File,
    Server(Net),
}

/// Runs the test body `async fn NAME(via: Via)` three ways: `NAME::db`, `NAME::http`,
/// `NAME::https`.
macro_rules! three_ways {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn db() {
                super::$name(super::Via::File).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn http() {
                super::$name(super::Via::Server(super::Net::Http)).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn https() {
                super::$name(super::Via::Server(super::Net::Https)).await
            }
        }
    };
}

/// The target arguments of a test's `wf` commands, and the server behind them.
struct Target {
    args: Vec<String>,
    server: Option<Server>,
}

impl Target {
    /// `--db FILE`, or the engine running on it served (with a token) and `--url`.
    async fn open(via: Via, db: &Path, engine: &Engine) -> Target {
        match via {
            Via::File => Target {
                args: vec!["--db".into(), path(db)],
                server: None,
            },
            Via::Server(net) => {
                let server = net
                    .serve(engine, ServeOptions::default().token(TOKEN))
                    .await;
                let mut args = net.target(&server);
                args.extend(["--token".to_string(), TOKEN.to_string()]);
                Target {
                    args,
                    server: Some(server),
                }
            }
        }
    }

    /// The target arguments, then `rest`.
    fn args<'a>(&'a self, rest: &[&'a str]) -> Vec<&'a str> {
        let mut all: Vec<&str> = self.args.iter().map(String::as_str).collect();
        all.extend_from_slice(rest);
        all
    }

    async fn close(self) {
        if let Some(server) = self.server {
            server.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_a_database_file_lists_describes_prints_and_exports_runs() {
    let db = scratch("read", "db");
    let engine = engine_on(&db).await;
    let client = engine.client();
    let waiting = client
        .start::<Order>("o-wait", "a".to_string())
        .await
        .unwrap();
    let done = client
        .start::<Order>("o-done", "b".to_string())
        .await
        .unwrap();
    done.ship("fast".to_string()).await.unwrap();
    assert_eq!(done.result().await.unwrap(), "b: fast (0)");
    let d = db.to_str().unwrap();

    let table = ok(wf(&["--db", d, "list"]).await);
    let header = table.lines().next().unwrap();
    assert!(header.starts_with("WORKFLOW ID"), "{table}");
    assert!(!table.contains('\x1b'), "no colour when piped: {table}");
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    assert!(row("o-wait").contains("running"), "{table}");
    assert!(row("o-done").contains("completed"), "{table}");
    // ISO-8601 times with their age.
    assert!(
        row("o-done").contains("Z (just now)") || row("o-done").contains(" ago)"),
        "{table}"
    );
    // Columns line up: STATUS starts at the same place in every line.
    let col = header.find("STATUS").unwrap();
    assert_eq!(&row("o-done")[col..col + 9], "completed");

    let runs: Value = serde_json::from_str(&ok(wf(&["--db", d, "--json", "list"]).await)).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let done_json = runs.iter().find(|r| r["workflow_id"] == "o-done").unwrap();
    assert_eq!(done_json["status"], "completed");
    assert_eq!(done_json["workflow_type"], "order");
    assert!(done_json["started_at"].as_str().unwrap().ends_with('Z'));
    let only: Value = serde_json::from_str(&ok(wf(&[
        "--db", d, "--json", "list", "--status", "running",
    ])
    .await))
    .unwrap();
    assert_eq!(only.as_array().unwrap().len(), 1);
    assert_eq!(only[0]["workflow_id"], "o-wait");
    fails(wf(&["--db", d, "list", "--status", "sleepy"]).await, 2);

    let described = ok(wf(&["--db", d, "describe", "o-wait"]).await);
    assert!(described.contains("running"), "{described}");
    assert!(
        described.contains(&waiting.describe().await.unwrap().run_id),
        "{described}"
    );

    let history = ok(wf(&["--db", d, "history", "o-done"]).await);
    assert!(history.contains("WorkflowStarted"), "{history}");
    assert!(
        history.contains("\"fast\""),
        "args decoded to JSON: {history}"
    );
    assert!(history.contains("WorkflowCompleted"), "{history}");
    let lines = ok(wf(&["--db", d, "--json", "history", "o-done"]).await);
    let events: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), done.history().await.unwrap().len());
    assert_eq!(events[0]["type"], "WorkflowStarted");
    assert_eq!(events[0]["attributes"]["input"], "b");

    let exported = ok(wf(&["--db", d, "export", "o-done"]).await);
    let h = History::from_json(&exported).unwrap();
    assert_eq!(h.events, done.history().await.unwrap());
    assert_eq!(h.workflow_id, "o-done");

    let dir = scratch("export", "d");
    let out = ok(wf(&["--db", d, "export", "--out", dir.to_str().unwrap()]).await);
    assert!(out.contains("exported 2 runs"), "{out}");
    let replay = ok(wf(&["replay", "--history", dir.to_str().unwrap()]).await);
    assert!(
        replay.contains("o-done") && replay.contains("WorkflowCompleted"),
        "{replay}"
    );
    ok(wf(&[
        "replay",
        "--history",
        dir.to_str().unwrap(),
        "--exec",
        "sh",
        "-c",
        "test -d \"$WF_REPLAY_HISTORY\"",
    ])
    .await);
    fails(
        wf(&[
            "replay",
            "--history",
            dir.to_str().unwrap(),
            "--exec",
            "false",
        ])
        .await,
        6,
    );
    std::fs::write(
        dir.join("zz-broken.json"),
        "{\"format\": \"wf-history\", \"version\": 7}",
    )
    .unwrap();
    let err = fails(wf(&["replay", "--history", dir.to_str().unwrap()]).await, 6);
    assert!(err.contains("1 of 3"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    engine.shutdown().await;
    remove_db(&db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_over_a_database_file_reach_the_engine_running_the_workflow() {
    let db = scratch("write", "db");
    let engine = engine_on(&db).await;
    let client = engine.client();
    let h = client.start::<Order>("o-1", "x".to_string()).await.unwrap();
    let t = client.start::<Order>("o-2", "y".to_string()).await.unwrap();
    let c = client.start::<Order>("o-3", "z".to_string()).await.unwrap();
    let d = db.to_str().unwrap();

    // Sent twice with one dedupe id: applied once.
    for _ in 0..2 {
        ok(wf(&[
            "--db",
            d,
            "signal",
            "o-1",
            "note",
            "[\"first\"]",
            "--id",
            "n-1",
        ])
        .await);
    }
    let out = ok(wf(&["--db", d, "update", "o-1", "add", "[5]", "--timeout", "60s"]).await);
    assert_eq!(out.trim(), "5");
    ok(wf(&["--db", d, "signal", "o-1", "ship", "[\"go\"]"]).await);
    assert_eq!(h.result().await.unwrap(), "x: first,go (5)");

    ok(wf(&["--db", d, "terminate", "o-2", "--reason", "test over"]).await);
    assert_eq!(t.describe().await.unwrap().status, RunStatus::Terminated);
    ok(wf(&["--db", d, "cancel", "o-3"]).await);
    // The request is recorded; this workflow's code waits on a condition, so it goes on.
    wf_testkit::until_recorded(&c, "the cancel request", |k| {
        matches!(k, EventKind::CancelRequested { .. })
    })
    .await;

    // Exit codes and one-line errors.
    let err = fails(wf(&["--db", d, "describe", "nope"]).await, 3);
    assert!(err.contains("\"nope\" not found"), "{err}");
    let err = fails(wf(&["--db", "/nonexistent/app.db", "list"]).await, 3);
    assert!(err.contains("/nonexistent/app.db not found"), "{err}");
    let err = fails(wf(&["--db", d, "query", "o-1", "notes"]).await, 2);
    assert!(err.contains("--url"), "{err}");
    fails(
        wf(&["--db", d, "signal", "o-1", "note", "not json"]).await,
        2,
    );
    fails(
        wf(&["--db", d, "signal", "o-1", "note", "{\"a\": 1}"]).await,
        2,
    );
    let err = fails(
        wf(&["--db", d, "signal", "o-1", "note", "[\"late\"]"]).await,
        5,
    );
    assert!(err.contains("finished"), "{err}");
    fails(wf(&["list"]).await, 2);
    assert_eq!(wf(&["frobnicate"]).await.status.code(), Some(2));
    assert_eq!(wf(&["--help"]).await.status.code(), Some(0));
    assert!(stdout(&wf(&["--help"]).await).contains("Exit codes"));
    engine.shutdown().await;
    remove_db(&db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_database_is_read_and_written_with_postgres() {
    let Some(db) = wf_postgres::testing::TestSchema::new("wf_cli") else {
        return;
    };
    let engine = Engine::builder()
        .postgres_with(db.url(), db.options())
        .workflow::<Order>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Order>("o-pg", "pg".to_string())
        .await
        .unwrap();
    let on_pg = |args: &[&str]| {
        let mut all = vec!["--postgres", db.url(), "--pg-schema", db.schema()];
        all.extend_from_slice(args);
        all.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        wf(&args.iter().map(String::as_str).collect::<Vec<_>>()).await
    };
    let listed = ok(run(on_pg(&["list"])).await);
    assert!(
        listed.contains("o-pg") && listed.contains("running"),
        "{listed}"
    );
    let out = ok(run(on_pg(&["update", "o-pg", "add", "[2]", "--timeout", "60s"])).await);
    assert_eq!(out.trim(), "2");
    ok(run(on_pg(&["signal", "o-pg", "ship", "[\"go\"]"])).await);
    assert_eq!(h.result().await.unwrap(), "pg: go (2)");
    let described = ok(run(on_pg(&["describe", "o-pg"])).await);
    assert!(described.contains("completed"), "{described}");
    let err = fails(run(on_pg(&["query", "o-pg", "notes"])).await, 2);
    assert!(err.contains("--url"), "{err}");
    // Another schema holds no such run.
    let err = fails(
        wf(&[
            "--postgres",
            db.url(),
            "--pg-schema",
            "wf_cli_none",
            "describe",
            "o-pg",
        ])
        .await,
        3,
    );
    assert!(err.contains("\"o-pg\" not found"), "{err}");
    engine.shutdown().await;

    // Failures name what failed, never the password.
    let err = fails(
        wf(&["--postgres", "postgres://u:hunter2@127.0.0.1:1/db", "list"]).await,
        1,
    );
    assert!(err.contains("opening the PostgreSQL database"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    let err = fails(
        wf(&[
            "--postgres",
            "postgres://u:hunter2@127.0.0.1:1/db?sslmode=verify-fully",
            "list",
        ])
        .await,
        1,
    );
    assert!(
        err.contains("sslmode=\"verify-fully\" is not a mode"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    let both = wf(&["--postgres", db.url(), "--db", "x.db", "list"]).await;
    assert_eq!(
        both.status.code(),
        Some(2),
        "--db and --postgres exclude each other"
    );
}

mod a_served_engine_answers_queries_updates_exports_and_purges_over_url {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn http() {
        super::a_served_engine_answers_queries_updates_exports_and_purges_over_url(super::Net::Http)
            .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn https() {
        super::a_served_engine_answers_queries_updates_exports_and_purges_over_url(
            super::Net::Https,
        )
        .await
    }
}
async fn a_served_engine_answers_queries_updates_exports_and_purges_over_url(net: Net) {
    let engine = memory_engine().await;
    let server = net
        .serve(&engine, ServeOptions::default().token(TOKEN))
        .await;
    let target = net.target(&server);
    let client = engine.client();
    let h = client
        .start::<Order>("o-url", "u".to_string())
        .await
        .unwrap();
    h.note("seen".to_string()).await.unwrap();
    let remote = |args: &[&str]| {
        let mut all: Vec<&str> = target.iter().map(String::as_str).collect();
        all.extend(["--token", TOKEN]);
        all.extend_from_slice(args);
        all.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        wf(&refs).await
    };

    assert_eq!(
        ok(run(remote(&["query", "o-url", "notes"])).await).trim(),
        "[\"seen\"]"
    );
    let q: Value = serde_json::from_str(&ok(
        run(remote(&["--json", "query", "o-url", "notes"])).await
    ))
    .unwrap();
    assert_eq!(q["result"][0], "seen");
    assert_eq!(
        ok(run(remote(&["update", "o-url", "add", "[3]"])).await).trim(),
        "3"
    );
    let err = fails(run(remote(&["update", "o-url", "add", "[0]"])).await, 5);
    assert!(err.contains("nothing to add"), "{err}");
    // The server checks argument types against the handler.
    fails(
        run(remote(&["update", "o-url", "add", "[\"three\"]"])).await,
        2,
    );
    let err = fails(run(remote(&["query", "o-url", "nope"])).await, 5);
    assert!(err.contains("nope"), "{err}");
    fails(run(remote(&["describe", "missing"])).await, 3);

    let exported = ok(run(remote(&["export", "o-url"])).await);
    let history = History::from_json(&exported).unwrap();
    assert_eq!(history.events, h.history().await.unwrap());
    assert!(history
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::UpdateCompleted { .. })));
    assert_eq!(h.export().await.unwrap(), history);

    let listed = ok(run(remote(&["list", "--type", "order"])).await);
    assert!(listed.contains("o-url"), "{listed}");
    ok(run(remote(&["signal", "o-url", "ship", "[\"done\"]"])).await);
    let followed = ok(run(remote(&["history", "o-url", "--follow"])).await);
    assert!(followed.contains("WorkflowCompleted"), "{followed}");
    // Retention on demand over HTTP: the closed run goes.
    let counted = ok(run(remote(&["purge", "--closed-before", "0s", "--dry-run"])).await);
    assert!(counted.starts_with("would purge 1 runs"), "{counted}");
    let purged = ok(run(remote(&["purge", "--closed-before", "0s"])).await);
    assert!(purged.starts_with("purged 1 runs"), "{purged}");
    fails(run(remote(&["describe", "o-url"])).await, 3);

    let mut wrong: Vec<&str> = target.iter().map(String::as_str).collect();
    wrong.extend(["--token", "wrong", "list"]);
    let err = fails(wf(&wrong).await, 4);
    assert!(err.contains("refused the token"), "{err}");
    let err = fails(wf(&["--url", "http://127.0.0.1:9", "list"]).await, 1);
    assert!(err.contains("connecting to http://127.0.0.1:9"), "{err}");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

/// A token whose role is below a command's: exit 4 (token refused), with a message that names
/// the role the command needs and the token's, and never the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_below_the_commands_role_exits_4_naming_the_roles() {
    let engine = memory_engine().await;
    let options = ServeOptions::default()
        .token_with_role(wf_sdk::http::Role::Read, "cli-read-token")
        .token(TOKEN);
    let server = serve(&engine, "127.0.0.1:0", options).await.unwrap();
    let url = format!("http://{}", server.local_addr());
    engine
        .client()
        .start::<Order>("o-roles", "r".to_string())
        .await
        .unwrap();
    let url = url.as_str();
    let reader = "cli-read-token";
    // Reading is fine...
    let described = ok(wf(&["--url", url, "--token", reader, "describe", "o-roles"]).await);
    assert!(described.contains("running"), "{described}");
    // ...changing is not.
    let err = fails(
        wf(&["--url", url, "--token", reader, "terminate", "o-roles"]).await,
        4,
    );
    assert!(
        err.contains("403 forbidden")
            && err.contains("needs a token with the admin role")
            && err.contains("this token has the read role"),
        "{err}"
    );
    assert!(!err.contains("cli-read-token"), "{err}");
    let err = fails(
        wf(&[
            "--url", url, "--token", reader, "signal", "o-roles", "note", "[\"x\"]",
        ])
        .await,
        4,
    );
    assert!(err.contains("the write role"), "{err}");
    let d = engine.client().describe("o-roles").await.unwrap();
    assert_eq!(d.status, RunStatus::Running, "nothing changed");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_client_certificate_from_the_environment_and_clear_refusals() {
    let engine = memory_engine().await;
    let (pki, files) = pki();
    let options = ServeOptions::default().token(TOKEN).tls(pki.mtls_server());
    let server = serve(&engine, "127.0.0.1:0", options).await.unwrap();
    engine
        .client()
        .start::<Order>("o-mtls", "m".to_string())
        .await
        .unwrap();
    let url = format!("https://{}", server.local_addr());
    let (ca, cert, key) = (
        path(&files.ca),
        path(&files.client_cert),
        path(&files.client_key),
    );
    let env = [
        ("WF_URL", url.as_str()),
        ("WF_TOKEN", TOKEN),
        ("WF_CA", ca.as_str()),
        ("WF_CERT", cert.as_str()),
        ("WF_KEY", key.as_str()),
    ];
    let listed = ok(wf_with_env(&["list"], &env).await);
    assert!(listed.contains("o-mtls"), "{listed}");
    let flags = [
        "--url", &url, "--token", TOKEN, "--ca", &ca, "--cert", &cert, "--key", &key,
    ];
    let mut described = flags.to_vec();
    described.extend(["describe", "o-mtls"]);
    assert!(ok(wf(&described).await).contains("o-mtls"));

    // No client certificate, a CA that did not sign the server's, --cert without --key.
    let err = fails(wf(&["--url", &url, "--ca", &ca, "list"]).await, 1);
    assert!(
        err.contains("requires a client certificate") && err.contains("--cert FILE --key FILE"),
        "{err}"
    );
    let (_, strange) = {
        let other = TestPki::generate(&["localhost"]).unwrap();
        let files = other.write_to(&scratch("other-ca", "d")).unwrap();
        (other, files)
    };
    let other_ca = path(&strange.ca);
    let err = fails(wf(&["--url", &url, "--ca", &other_ca, "list"]).await, 1);
    assert!(
        err.contains("not signed by a CA this client trusts (--ca FILE)"),
        "{err}"
    );
    let err = fails(
        wf(&["--url", &url, "--ca", "/nonexistent/ca.pem", "list"]).await,
        2,
    );
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    let usage = wf(&["--url", &url, "--cert", &cert, "list"]).await;
    assert_eq!(usage.status.code(), Some(2), "{}", stderr(&usage));
    assert!(stderr(&usage).contains("--key"), "{}", stderr(&usage));
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

three_ways!(schedules_are_listed_described_paused_and_deleted);
async fn schedules_are_listed_described_paused_and_deleted(via: Via) {
    let db = scratch("sched", "db");
    let engine = engine_on(&db).await;
    engine
        .client()
        .schedules()
        .create(
            "nightly",
            ScheduleSpec::every(Duration::from_secs(86_400)),
            ScheduleAction::start::<Order>("night", &"n".to_string()).unwrap(),
            SchedulePolicies::default(),
        )
        .await
        .unwrap();
    let t = Target::open(via, &db, &engine).await;
    let list = ok(wf(&t.args(&["schedule", "list"])).await);
    assert!(list.contains("nightly") && list.contains("order"), "{list}");
    ok(wf(&t.args(&["schedule", "pause", "nightly", "--note", "maintenance"])).await);
    let described: Value = serde_json::from_str(&ok(wf(
        &t.args(&["--json", "schedule", "describe", "nightly"])
    )
    .await))
    .unwrap();
    assert_eq!(described["paused"], true);
    assert_eq!(described["note"], "maintenance");
    ok(wf(&t.args(&["schedule", "unpause", "nightly"])).await);
    let shown = ok(wf(&t.args(&["schedule", "describe", "nightly"])).await);
    assert!(
        shown.contains("running") && shown.contains("next fire"),
        "{shown}"
    );
    ok(wf(&t.args(&["schedule", "delete", "nightly"])).await);
    fails(wf(&t.args(&["schedule", "describe", "nightly"])).await, 3);
    t.close().await;
    engine.shutdown().await;
    remove_db(&db);
}

three_ways!(schedule_create_makes_a_schedule_that_fires);
/// `wf schedule create`: an interval schedule fires on its own (list and describe show it and
/// its action), also when created over a database file, whose client-only engine does not
/// know the type; a calendar schedule is stored as given and fires on `trigger`; bad flags
/// are usage errors, a taken id is refused.
async fn schedule_create_makes_a_schedule_that_fires(via: Via) {
    let db = scratch("sched-create", "db");
    let engine = engine_on(&db).await;
    let t = Target::open(via, &db, &engine).await;
    let out = ok(wf(&t.args(&[
        "--json",
        "schedule",
        "create",
        "tick",
        "--type",
        "order",
        "--input",
        "\"t\"",
        "--every",
        "1s",
        "--overlap",
        "allow-all",
        "--id-prefix",
        "ticked",
    ]))
    .await);
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (created["schedule_id"].as_str(), created["done"].as_str()),
        (Some("tick"), Some("created")),
        "{created}"
    );
    let list = ok(wf(&t.args(&["schedule", "list"])).await);
    assert!(list.contains("tick") && list.contains("order"), "{list}");
    let client = engine.client();
    let fired =
        wf_testkit::eventually_for(Duration::from_secs(20), "the schedule fires", || async {
            let runs = client
                .list(wf_sdk::client::ListFilter::default())
                .await
                .ok()?;
            runs.into_iter()
                .find(|r| r.workflow_id.starts_with("ticked-"))
        })
        .await;
    assert_eq!(fired.workflow_type, "order");
    let h = client.handle::<Order>(&fired.workflow_id);
    h.ship("shipped".into()).await.unwrap();
    assert_eq!(h.result().await.unwrap(), "t: shipped (0)");
    let described: Value = serde_json::from_str(&ok(wf(
        &t.args(&["--json", "schedule", "describe", "tick"])
    )
    .await))
    .unwrap();
    assert_eq!(described["workflow_type"], "order");
    assert_eq!(described["workflow_id_prefix"], "ticked");
    assert_eq!(described["input"], "t");
    assert!(
        described["recent_actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["workflow_id"] == fired.workflow_id.as_str()),
        "{described}"
    );
    ok(wf(&t.args(&["schedule", "delete", "tick"])).await);

    // A calendar (09:30 UTC on weekdays): stored as given, fires when triggered.
    ok(wf(&t.args(&[
        "schedule",
        "create",
        "weekdays",
        "--type",
        "order",
        "--input",
        "\"w\"",
        "--calendar",
        "30 9 * * 1-5",
    ]))
    .await);
    let d = client
        .schedules()
        .handle("weekdays")
        .describe()
        .await
        .unwrap();
    assert_eq!(d.spec.calendars.len(), 1);
    let c = &d.spec.calendars[0];
    assert_eq!((c.minute.clone(), c.hour.clone()), (vec![30], vec![9]));
    assert_eq!(c.day_of_week, vec![1, 2, 3, 4, 5]);
    assert!(d.spec.intervals.is_empty());
    assert_eq!(d.action.workflow_id_prefix, "weekdays");
    if let Via::Server(_) = via {
        // A trigger starts the action in the process it reaches (as `wf start` does, which
        // over a database file does not know the type).
        ok(wf(&t.args(&["schedule", "trigger", "weekdays"])).await);
        wf_testkit::eventually_for(
            Duration::from_secs(20),
            "the trigger starts a run",
            || async {
                let runs = client
                    .list(wf_sdk::client::ListFilter::default())
                    .await
                    .ok()?;
                runs.into_iter()
                    .find(|r| r.workflow_id.starts_with("weekdays-"))
            },
        )
        .await;
    }

    // Usage errors: no fire time, a bad calendar, bad input; a taken id is refused.
    let order = ["schedule", "create", "x", "--type", "order"];
    let no_time = wf(&t.args(&order)).await;
    assert_eq!(no_time.status.code(), Some(2), "{}", stderr(&no_time));
    assert!(stderr(&no_time).contains("--every"), "{}", stderr(&no_time));
    let bad = [&order[..], &["--calendar", "61 * * * *"]].concat();
    let err = fails(wf(&t.args(&bad)).await, 2);
    assert!(err.contains("minute"), "{err}");
    let bad = [&order[..], &["--every", "1h", "--input", "{nope"]].concat();
    fails(wf(&t.args(&bad)).await, 2);
    let taken = [
        "schedule", "create", "weekdays", "--type", "order", "--every", "1h",
    ];
    fails(wf(&t.args(&taken)).await, 2);
    t.close().await;
    engine.shutdown().await;
    remove_db(&db);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_deletes_runs_closed_before_the_age_given() {
    let db = scratch("purge", "db");
    const DAY_MS: i64 = 86_400_000;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // Runs that closed 40 days ago, one still running since then, one closed today.
    let clock = TestClock::starting_at(now_ms - 40 * DAY_MS);
    let engine = Engine::builder()
        .sqlite(&db)
        .clock(clock.clone())
        .poll_interval(Duration::from_millis(20))
        .workflow::<Order>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    for id in ["old-a", "old-b", "old-c"] {
        let h = client.start::<Order>(id, id.to_string()).await.unwrap();
        h.ship("x".to_string()).await.unwrap();
        h.result().await.unwrap();
    }
    client
        .start::<Order>("live", "l".to_string())
        .await
        .unwrap();
    clock.advance(Duration::from_millis(40 * DAY_MS as u64));
    let recent = client
        .start::<Order>("recent", "r".to_string())
        .await
        .unwrap();
    recent.ship("y".to_string()).await.unwrap();
    recent.result().await.unwrap();
    engine.shutdown().await;
    let d = db.to_str().unwrap();

    let counted = ok(wf(&["--db", d, "purge", "--closed-before", "30d", "--dry-run"]).await);
    assert!(
        counted.starts_with("would purge 3 runs closed before "),
        "{counted}"
    );
    let counted: Value = serde_json::from_str(&ok(wf(&[
        "--db",
        d,
        "--json",
        "purge",
        "--closed-before",
        "30d",
        "--dry-run",
    ])
    .await))
    .unwrap();
    assert_eq!(
        (counted["dry_run"].as_bool(), counted["runs"].as_u64()),
        (Some(true), Some(3))
    );
    let listed: Value =
        serde_json::from_str(&ok(wf(&["--db", d, "--json", "list"]).await)).unwrap();
    assert_eq!(
        listed.as_array().unwrap().len(),
        5,
        "a dry run deletes nothing"
    );

    let purged: Value = serde_json::from_str(&ok(wf(&[
        "--db",
        d,
        "--json",
        "purge",
        "--closed-before",
        "30d",
        "--batch",
        "2",
    ])
    .await))
    .unwrap();
    assert_eq!(purged["purged"].as_u64(), Some(3), "{purged}");
    assert!(purged["closed_before"].as_str().unwrap().ends_with('Z'));
    let listed: Value =
        serde_json::from_str(&ok(wf(&["--db", d, "--json", "list"]).await)).unwrap();
    let mut ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workflow_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["live", "recent"]);
    let err = fails(wf(&["--db", d, "describe", "old-a"]).await, 3);
    assert!(err.contains("old-a"), "{err}");
    let again = ok(wf(&["--db", d, "purge", "--closed-before", "30d"]).await);
    assert!(again.starts_with("purged 0 runs"), "{again}");
    // Bad usage, refused by the grammar with exit code 2.
    let bad = wf(&["--db", d, "purge", "--closed-before", "soon"]).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("not a duration"), "{}", stderr(&bad));
    assert_eq!(wf(&["--db", d, "purge"]).await.status.code(), Some(2));
    fails(
        wf(&["--db", d, "purge", "--closed-before", "1d", "--batch", "0"]).await,
        2,
    );
    remove_db(&db);
}

/// Tags itself with its customer and tier, then waits to be closed.
#[derive(Default)]
pub struct Tagged {
    closed: bool,
}

#[workflow(name = "tagged")]
impl Tagged {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, customer: String) -> Result<(), WorkflowError> {
        let tier = if customer == "acme" { 1 } else { 2 };
        ctx.upsert_search_attributes([
            ("customer", SearchValue::from(customer.as_str())),
            ("tier", SearchValue::from(tier)),
        ])?;
        ctx.wait_condition(|s| s.closed).await;
        Ok(())
    }

    #[signal]
    fn close(&mut self) {
        self.closed = true;
    }
}

/// The workflow ids `wf --json list ARGS` prints.
async fn listed(t: &Target, args: &[&str]) -> Vec<String> {
    let mut all = t.args(&["--json", "list"]);
    all.extend_from_slice(args);
    let runs: Value = serde_json::from_str(&ok(wf(&all).await)).unwrap();
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| r["workflow_id"].as_str().unwrap().to_string())
        .collect()
}

three_ways!(list_filters_by_search_attributes_and_ages_and_describe_shows_them);
async fn list_filters_by_search_attributes_and_ages_and_describe_shows_them(via: Via) {
    let db = scratch("search", "db");
    let engine = Engine::builder()
        .sqlite(&db)
        .poll_interval(Duration::from_millis(20))
        .workflow::<Tagged>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let memo = wf_sdk::client::StartOptions::default()
        .with_memo("owner", "ops")
        .unwrap();
    client
        .start_with::<Tagged>("t-1", "acme".to_string(), memo)
        .await
        .unwrap();
    client
        .start::<Tagged>("t-2", "globex".to_string())
        .await
        .unwrap();
    let t3 = client
        .start::<Tagged>("t-3", "acme".to_string())
        .await
        .unwrap();
    for id in ["t-1", "t-2", "t-3"] {
        wf_testkit::eventually("the run's search attributes", || async {
            let d = client.handle::<Tagged>(id).describe().await.unwrap();
            d.search_attributes.contains_key("tier").then_some(())
        })
        .await;
    }
    t3.close().await.unwrap();
    t3.result().await.unwrap();
    let t = Target::open(via, &db, &engine).await;

    assert_eq!(
        listed(&t, &["--search", "customer=acme"]).await,
        ["t-3", "t-1"]
    );
    let both = [
        "--search",
        "customer=acme",
        "--search",
        "tier=1",
        "--status",
        "running",
    ];
    assert_eq!(listed(&t, &both).await, ["t-1"]);
    assert_eq!(
        listed(&t, &["--search", "tier=keyword:1"]).await,
        Vec::<String>::new()
    );
    assert_eq!(
        listed(&t, &["--type", "tagged", "--started-after", "1h"])
            .await
            .len(),
        3
    );
    assert_eq!(
        listed(&t, &["--started-before", "1h"]).await,
        Vec::<String>::new()
    );
    assert_eq!(listed(&t, &["--closed-after", "1h"]).await, ["t-3"]);
    // Pages: the next one starts after the last run id printed.
    let first: Value =
        serde_json::from_str(&ok(wf(&t.args(&["--json", "list", "--limit", "2"])).await)).unwrap();
    let last = first[1]["run_id"].as_str().unwrap();
    assert_eq!(
        listed(&t, &["--limit", "2", "--after", last]).await,
        ["t-1"]
    );

    let table = ok(wf(&t.args(&["list", "--search", "customer=acme"])).await);
    assert!(table.lines().next().unwrap().contains("SEARCH"), "{table}");
    assert!(table.contains(r#"customer="acme""#), "{table}");
    let described = ok(wf(&t.args(&["describe", "t-1"])).await);
    assert!(described.contains("search customer"), "{described}");
    assert!(described.contains("memo owner"), "{described}");
    let json: Value =
        serde_json::from_str(&ok(wf(&t.args(&["--json", "describe", "t-1"])).await)).unwrap();
    assert_eq!(json["search_attributes"]["tier"], 1);
    assert_eq!(json["memo"]["owner"], "ops");
    fails(wf(&t.args(&["list", "--search", "tier"])).await, 2);
    fails(wf(&t.args(&["list", "--search", "tier=int:one"])).await, 2);
    t.close().await;
    engine.shutdown().await;
    remove_db(&db);
}

three_ways!(builds_are_counted_made_current_and_listed_by_build);
async fn builds_are_counted_made_current_and_listed_by_build(via: Via) {
    let db = scratch("builds", "db");
    let engine = Engine::builder()
        .sqlite(&db)
        .poll_interval(Duration::from_millis(20))
        .build_id("v1")
        .workflow::<Order>()
        .versioning::<Order>(VersioningBehavior::Pinned)
        .build()
        .await
        .unwrap();
    let client = engine.client();
    client
        .start::<Order>("o-v1", "a".to_string())
        .await
        .unwrap();
    let t = Target::open(via, &db, &engine).await;
    let builds: Value =
        serde_json::from_str(&ok(wf(&t.args(&["--json", "builds"])).await)).unwrap();
    assert_eq!(builds[0]["build_id"], "v1");
    assert_eq!(builds[0]["pinned"], 1);

    let out = ok(wf(&t.args(&["builds", "set-current", "default", "v2"])).await);
    assert!(out.contains("v2"), "{out}");
    // A new run goes to v2, which no engine runs yet; the old one stays pinned to v1.
    client
        .start::<Order>("o-v2", "b".to_string())
        .await
        .unwrap();
    let table = ok(wf(&t.args(&["builds", "--queue", "default"])).await);
    let v1 = table
        .lines()
        .find(|l| l.starts_with("v1"))
        .unwrap_or_default();
    let v2 = table
        .lines()
        .find(|l| l.starts_with("v2"))
        .unwrap_or_default();
    assert!(v1.contains("in use"), "{table}");
    assert!(v2.contains("default"), "{table}");
    let on_v2: Value =
        serde_json::from_str(&ok(
            wf(&t.args(&["--json", "list", "--build-id", "v2"])).await
        ))
        .unwrap();
    let ids: Vec<&str> = on_v2
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["workflow_id"].as_str())
        .collect();
    assert_eq!(ids, ["o-v2"]);

    // The old build's run finishes on v1: v1 drains.
    client
        .handle::<Order>("o-v1")
        .ship("x".into())
        .await
        .unwrap();
    client.handle::<Order>("o-v1").result().await.unwrap();
    let table = ok(wf(&t.args(&["builds"])).await);
    assert!(!table.lines().any(|l| l.starts_with("v1")), "{table}");
    ok(wf(&t.args(&["builds", "move", "o-v2", "v1"])).await);
    client
        .handle::<Order>("o-v2")
        .ship("y".into())
        .await
        .unwrap();
    assert_eq!(
        client.handle::<Order>("o-v2").result().await.unwrap(),
        "b: y (0)"
    );
    t.close().await;
    engine.shutdown().await;
    remove_db(&db);
}

/// A toy payload codec for this test only (it flips every bit; no security): the CLI on a
/// `--db` file has no codec, so it shows what it cannot decode instead of failing.
struct FlipBitsToyCodec;

impl wf_sdk::payload::PayloadCodec for FlipBitsToyCodec {
    fn id(&self) -> &str {
        "flip-toy"
    }
    fn encode(&self, bytes: &[u8]) -> Result<Vec<u8>, wf_sdk::payload::CodecError> {
        Ok(bytes.iter().map(|b| !b).collect())
    }
    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, wf_sdk::payload::CodecError> {
        Ok(bytes.iter().map(|b| !b).collect())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_file_with_encoded_payloads_shows_them_as_encoded_naming_the_codec() {
    let db = scratch("codec", "db");
    let engine = Engine::builder()
        .sqlite(&db)
        .payload_codec(FlipBitsToyCodec)
        .workflow::<Order>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Order>("o-coded", "clear-name".into())
        .await
        .unwrap();
    h.ship("clear-note".into()).await.unwrap();
    h.result().await.unwrap();
    engine.shutdown().await;
    let d = db.to_str().unwrap();

    let history = ok(wf(&["--db", d, "history", "o-coded"]).await);
    assert!(
        history.contains(r#"{"encoded":{"bytes":22,"codec":"flip-toy"}}"#),
        "{history}"
    );
    assert!(!history.contains("clear-note"), "{history}");
    let lines = ok(wf(&["--db", d, "--json", "history", "o-coded"]).await);
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["attributes"]["input"]["encoded"]["codec"], "flip-toy",
        "{first}"
    );
    remove_db(&db);
}

three_ways!(reset_fork_resume_and_delete_repair_runs_and_record_who_did_it);
async fn reset_fork_resume_and_delete_repair_runs_and_record_who_did_it(via: Via) {
    let db = scratch("repair", "db");
    let engine = engine_on(&db).await;
    let client = engine.client();
    let h = client.start::<Order>("o-1", "x".to_string()).await.unwrap();
    h.note("a".to_string()).await.unwrap();
    wf_testkit::until_recorded(&h, "the note", |k| {
        matches!(k, EventKind::SignalReceived { .. })
    })
    .await;
    let first_run = h.describe().await.unwrap().run_id;
    let t = Target::open(via, &db, &engine).await;

    // Reset to before the first task: the note is applied again, once.
    let out = ok(wf(&t.args(&[
        "--json",
        "reset",
        "o-1",
        "--to",
        "first-task",
        "--reason",
        "bad deploy",
    ]))
    .await);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["status"], "reset", "{out}");
    let new_run = report["run"]["run_id"].as_str().unwrap().to_string();
    assert_ne!(new_run, first_run);
    let d: Value =
        serde_json::from_str(&ok(wf(&t.args(&["--json", "describe", "o-1"])).await)).unwrap();
    assert_eq!(d["run_id"], new_run.as_str());
    let origin = &d["repaired_from"];
    assert_eq!(origin["kind"], "reset", "{d}");
    assert_eq!(origin["reason"], "bad deploy");
    assert_eq!(origin["run_id"], first_run.as_str());
    let who = if matches!(via, Via::File) {
        "in-process"
    } else {
        "http:admin"
    };
    assert_eq!(origin["identity"], who);
    let text = ok(wf(&t.args(&["describe", "o-1"])).await);
    assert!(
        text.contains("repaired") && text.contains("bad deploy"),
        "{text}"
    );
    let notes = wf_testkit::eventually("the note applied again", || async {
        let notes = h.notes().await.ok()?;
        (!notes.is_empty()).then_some(notes)
    })
    .await;
    assert_eq!(notes, ["a"]);

    // Fork from the first event; delete the fork.
    let out = ok(wf(&t.args(&["fork", "o-1", "o-copy", "--at-event", "1"])).await);
    assert!(out.contains("o-copy"), "{out}");
    assert_eq!(
        client.describe("o-copy").await.unwrap().status,
        RunStatus::Running
    );
    ok(wf(&t.args(&["delete", "o-copy", "--reason", "erase"])).await);
    let err = fails(wf(&t.args(&["describe", "o-copy"])).await, 3);
    assert!(err.contains("o-copy"), "{err}");

    // Refusals and their exit codes.
    fails(
        wf(&t.args(&["reset", "nope", "--to", "first-task"])).await,
        3,
    );
    fails(wf(&t.args(&["delete", "nope"])).await, 3);
    assert_eq!(wf(&t.args(&["reset", "o-1"])).await.status.code(), Some(2));
    let err = fails(wf(&t.args(&["reset", "o-1", "--to-event", "999"])).await, 1);
    assert!(err.contains("WorkflowTaskCompleted"), "{err}");
    let err = fails(wf(&t.args(&["resume", "o-1"])).await, 1);
    assert!(err.contains("nothing to resume"), "{err}");

    // Resume a terminated run: it goes on from its last good task.
    h.terminate("oops").await.unwrap();
    ok(wf(&t.args(&["resume", "o-1"])).await);
    let d = h.describe().await.unwrap();
    assert_eq!(d.status, RunStatus::Running);
    assert_eq!(
        d.repaired_from.unwrap().kind,
        wf_sdk::client::RepairKind::Resume
    );
    h.ship("go".to_string()).await.unwrap();
    assert_eq!(h.result().await.unwrap(), "x: a,go (0)");
    t.close().await;
    engine.shutdown().await;
    remove_db(&db);
}

three_ways!(start_pause_count_unpause_and_result);
async fn start_pause_count_unpause_and_result(via: Via) {
    let db = scratch("pause", "db");
    let engine = engine_on(&db).await;
    let t = Target::open(via, &db, &engine).await;
    if let Via::Server(_) = via {
        let started: Value = serde_json::from_str(&ok(wf(
            &t.args(&["--json", "start", "order", "o-p", "\"pia\""])
        )
        .await))
        .unwrap();
        assert_eq!(started["workflow_id"], "o-p");
        ok(wf(&t.args(&["start", "order", "o-q", "\"quinn\""])).await);
        // A delayed start: the run exists, and describe says when it starts.
        let delayed = [
            "start",
            "order",
            "o-later",
            "\"lee\"",
            "--start-delay",
            "1h",
        ];
        ok(wf(&t.args(&delayed)).await);
        let d: Value =
            serde_json::from_str(&ok(wf(&t.args(&["--json", "describe", "o-later"])).await))
                .unwrap();
        assert!(d["start_at"].is_string(), "{d}");
        assert_ne!(d["start_at"], d["started_at"], "{d}");
        let fresh: Value =
            serde_json::from_str(&ok(wf(&t.args(&["--json", "describe", "o-q"])).await)).unwrap();
        assert!(fresh["start_at"].is_null(), "{fresh}");
        // Out of the counts below.
        ok(wf(&t.args(&["terminate", "o-later"])).await);
        ok(wf(&t.args(&["delete", "o-later"])).await);
    } else {
        // A database file holds no workflow code: starting checks the input against the
        // type, which only a serving process knows.
        let err = fails(wf(&t.args(&["start", "order", "o-p", "\"pia\""])).await, 5);
        assert!(err.contains("unknown workflow type"), "{err}");
        let client = engine.client();
        client
            .start::<Order>("o-p", "pia".to_string())
            .await
            .unwrap();
        client
            .start::<Order>("o-q", "quinn".to_string())
            .await
            .unwrap();
    }
    fails(
        wf(&t.args(&["start", "order", "o-bad", "{not json"])).await,
        2,
    );

    ok(wf(&t.args(&["pause", "o-p", "--reason", "hold the line"])).await);
    let d: Value =
        serde_json::from_str(&ok(wf(&t.args(&["--json", "describe", "o-p"])).await)).unwrap();
    assert_eq!(d["status"], "running", "{d}");
    assert_eq!(d["paused"]["reason"], "hold the line", "{d}");
    let shown = ok(wf(&t.args(&["describe", "o-p"])).await);
    assert!(
        shown.contains("(paused)") && shown.contains("hold the line"),
        "{shown}"
    );
    let listed = ok(wf(&t.args(&["list"])).await);
    assert!(listed.contains("(paused)"), "{listed}");

    ok(wf(&t.args(&["signal", "o-p", "ship", "[\"late\"]"])).await);
    // Paused: the run does not close, so the wait runs out (exit 5, as a timed-out update).
    fails(wf(&t.args(&["result", "o-p", "--wait", "500ms"])).await, 5);
    let counted: Value = serde_json::from_str(&ok(wf(
        &t.args(&["--json", "count", "--status", "running"])
    )
    .await))
    .unwrap();
    assert_eq!(counted, json!({"count": 2}));
    assert_eq!(
        ok(wf(&t.args(&["count", "--type", "order"])).await).trim(),
        "2"
    );

    ok(wf(&t.args(&["unpause", "o-p"])).await);
    let result: Value = serde_json::from_str(&ok(wf(
        &t.args(&["--json", "result", "o-p", "--wait", "10s"])
    )
    .await))
    .unwrap();
    assert_eq!(result["result"], "pia: late (0)");
    let d: Value =
        serde_json::from_str(&ok(wf(&t.args(&["--json", "describe", "o-p"])).await)).unwrap();
    assert_eq!(
        d["result"], "pia: late (0)",
        "describe says how it ended: {d}"
    );
    assert_eq!(
        ok(wf(&t.args(&["count", "--status", "completed"])).await).trim(),
        "1"
    );
    fails(wf(&t.args(&["pause", "nobody"])).await, 3);
    fails(wf(&t.args(&["unpause", "o-p"])).await, 5);
    t.close().await;
    engine.shutdown().await;
    remove_db(&db);
}

three_ways!(queues_set_list_and_remove_flow_limits);
/// `wf queues`: set a concurrency and a rate limit, list them (table and `--json`), and remove
/// them; the engine's client sees what the CLI set; bad scopes and flags are usage errors.
async fn queues_set_list_and_remove_flow_limits(via: Via) {
    let db = scratch("queues", "db");
    let engine = engine_on(&db).await;
    let t = Target::open(via, &db, &engine).await;
    assert!(ok(wf(&t.args(&["queues", "list"])).await).contains("no flow limits"));
    ok(wf(&t.args(&["queues", "set-limit", "key:openai", "--concurrency", "4"])).await);
    let set = ok(wf(&t.args(&[
        "--json",
        "queues",
        "set-limit",
        "activity:a/b",
        "--rate",
        "60",
        "--per",
        "1m",
        "--burst",
        "5",
    ]))
    .await);
    let set: Value = serde_json::from_str(&set).unwrap();
    assert_eq!(set["rate"]["period_ms"], 60_000, "{set}");
    let mut held = engine.client().flow_limits().list().await.unwrap();
    held.sort_by(|a, b| a.scope.cmp(&b.scope));
    assert_eq!(
        held,
        [
            FlowLimit::rate(FlowScope::activity("a/b"), 60, Duration::from_secs(60)).burst(5),
            FlowLimit::concurrency(FlowScope::key("openai"), 4),
        ]
    );
    let table = ok(wf(&t.args(&["queues", "list"])).await);
    assert!(
        table.contains("key:openai") && table.contains("at most 4 at once"),
        "{table}"
    );
    assert!(table.contains("activity:a/b"), "{table}");
    let listed: Value =
        serde_json::from_str(&ok(wf(&t.args(&["--json", "queues", "list"])).await)).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{listed}");
    // describe: one scope's limits with what they bind (nothing runs or waits here).
    let described = ok(wf(&t.args(&["queues", "describe", "activity:a/b"])).await);
    assert!(
        described.contains("activity:a/b") && described.contains("WAITING"),
        "{described}"
    );
    assert!(!described.contains("key:openai"), "{described}");
    let usage: Value = serde_json::from_str(&ok(wf(&t.args(&[
        "--json",
        "queues",
        "describe",
        "activity:a/b",
    ]))
    .await))
    .unwrap();
    assert_eq!(
        usage,
        serde_json::json!([{"scope": {"activity": "a/b"},
            "rate": {"limit": 60, "period_ms": 60000, "burst": 5},
            "running": 0, "waiting": 0, "tokens": 5}]),
        "{usage}"
    );
    let none = ok(wf(&t.args(&["queues", "describe", "key:nobody"])).await);
    assert!(none.contains("no flow limits"), "{none}");

    for bad in [
        &["queues", "set-limit", "tenant:x", "--concurrency", "1"][..],
        &["queues", "set-limit", "key:x"],
        &["queues", "set-limit", "key:x", "--rate", "5"],
        &[
            "queues",
            "set-limit",
            "key:x",
            "--concurrency",
            "1",
            "--rate",
            "5",
            "--per",
            "1s",
        ],
        &["queues", "remove-limit", "key:x"],
    ] {
        let refused = wf(&t.args(bad)).await;
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{bad:?}: {}",
            stderr(&refused)
        );
    }
    let refused =
        stderr(&wf(&t.args(&["queues", "set-limit", "tenant:x", "--concurrency", "1"])).await);
    assert!(
        refused.contains("activity:NAME, task-queue:NAME or key:NAME"),
        "{refused}"
    );

    let removed = ok(wf(&t.args(&["queues", "remove-limit", "activity:a/b", "--rate"])).await);
    assert!(removed.contains("removed"), "{removed}");
    let again: Value = serde_json::from_str(&ok(wf(&t.args(&[
        "--json",
        "queues",
        "remove-limit",
        "activity:a/b",
        "--rate",
    ]))
    .await))
    .unwrap();
    assert_eq!(again, json!({"removed": false}));
    ok(wf(&t.args(&["queues", "remove-limit", "key:openai", "--concurrency"])).await);
    assert!(engine
        .client()
        .flow_limits()
        .list()
        .await
        .unwrap()
        .is_empty());
    t.close().await;
    engine.shutdown().await;
    remove_db(&db);
}
