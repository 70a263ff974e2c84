//! `wf describe` names what a run is blocked on (human and `--json`), and
//! `wf query ... --at-event N` answers as of a history event, against a served engine.

use serde_json::Value;
use std::process::Command;
use std::time::Duration;
use wf_sdk::history::EventKind;
use wf_sdk::http::{serve, ServeOptions};
use wf_sdk::prelude::*;
use wf_testkit::gate::{Gate, GateClient};

/// Runs `wf` with `args` (off the async runtime), returning its exit code and stdout.
async fn wf(args: Vec<String>) -> (i32, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new(env!("CARGO_BIN_EXE_wf"))
            .args(&args)
            .env_remove("WF_URL")
            .env_remove("WF_DB")
            .env_remove("WF_TOKEN")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_shows_the_blocked_line_and_query_travels_in_time() {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    let server = serve(&engine, "127.0.0.1:0", ServeOptions::default())
        .await
        .unwrap();
    let url = format!("http://{}", server.local_addr());
    let h = engine.client().start::<Gate>("g-cli", ()).await.unwrap();
    for _ in 0..4 {
        h.bump().await.unwrap();
    }
    let (file, line) = h.wait_at().await.unwrap();
    let args = |rest: &[&str]| {
        let mut all = vec!["--url".to_string(), url.clone()];
        all.extend(rest.iter().map(|s| s.to_string()));
        all
    };

    let (code, out, err) = wf(args(&["describe", "g-cli"])).await;
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.contains("blocked run"))
        .unwrap_or_else(|| panic!("a blocked row: {out}"));
    assert!(
        row.contains(&format!("condition at {file}:{line}:")),
        "{row}"
    );

    let (code, out, err) = wf(args(&["--json", "describe", "g-cli"])).await;
    assert_eq!(code, 0, "{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let wait = &d["blocked_on"][0]["waits"][0];
    assert_eq!(wait["kind"], "condition", "{d}");
    assert_eq!(wait["location"]["line"].as_u64(), Some(u64::from(line)));

    let third = h
        .history()
        .await
        .unwrap()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::SignalReceived { name, .. } if name == "bump"))
        .nth(2)
        .map(|e| e.event_id)
        .expect("a third bump");
    let n = third.to_string();
    let (code, out, err) = wf(args(&["query", "g-cli", "count", "--at-event", &n])).await;
    assert_eq!((code, out.trim()), (0, "3"), "{err}");
    let (code, out, err) = wf(args(&[
        "--json",
        "query",
        "g-cli",
        "count",
        "--at-event",
        &n,
    ]))
    .await;
    assert_eq!(code, 0, "{err}");
    let q: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (q["result"].as_u64(), q["at_event"].as_u64()),
        (Some(3), Some(third))
    );
    let (code, _, err) = wf(args(&["query", "g-cli", "count", "--at-event", "100000"])).await;
    assert_ne!(code, 0);
    assert!(err.contains("out of range"), "{err}");
    server.shutdown().await.unwrap();
}
