//! Repairing one run over HTTP: `POST .../reset|fork|resume` and `DELETE /{type}/runs/{id}`
//! need the admin role, record the caller's role as who did it (shown by describe), answer 409
//! for a repair the run's state refuses and 404 for an unknown workflow id; the remote client's
//! repair methods go through the same routes. A reset batch (`POST /_batches`) too.

#[macro_use]
mod common;

use common::{served, until, AgentInput, AgentRun, AgentRunClient};
use serde_json::{json, Value};
use wf_http::{Role, ServeOptions, Tokens};
use wf_sdk::batch::{BatchAction, BatchRequest};
use wf_sdk::client::{ListFilter, RepairKind, ResetPoint};
use wf_sdk::prelude::*;

const WRITE: &str = "write-token-6d1a";
const ADMIN: &str = "admin-token-0be2";

fn roles() -> ServeOptions {
    ServeOptions::default()
        .tokens(Tokens::new().with(Role::Write, WRITE))
        .token(ADMIN)
}

both_ways!(
    #[tokio::test]
    repairs_need_admin_and_record_the_callers_role
);
async fn repairs_need_admin_and_record_the_callers_role(net: common::Net) {
    let (_engine, server) = served(net, roles()).await;
    let write = net.http(&server, Some(WRITE));
    let admin = net.http(&server, Some(ADMIN));
    let r = write
        .post(
            "/agent_run/runs",
            json!({"id": "r-1", "input": {"goal": "g", "step": 0}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let r = write
        .post("/agent_run/runs/r-1/signal", json!({"name": "pause"}))
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let before = until(&write, "/agent_run/runs/r-1", |d| d["status"] == "running").await;

    // write may not repair.
    for route in ["reset", "fork", "resume"] {
        let r = write
            .post(
                &format!("/agent_run/runs/r-1/{route}"),
                json!({"to": "first-task"}),
            )
            .await;
        assert_eq!(r.status, 403, "{route}: {:?}", r.body);
    }
    let r = write
        .raw("DELETE", "/agent_run/runs/r-1", None, Vec::new())
        .await;
    assert_eq!(r.status, 403, "{:?}", r.body);

    // A reset needs a point; one that ends no workflow task is a conflict.
    let r = admin.post("/agent_run/runs/r-1/reset", json!({})).await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = admin
        .post("/agent_run/runs/r-1/reset", json!({"to": "somewhere"}))
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = admin
        .post("/agent_run/runs/r-1/reset", json!({"to_event": 999_999}))
        .await;
    assert_eq!(r.status, 409, "{:?}", r.body);
    let r = admin
        .post("/agent_run/runs/nobody/reset", json!({"to": "first-task"}))
        .await;
    assert_eq!(r.status, 404, "{:?}", r.body);

    // admin resets: the new run records who and why, and the pause is applied again.
    let r = admin
        .post(
            "/agent_run/runs/r-1/reset",
            json!({"to": "first-task", "reason": "bad deploy"}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["status"], "reset");
    let new_run = r.body["run_id"].as_str().unwrap().to_string();
    assert_ne!(new_run, before["run_id"].as_str().unwrap());
    let d = until(&write, "/agent_run/runs/r-1", |d| {
        d["run_id"] == new_run.as_str()
    })
    .await;
    let origin = &d["repaired_from"];
    assert_eq!(origin["kind"], "reset", "{d:?}");
    assert_eq!(origin["identity"], "http:admin");
    assert_eq!(origin["reason"], "bad deploy");
    assert_eq!(origin["run_id"], before["run_id"]);
    let r = write
        .post("/agent_run/runs/r-1/query", json!({"name": "status"}))
        .await;
    // (The status struct travels by position: goal, step, paused, notes.)
    assert_eq!(r.body["value"][2], true, "{:?}", r.body);

    // A running run whose tasks do not fail has nothing to resume.
    let r = admin.post("/agent_run/runs/r-1/resume", json!({})).await;
    assert_eq!(r.status, 409, "{:?}", r.body);

    // Fork, then delete the fork.
    let r = admin
        .post(
            "/agent_run/runs/r-1/fork",
            json!({"new_workflow_id": "r-2", "at_event": 1}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        (r.body["status"].as_str(), r.body["workflow_id"].as_str()),
        (Some("forked"), Some("r-2"))
    );
    let d = until(&write, "/agent_run/runs/r-2", |d| d["status"] == "running").await;
    assert_eq!(d["repaired_from"]["kind"], "fork");
    let r = admin
        .raw("DELETE", "/agent_run/runs/r-2", None, Vec::new())
        .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (200, Some("deleted")),
        "{:?}",
        r.body
    );
    assert_eq!(write.get("/agent_run/runs/r-2").await.status, 404);
    let r = admin
        .raw("DELETE", "/agent_run/runs/r-2", None, Vec::new())
        .await;
    assert_eq!(r.status, 404, "{:?}", r.body);
}

both_ways!(
    #[tokio::test]
    the_remote_client_resets_forks_and_deletes
);
async fn the_remote_client_resets_forks_and_deletes(net: common::Net) {
    let (_engine, server) = served(net, roles()).await;
    let client = net.connect(&server).token(ADMIN).await.expect("connect");
    let input = AgentInput {
        goal: "g".into(),
        step: 0,
    };
    let h = client.start::<AgentRun>("c-1", input).await.unwrap();
    h.pause().await.unwrap();
    let first = h.describe().await.unwrap().run_id;
    let report = client
        .reset("c-1", ResetPoint::FirstTask, "over the wire")
        .await
        .unwrap();
    let d = h.describe().await.unwrap();
    assert_eq!(d.run_id, report.run_id);
    let origin = d.repaired_from.expect("describe shows the reset");
    assert_eq!((origin.kind, origin.run_id), (RepairKind::Reset, first));
    assert_eq!(origin.identity, "http:admin");

    let fork = client.fork("c-1", "c-2", 1, "a copy").await.unwrap();
    assert_eq!(fork.workflow_id, "c-2");
    let deleted = client.delete_run("c-2", "gone").await.unwrap();
    assert_eq!(deleted.run_id, fork.run_id);
    let err = client.describe("c-2").await.unwrap_err();
    assert!(matches!(err, WfError::NotFound { .. }), "{err:?}");
    let err = client.resume("c-1", "nothing to resume").await.unwrap_err();
    assert!(matches!(err, WfError::Conflict(_)), "{err:?}");
}

both_ways!(
    #[tokio::test]
    a_reset_batch_over_http
);
/// `POST /_batches` with `"action": "reset"`: admin only, `"to"` required and named, each
/// selected run reset with the batch as who did it; the remote client's reset batch goes
/// through the same route and reads back as it was sent.
async fn a_reset_batch_over_http(net: common::Net) {
    let (_engine, server) = served(net, roles()).await;
    let write = net.http(&server, Some(WRITE));
    let admin = net.http(&server, Some(ADMIN));
    let mut first_runs = Vec::new();
    for i in 0..3 {
        let id = format!("b-{i}");
        let r = write
            .post(
                "/agent_run/runs",
                json!({"id": id, "input": {"goal": "g", "step": 0}}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        let d = until(&write, &format!("/agent_run/runs/{id}"), |d| {
            d["status"] == "running"
        })
        .await;
        first_runs.push(d["run_id"].as_str().unwrap().to_string());
    }
    let body = |to: Value| {
        json!({
            "batch_id": "rb",
            "action": "reset",
            "to": to,
            "filter": {"workflow_type": "agent_run", "status": "running"},
            "reason": "bad deploy",
        })
    };
    let r = write.post("/_batches", body(json!("first-task"))).await;
    assert_eq!(r.status, 403, "{:?}", r.body);
    for bad in [Value::Null, json!("event-3"), json!(3)] {
        let r = admin.post("/_batches", body(bad.clone())).await;
        assert_eq!(r.status, 400, "to {bad}: {:?}", r.body);
    }
    let r = admin.post("/_batches", body(json!("first-task"))).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(
        (
            r.body["action"].as_str(),
            r.body["to"].as_str(),
            r.body["drop_messages"].as_bool(),
            r.body["selected"].as_u64()
        ),
        (Some("reset"), Some("first-task"), Some(false), Some(3)),
        "{:?}",
        r.body
    );
    let b = until(&write, "/_batches/rb", |b| b["status"] != "running").await;
    assert_eq!(
        (
            b["status"].as_str(),
            b["done"].as_u64(),
            b["failed"].as_u64()
        ),
        (Some("completed"), Some(3), Some(0)),
        "{b:?}"
    );
    for (i, first) in first_runs.iter().enumerate() {
        let d = write.get(&format!("/agent_run/runs/b-{i}")).await.body;
        let origin = &d["repaired_from"];
        assert_eq!(origin["kind"], "reset", "{d:?}");
        assert_eq!(origin["run_id"], first.as_str());
        assert_eq!(origin["identity"], "batch rb");
        assert_eq!(origin["reason"], "bad deploy");
    }

    let client = net.connect(&server).token(ADMIN).await.expect("connect");
    let action = BatchAction::Reset {
        to: ResetPoint::LastGoodTask,
        drop_messages: true,
    };
    let filter = ListFilter {
        workflow_type: Some("agent_run".into()),
        latest_only: true,
        ..Default::default()
    };
    let started = client
        .batches()
        .start(BatchRequest::new(filter, action.clone()))
        .await
        .unwrap();
    assert_eq!(
        (started.action.clone(), started.selected),
        (action.clone(), 3)
    );
    let b = client
        .batches()
        .wait(&started.batch_id, std::time::Duration::from_millis(20))
        .await
        .unwrap();
    assert_eq!(
        (b.action, b.done, b.failed),
        (action, 3, 0),
        "{:?}",
        b.last_error
    );
}
