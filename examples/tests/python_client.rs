//! The Python client of `examples/clients/python/`, end to end against a real server on
//! 127.0.0.1:0 (the workflows `examples/serve.rs` serves): its worker runs the `summarize`
//! activity of a Rust workflow (a first attempt that fails, a retry that completes) and the
//! workflow returns the worker's answer; its client starts, signals, queries and updates an
//! agent run and reads its result. Skipped, saying so, where `python3` is not installed.

// The agent module loads the demo database helper, which this test does not use.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "../agent_run.rs"]
mod agent_run;
#[path = "../support/summarize.rs"]
mod summarize;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use summarize::{Document, Summarize, Summary};
use wf_sdk::history::EventKind;
use wf_sdk::http::{serve, ServeOptions, Server};
use wf_sdk::prelude::*;

const TOKEN: &str = "python-test-token";

/// Whether `python3` runs here.
fn python3() -> bool {
    let found = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped: python3 is not installed, so the Python client cannot be tested");
    }
    found
}

fn client_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/python")
}

/// A Python process, killed by its PID if the test ends before it does.
struct Python(Child);

impl Python {
    fn spawn(script: &str, server: &Server, extra: &[&str]) -> Python {
        let url = format!("http://{}", server.local_addr());
        let child = Command::new("python3")
            .arg("-B")
            .arg(script)
            .args(["--url", url.as_str(), "--token", TOKEN])
            .args(extra)
            .current_dir(client_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        Python(child)
    }

    /// Waits for it to exit (at most `within`); its exit status and output.
    async fn finish(mut self, within: Duration) -> (bool, String) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(status) = self.0.try_wait().expect("the child's status") {
                let mut out = String::new();
                for pipe in [
                    self.0
                        .stdout
                        .take()
                        .map(|p| Box::new(p) as Box<dyn std::io::Read>),
                    self.0
                        .stderr
                        .take()
                        .map(|p| Box::new(p) as Box<dyn std::io::Read>),
                ]
                .into_iter()
                .flatten()
                {
                    let mut pipe = pipe;
                    let _ = pipe.read_to_string(&mut out);
                }
                return (status.success(), out);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the Python process did not exit within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Python {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

use std::io::Read as _;

/// An engine with serve's workflows, served with a token on 127.0.0.1:0.
async fn served() -> (Engine, Server) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<agent_run::AgentRun>()
        .shared_activities(Arc::new(agent_run::Tools::default()))
        .workflow::<Summarize>()
        .build()
        .await
        .expect("engine");
    let server = serve(&engine, "127.0.0.1:0", ServeOptions::default().token(TOKEN))
        .await
        .expect("serve");
    (engine, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_worker_runs_the_activity_of_a_rust_workflow() {
    if !python3() {
        return;
    }
    let (engine, server) = served().await;
    let worker = Python::spawn("worker.py", &server, &["--fail-first", "--max-tasks", "2"]);
    let text = "one two three four five six seven";
    let doc = Document {
        title: "Numbers".into(),
        text: text.into(),
    };
    let h = engine
        .client()
        .start::<Summarize>("numbers", doc)
        .await
        .unwrap();
    let summary = tokio::time::timeout(Duration::from_secs(60), h.result())
        .await
        .expect("the workflow completes")
        .unwrap();
    assert_eq!(
        summary,
        Summary {
            title: "Numbers".into(),
            words: 7,
            headline: "one two three four five".into(),
            by: "python".into(),
        }
    );
    // The first attempt failed in Python, and the retry policy ran a second one.
    let history = h.history().await.unwrap();
    let attempts = history.iter().find_map(|e| match &e.kind {
        EventKind::ActivityCompleted { attempts, .. } => Some(*attempts),
        _ => None,
    });
    assert_eq!(attempts, Some(2), "{history:?}");
    let (ok, out) = worker.finish(Duration::from_secs(30)).await;
    assert!(ok, "the worker exits after its two tasks:\n{out}");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_starts_signals_queries_and_updates_runs() {
    if !python3() {
        return;
    }
    let (engine, server) = served().await;
    let demo = Python::spawn("demo.py", &server, &[]);
    let (ok, out) = demo.finish(Duration::from_secs(120)).await;
    eprintln!("{out}");
    assert!(ok, "demo.py failed:\n{out}");
    assert!(out.lines().any(|l| l == "ok"), "{out}");
    assert!(out.contains("\"by\": \"python\""), "{out}");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}
