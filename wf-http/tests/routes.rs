//! Every route over real HTTP on 127.0.0.1:0, with its success and error statuses.

#[macro_use]
mod common;

use common::{served, until, Http};
use serde_json::{json, Value};
use wf_http::ServeOptions;

async fn setup(net: common::Net) -> (wf_sdk::engine::Engine, wf_http::Server, Http) {
    let (engine, server) = served(net, ServeOptions::default()).await;
    let http = net.http(&server, None);
    (engine, server, http)
}

async fn start(http: &Http, id: &str) -> Value {
    let r = http
        .post(
            "/agent_run/runs",
            json!({"id": id, "input": {"goal": "ship", "step": 0}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.body
}

both_ways!(
    #[tokio::test]
    health_and_type_metadata
);
async fn health_and_type_metadata(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    let r = http.get("/healthz").await;
    assert_eq!((r.status, &r.body), (200, &json!({"status": "ok"})));

    let r = http.get("/agent_run").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["input"], "AgentInput");
    assert_eq!(r.body["output"], "String");
    let note = r.body["signals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "note")
        .unwrap();
    assert_eq!(
        note["params"],
        json!([{"name": "text", "type": "String"}, {"name": "times", "type": "u32"}])
    );
    let change = &r.body["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "change_goal")
        .unwrap();
    assert_eq!(change["returns"], "String");
    assert_eq!(change["validated"], true);
    let query = &r.body["queries"][0];
    assert_eq!(
        (&query["name"], &query["returns"]),
        (&json!("status"), &json!("Status"))
    );

    let r = http.get("/no_such_type").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (404, Some("not_found"))
    );
    assert!(r.body["message"].as_str().unwrap().contains("agent_run"));
    let r = http.get("/agent_run/runs/x/nowhere").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (404, Some("not_found"))
    );
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    start_conflicts_and_describe
);
async fn start_conflicts_and_describe(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    let started = start(&http, "a-1").await;
    assert_eq!(started["workflow_id"], "a-1");
    let run_id = started["run_id"].as_str().unwrap().to_string();

    let again = json!({"id": "a-1", "input": {"goal": "x", "step": 0}});
    let r = http.post("/agent_run/runs", again.clone()).await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (409, Some("already_started"))
    );
    assert_eq!(r.body["run_id"], run_id.as_str());

    let mut keep = again.clone();
    keep["conflict"] = json!("use_existing");
    let r = http.post("/agent_run/runs", keep).await;
    assert_eq!(
        (r.status, r.body["run_id"].as_str()),
        (200, Some(run_id.as_str()))
    );
    assert_eq!(r.body["started"], false);

    let mut bad = again.clone();
    bad["conflict"] = json!("sometimes");
    let r = http.post("/agent_run/runs", bad).await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (400, Some("invalid_args"))
    );

    // Input that does not fit the type: 400, nothing started.
    let r = http
        .post(
            "/agent_run/runs",
            json!({"id": "a-2", "input": {"goal": 5}}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (400, Some("invalid_args"))
    );
    assert_eq!(http.get("/agent_run/runs/a-2").await.status, 404);

    let r = http.get("/agent_run/runs/a-1").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["run_id"], run_id.as_str());
    assert_eq!(r.body["workflow_type"], "agent_run");
    assert_eq!(r.body["status"], "running");
    assert!(r.body["started_at_ms"].as_u64().unwrap() > 0);
    // `_` stands for the run's own type.
    assert_eq!(
        http.get("/_/runs/a-1").await.body["run_id"],
        run_id.as_str()
    );

    let r = http.get("/agent_run/runs/nobody").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (404, Some("not_found"))
    );
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    signals_by_position_and_by_name_and_queries
);
async fn signals_by_position_and_by_name_and_queries(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    start(&http, "s-1").await;
    let r = http
        .post("/agent_run/runs/s-1/signal", json!({"name": "pause"}))
        .await;
    assert_eq!(
        (r.status, &r.body),
        (202, &json!({"status": "delivered", "handler": true}))
    );
    until(&http, "/agent_run/runs/s-1", |b| b["status"] == "running").await;

    let r = http
        .post(
            "/agent_run/runs/s-1/signal",
            json!({"name": "note", "args": ["pos", 2]}),
        )
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let r = http
        .post(
            "/agent_run/runs/s-1/signal",
            json!({"name": "note", "args": {"times": 1, "text": "kw"}, "signal_id": "n-1"}),
        )
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    // The same signal id again applies once.
    let r = http
        .post(
            "/agent_run/runs/s-1/signal",
            json!({"name": "note", "args": {"times": 1, "text": "kw"}, "signal_id": "n-1"}),
        )
        .await;
    assert_eq!(r.status, 202);

    // Signals are durable when acknowledged; a query may still see the run before its
    // workflow task applied them (read-your-writes is the engine's concern): poll briefly.
    let mut mine = Vec::new();
    for _ in 0..250 {
        let r = http
            .post(
                "/agent_run/runs/s-1/query",
                json!({"name": "notes_with", "args": {"prefix": ""}}),
            )
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let notes: Vec<String> = serde_json::from_value(r.body["value"].clone()).unwrap();
        mine = notes
            .into_iter()
            .filter(|n| !n.starts_with("step"))
            .collect();
        if mine.len() >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(mine, ["pos", "pos", "kw"]);

    // A struct comes back as the handler encoded it: its fields by position.
    let r = http
        .post("/agent_run/runs/s-1/query", json!({"name": "status"}))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["value"][0], "ship");
    assert_eq!(r.body["value"][2], true);

    // A signal with no handler is buffered for `wait_for_signal`, and the answer says so.
    let r = http
        .post(
            "/agent_run/runs/s-1/signal",
            json!({"name": "later", "args": [1]}),
        )
        .await;
    assert_eq!((r.status, &r.body["status"]), (202, &json!("buffered")));
    assert_eq!(r.body["handler"], false, "{:?}", r.body);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    bad_arguments_name_the_parameter
);
async fn bad_arguments_name_the_parameter(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    start(&http, "b-1").await;
    let cases = [
        (json!({"name": "note", "args": ["x", "two"]}), Some("times")),
        (
            json!({"name": "note", "args": {"text": 3, "times": 1}}),
            Some("text"),
        ),
        (
            json!({"name": "note", "args": {"text": "x"}}),
            Some("times"),
        ),
        (
            json!({"name": "note", "args": {"text": "x", "times": 1, "extra": 0}}),
            Some("extra"),
        ),
        (json!({"name": "note", "args": ["x"]}), None),
        (json!({"name": "note", "args": "x"}), None),
        (json!({"name": "note", "args": ["x", -1]}), Some("times")),
    ];
    for (body, param) in cases {
        let r = http.post("/agent_run/runs/b-1/signal", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {:?}", r.body);
        assert_eq!(r.body["error"], "invalid_args", "{body}");
        assert_eq!(r.body["param"].as_str(), param, "{body}: {:?}", r.body);
        if let Some(p) = param {
            assert!(
                r.body["message"].as_str().unwrap().contains(p),
                "{:?}",
                r.body
            );
        }
    }
    let r = http
        .post(
            "/agent_run/runs/b-1/query",
            json!({"name": "notes_with", "args": [1]}),
        )
        .await;
    assert_eq!((r.status, r.body["param"].as_str()), (400, Some("prefix")));
    let r = http
        .post(
            "/agent_run/runs/b-1/update",
            json!({"name": "set_step", "args": {"step": "x"}}),
        )
        .await;
    assert_eq!((r.status, r.body["param"].as_str()), (400, Some("step")));

    // Unknown handlers are 404s that list the ones there are.
    let r = http
        .post("/agent_run/runs/b-1/query", json!({"name": "nope"}))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (404, Some("not_found"))
    );
    assert!(r.body["message"].as_str().unwrap().contains("status"));
    let r = http
        .post("/agent_run/runs/b-1/update", json!({"name": "nope"}))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (404, Some("not_found"))
    );

    // Bodies that are not JSON, or not this route's JSON.
    for body in [&b"{not json"[..], b"[1,2]", b"{\"args\": []}", b""] {
        let r = http
            .raw(
                "POST",
                "/agent_run/runs/b-1/signal",
                Some("application/json"),
                body.to_vec(),
            )
            .await;
        assert_eq!(
            (r.status, r.body["error"].as_str()),
            (400, Some("invalid_args")),
            "{body:?}"
        );
    }
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    updates_accepted_completed_rejected_failed_and_timed_out
);
async fn updates_accepted_completed_rejected_failed_and_timed_out(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    start(&http, "u-1").await;
    let path = "/agent_run/runs/u-1/update";

    let r = http
        .post(
            path,
            json!({"name": "change_goal", "args": ["tests"], "update_id": "g-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body, json!({"value": "ship", "update_id": "g-1"}));
    // The same update id returns the first outcome.
    let r = http
        .post(
            path,
            json!({"name": "change_goal", "args": ["other"], "update_id": "g-1"}),
        )
        .await;
    assert_eq!(r.body, json!({"value": "ship", "update_id": "g-1"}));

    let r = http
        .post(
            path,
            json!({"name": "change_goal", "args": {"goal": "docs"}, "wait": "accepted"}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["value"], Value::Null);
    let update_id = r.body["update_id"].as_str().unwrap().to_string();
    let r = http
        .get(&format!(
            "/agent_run/runs/u-1/updates/{update_id}?wait_ms=5000"
        ))
        .await;
    assert_eq!((r.status, &r.body["value"]), (200, &json!("tests")));

    let r = http
        .post(path, json!({"name": "change_goal", "args": ["  "]}))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (422, Some("rejected"))
    );
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("must not be empty"));

    let r = http
        .post(path, json!({"name": "set_step", "args": [5000]}))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (422, Some("update_failed"))
    );
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("too many steps"));

    let r = http
        .post(
            path,
            json!({"name": "change_goal", "args": ["x"], "wait": "sometime"}),
        )
        .await;
    assert_eq!(r.status, 400);

    // A wait that runs out: 504 naming the update, which goes on and answers later.
    let r = http
        .post(
            path,
            json!({"name": "when_paused", "update_id": "w-1", "timeout_ms": 100}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (504, Some("timeout")),
        "{:?}",
        r.body
    );
    assert_eq!(r.body["update_id"], "w-1");
    http.post("/agent_run/runs/u-1/signal", json!({"name": "pause"}))
        .await;
    let r = http
        .post(
            path,
            json!({"name": "when_paused", "update_id": "w-1", "timeout_ms": 5000}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(r.body["value"].is_u64());
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    history_pages_list_result_cancel_terminate
);
async fn history_pages_list_result_cancel_terminate(net: common::Net) {
    let (_engine, server, http) = setup(net).await;
    start(&http, "h-1").await;
    start(&http, "h-2").await;
    http.post(
        "/agent_run/runs/h-1/signal",
        json!({"name": "note", "args": ["n", 1]}),
    )
    .await;
    http.post("/agent_run/runs/h-1/signal", json!({"name": "cancel"}))
        .await;
    let r = http.get("/agent_run/runs/h-1/result?wait_ms=10000").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(r.body["value"]
        .as_str()
        .unwrap()
        .starts_with("stopped at step"));

    let r = http.get("/agent_run/runs/h-1/history").await;
    assert_eq!(r.status, 200);
    let events = r.body["events"].as_array().unwrap();
    assert_eq!(events[0]["type"], "WorkflowStarted");
    assert_eq!(events[0]["event_id"], 1);
    // Started from JSON: the input was stored as the object it came as.
    assert_eq!(
        events[0]["attributes"]["input"],
        json!({"goal": "ship", "step": 0})
    );
    let note = events
        .iter()
        .find(|e| e["type"] == "SignalReceived" && e["attributes"]["name"] == "note")
        .unwrap();
    assert_eq!(note["attributes"]["args"], json!(["n", 1]));
    assert!(events.iter().any(|e| e["type"] == "WorkflowCompleted"));
    assert_eq!(r.body["next"], Value::Null);

    // Pages of two follow each other to the end.
    let mut from = 1;
    let mut seen = Vec::new();
    loop {
        let r = http
            .get(&format!("/agent_run/runs/h-1/history?from={from}&limit=2"))
            .await;
        for e in r.body["events"].as_array().unwrap() {
            seen.push(e["event_id"].as_u64().unwrap());
        }
        match r.body["next"].as_u64() {
            Some(n) => from = n,
            None => break,
        }
    }
    assert_eq!(seen, (1..=events.len() as u64).collect::<Vec<_>>());

    // A run still going: the long poll answers 202 when its wait runs out.
    let r = http.get("/agent_run/runs/h-2/result?wait_ms=50").await;
    assert_eq!((r.status, &r.body), (202, &json!({"status": "running"})));

    let r = http.get("/agent_run/runs?status=completed").await;
    let ids: Vec<&str> = r.body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workflow_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["h-1"]);
    let r = http.get("/agent_run/runs?limit=1").await;
    assert_eq!(r.body["runs"].as_array().unwrap().len(), 1);
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    let r2 = http
        .get(&format!("/agent_run/runs?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(r2.body["runs"].as_array().unwrap().len(), 1);
    assert_ne!(
        r.body["runs"][0]["workflow_id"],
        r2.body["runs"][0]["workflow_id"]
    );
    assert_eq!(r2.body["next_cursor"], Value::Null);
    let r = http.get("/agent_run/runs?status=sleeping").await;
    assert_eq!(r.status, 400);
    let r = http.get("/agent_run/runs?limit=many").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (400, Some("invalid_args"))
    );

    // A finished run takes no more signals: 409.
    let r = http
        .post("/agent_run/runs/h-1/signal", json!({"name": "pause"}))
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (409, Some("run_finished"))
    );
    assert_eq!(r.body["status"], "completed");

    // Cancel a run surely waiting on its timer (see `common::Nap`).
    let r = http
        .post("/nap/runs", json!({"id": "n-1", "input": 1}))
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    until(&http, "/nap/runs/n-1/history", |b| {
        b["events"]
            .as_array()
            .is_some_and(|es| es.iter().any(|e| e["type"] == "TimerStarted"))
    })
    .await;
    let r = http
        .post("/nap/runs/n-1/cancel", json!({"reason": "enough"}))
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let r = http.get("/nap/runs/n-1/result?wait_ms=10000").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (422, Some("cancelled")),
        "{:?}",
        r.body
    );

    start(&http, "h-3").await;
    let r = http
        .raw("POST", "/agent_run/runs/h-3/terminate", None, Vec::new())
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = http.get("/agent_run/runs/h-3").await;
    assert_eq!(r.body["status"], "terminated");
    let r = http.get("/agent_run/runs/h-3/result").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (422, Some("terminated"))
    );
    let r = http
        .raw("POST", "/agent_run/runs/h-3/terminate", None, Vec::new())
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (409, Some("run_finished"))
    );
    server.shutdown().await.unwrap();
}
