//! Asynchronous activity completion over HTTP: `POST /_activities/{complete,fail,heartbeat}`
//! with a task token (JSON, behind the bearer token), and the remote client's
//! `complete_activity` / `fail_activity` / `heartbeat_activity`, with the same errors as in
//! process.

#[macro_use]
mod common;

use common::TOKEN;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wf_http::ServeOptions;
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Approval;

#[workflow]
impl Approval {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, doc: String) -> Result<String, WorkflowError> {
        let verdict = ctx
            .activity(Desk::request_approval, doc)
            .start_to_close(Duration::from_secs(600))
            .retry(RetryPolicy {
                initial_interval: Duration::from_millis(10),
                maximum_attempts: 2,
                ..RetryPolicy::default()
            })
            .await;
        Ok(match verdict {
            Ok(v) => v,
            Err(e) => format!("error: {e}"),
        })
    }
}

/// Files each request with its token for an approver to answer later.
#[derive(Default)]
pub struct Desk {
    tokens: Mutex<Vec<String>>,
}

#[activities]
impl Desk {
    #[activity]
    async fn request_approval(
        &self,
        ctx: ActivityContext,
        _doc: String,
    ) -> Result<String, ActivityError> {
        self.tokens.lock().unwrap().push(ctx.task_token());
        Err(ActivityError::will_complete_async())
    }
}

impl Desk {
    /// The `n`th token (from 1), once the engine holds its attempt open.
    async fn token(&self, engine: &Engine, n: usize) -> String {
        for _ in 0..1000 {
            let held = engine
                .metrics()
                .value(
                    "wf_activity_async_holds_total",
                    &[("activity", "request_approval")],
                )
                .unwrap_or(0.0);
            if held >= n as f64 {
                if let Some(t) = self.tokens.lock().unwrap().get(n - 1) {
                    return t.clone();
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("request {n} was never held");
    }
}

async fn served(net: common::Net) -> (Engine, wf_http::Server, Arc<Desk>) {
    let desk = Arc::new(Desk::default());
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Approval>()
        .shared_activities(desk.clone())
        .build()
        .await
        .expect("engine");
    let server = net
        .serve(&engine, ServeOptions::default().token(TOKEN))
        .await;
    (engine, server, desk)
}

both_ways!(
    #[tokio::test]
    an_outside_system_completes_an_activity_with_json_posts
);
async fn an_outside_system_completes_an_activity_with_json_posts(net: common::Net) {
    let (engine, server, desk) = served(net).await;
    let http = net.http(&server, Some(TOKEN));
    let h = engine
        .client()
        .start::<Approval>("deal-1", "contract.pdf".into())
        .await
        .unwrap();
    let token = desk.token(&engine, 1).await;

    let anonymous = net.http(&server, None);
    let r = anonymous
        .post(
            "/_activities/complete",
            json!({"token": token, "result": "x"}),
        )
        .await;
    assert_eq!(r.status, 401, "behind the bearer token: {:?}", r.body);

    let r = http
        .post(
            "/_activities/complete",
            json!({"token": "forged", "result": "x"}),
        )
        .await;
    assert_eq!((r.status, &r.body["error"]), (400, &json!("invalid_args")));
    let r = http
        .post("/_activities/fail", json!({"token": token}))
        .await;
    assert_eq!((r.status, &r.body["error"]), (400, &json!("invalid_args")));
    let r = http
        .post("/_activities/approve", json!({"token": token}))
        .await;
    assert_eq!(r.status, 404);

    let r = http
        .post(
            "/_activities/heartbeat",
            json!({"token": token, "details": {"read": 3}}),
        )
        .await;
    assert_eq!((r.status, &r.body["status"]), (200, &json!("recorded")));
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": token, "result": "approved"}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["status"]),
        (200, &json!("completed")),
        "{:?}",
        r.body
    );
    assert_eq!(h.result().await.unwrap(), "approved");

    let r = http
        .post(
            "/_activities/complete",
            json!({"token": token, "result": "again"}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["error"]),
        (404, &json!("activity_not_pending")),
        "{:?}",
        r.body
    );
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    the_remote_client_fails_heartbeats_and_completes_by_token
);
async fn the_remote_client_fails_heartbeats_and_completes_by_token(net: common::Net) {
    let (engine, server, desk) = served(net).await;
    let remote = net.connect(&server).token(TOKEN).await.expect("connect");
    let h = remote
        .start::<Approval>("deal-2", "contract.pdf".into())
        .await
        .unwrap();
    let first = desk.token(&engine, 1).await;
    remote.heartbeat_activity(&first, &1u32).await.unwrap();
    remote
        .fail_activity(&first, ActivityError::retryable("the approver is away"))
        .await
        .unwrap();
    let second = desk.token(&engine, 2).await;
    match remote.complete_activity(&first, "approved").await {
        Err(WfError::ActivityNotPending(m)) => assert!(m.contains("attempt 2 replaced it"), "{m}"),
        other => panic!("{other:?}"),
    }
    match remote.complete_activity("wfat1.nope", "approved").await {
        Err(WfError::InvalidArgument(m)) => assert!(m.contains("not an activity task token")),
        other => panic!("{other:?}"),
    }
    remote.complete_activity(&second, "approved").await.unwrap();
    assert_eq!(h.result().await.unwrap(), "approved");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}
