//! Finding runs over HTTP: a start's memo, search attributes in describe and in lists, the
//! list route's `search`, time and cursor parameters, and the remote client's filters.

#[macro_use]
mod common;

use common::Http;
use serde_json::{json, Value};
use std::time::Duration;
use wf_http::ServeOptions;
use wf_sdk::client::{ListFilter, StartOptions};
use wf_sdk::prelude::*;

/// Tags itself with its customer and tier, then waits to be closed.
#[derive(Default)]
pub struct Ticket {
    closed: bool,
}

#[workflow(name = "ticket")]
impl Ticket {
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

fn workflow_ids(body: &Value) -> Vec<String> {
    body["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workflow_id"].as_str().unwrap().to_string())
        .collect()
}

/// Polls describe until `id` shows its `customer` attribute.
async fn until_tagged(http: &Http, id: &str) -> Value {
    for _ in 0..2000 {
        let r = http.get(&format!("/ticket/runs/{id}")).await;
        if r.body["search_attributes"]["customer"] != Value::Null {
            return r.body;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{id} never showed its search attributes");
}

both_ways!(
    #[tokio::test]
    list_route_filters_by_search_attributes_times_and_pages_by_run_id
);
async fn list_route_filters_by_search_attributes_times_and_pages_by_run_id(net: common::Net) {
    let engine = Engine::builder()
        .memory()
        .workflow::<Ticket>()
        .build()
        .await
        .unwrap();
    let server = net.serve(&engine, ServeOptions::default()).await;
    let http = net.http(&server, None);
    let r = http
        .post(
            "/ticket/runs",
            json!({"id": "t-1", "input": "acme", "memo": {"owner": {"team": "ops"}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    for (id, customer) in [("t-2", "globex"), ("t-3", "acme")] {
        let r = http
            .post("/ticket/runs", json!({"id": id, "input": customer}))
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let d = until_tagged(&http, "t-1").await;
    assert_eq!(
        d["search_attributes"]["customer"],
        json!({"Keyword": "acme"})
    );
    assert_eq!(d["search_attributes"]["tier"], json!({"Int": 1}));
    assert_eq!(d["memo"], json!({"owner": {"team": "ops"}}));
    until_tagged(&http, "t-2").await;
    until_tagged(&http, "t-3").await;

    let r = http.get("/ticket/runs?search=customer=acme").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(workflow_ids(&r.body), ["t-3", "t-1"]);
    assert_eq!(r.body["runs"][1]["memo"], json!({"owner": {"team": "ops"}}));
    let r = http
        .get("/ticket/runs?search=customer=acme&search=tier=int:2")
        .await;
    assert!(workflow_ids(&r.body).is_empty());
    let r = http.get("/ticket/runs?search=tier=2").await;
    assert_eq!(workflow_ids(&r.body), ["t-2"]);
    // The keyword "2" is not the int 2.
    let r = http.get("/ticket/runs?search=tier=keyword:2").await;
    assert!(workflow_ids(&r.body).is_empty());

    http.post("/ticket/runs/t-1/signal", json!({"name": "close"}))
        .await;
    let r = http.get("/ticket/runs/t-1/result?wait_ms=10000").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = http
        .get("/ticket/runs?closed_after_ms=0&search=customer=acme")
        .await;
    assert_eq!(workflow_ids(&r.body), ["t-1"]);
    let r = http
        .get("/ticket/runs?started_after_ms=99999999999999")
        .await;
    assert!(workflow_ids(&r.body).is_empty());

    // Pages of two: the cursor is the last run id of the page.
    let r = http.get("/ticket/runs?limit=2").await;
    assert_eq!(workflow_ids(&r.body), ["t-3", "t-2"]);
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    assert_eq!(Value::from(cursor.as_str()), r.body["runs"][1]["run_id"]);
    let r = http
        .get(&format!("/ticket/runs?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(workflow_ids(&r.body), ["t-1"]);
    assert_eq!(r.body["next_cursor"], Value::Null);

    for bad in [
        "/ticket/runs?search=customer",
        "/ticket/runs?search=tier=int:two",
        "/ticket/runs?started_after_ms=yesterday",
    ] {
        let r = http.get(bad).await;
        assert_eq!(
            (r.status, r.body["error"].as_str()),
            (400, Some("invalid_args")),
            "{bad}: {:?}",
            r.body
        );
    }

    // The remote client sends a memo and the same filters.
    let remote = net.connect(&server).await.unwrap();
    let options = StartOptions::default().with_memo("via", "remote").unwrap();
    remote
        .start_with::<Ticket>("t-4", "acme".into(), options)
        .await
        .unwrap();
    until_tagged(&http, "t-4").await;
    let filter = ListFilter {
        search: vec![
            ("customer".into(), SearchValue::from("acme")),
            ("tier".into(), SearchValue::Int(1)),
        ],
        status: Some(RunStatus::Running),
        ..ListFilter::default()
    };
    let runs = remote.list(filter).await.unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r.workflow_id.as_str()).collect();
    assert_eq!(ids, ["t-4", "t-3"]);
    assert_eq!(runs[0].memo["via"].decode::<String>().unwrap(), "remote");
    assert_eq!(runs[0].search_attributes["tier"], SearchValue::Int(1));
    let d = remote.handle::<Ticket>("t-4").describe().await.unwrap();
    assert_eq!(d.search_attributes["customer"], SearchValue::from("acme"));
    assert_eq!(d.memo["via"].decode::<String>().unwrap(), "remote");
    let paged = remote
        .list(ListFilter {
            after_run_id: Some(runs[0].run_id.clone()),
            limit: 1,
            ..ListFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(paged[0].workflow_id, "t-3");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}
