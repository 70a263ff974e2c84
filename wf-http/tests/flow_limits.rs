//! Flow limits over HTTP: an admin sets, lists and removes them (JSON, and the remote client's
//! `flow_limits()`); a limit set over HTTP binds the engine's activities; a read token may
//! list but not set; a bad body is a 400 naming the forms.

#[macro_use]
mod common;

use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wf_http::{Role, ServeOptions};
use wf_sdk::flow::{FlowKind, FlowLimit, FlowScope};
use wf_sdk::prelude::*;

const READ: &str = "flow-read-token";
const ADMIN: &str = "flow-admin-token";

/// Counts how many `work` attempts run at once.
#[derive(Default)]
pub struct Gauge {
    running: AtomicU32,
    max: AtomicU32,
}

#[activities]
impl Gauge {
    /// Runs a short while, counting.
    #[activity]
    async fn work(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

/// One `work` under flow key `model`.
#[derive(Default)]
pub struct Call;

#[workflow(name = "call")]
impl Call {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        Ok(ctx.activity(Gauge::work, ()).flow_key("model").await?)
    }
}

both_ways!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    flow_limits_are_set_listed_and_removed_over_http_and_bind_the_engine
);
async fn flow_limits_are_set_listed_and_removed_over_http_and_bind_the_engine(net: common::Net) {
    let gauge = Arc::new(Gauge::default());
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(10))
        .max_concurrent_activities(16)
        .workflow::<Call>()
        .shared_activities(gauge.clone())
        .build()
        .await
        .unwrap();
    let options = ServeOptions::default()
        .token_with_role(Role::Read, READ)
        .token(ADMIN);
    let server = net.serve(&engine, options).await;
    let admin = net.http(&server, Some(ADMIN));
    let reader = net.http(&server, Some(READ));

    // A read token lists, but may not set or remove.
    let empty = reader.get("/_flow_limits").await;
    assert_eq!((empty.status, empty.body.clone()), (200, json!([])));
    let body = json!({"scope": {"key": "model"}, "concurrency": 1});
    let denied = reader.post("/_flow_limits", body.clone()).await;
    assert_eq!(denied.status, 403, "{:?}", denied.body);
    let denied = reader
        .raw(
            "DELETE",
            "/_flow_limits/key/model/concurrency",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(denied.status, 403, "{:?}", denied.body);

    // Bad bodies and paths: 400 naming the forms, nothing set.
    for bad in [
        json!({"scope": {"tenant": "a"}, "concurrency": 1}),
        json!({"scope": {"key": "a"}}),
        json!({"scope": {"key": "a", "activity": "b"}, "concurrency": 1}),
        json!({"scope": {"key": "a"}, "rate": {"limit": 5}}),
        json!({"scope": {"key": "a"}, "concurrency": -1}),
        json!("concurrency 1"),
    ] {
        let r = admin.post("/_flow_limits", bad.clone()).await;
        assert_eq!(r.status, 400, "{bad}: {:?}", r.body);
        assert_eq!(r.body["error"], "invalid_args", "{bad}");
        let message = r.body["message"].as_str().unwrap_or_default();
        assert!(message.contains("\"concurrency\": N"), "{bad}: {message}");
    }
    let zero_period = json!({"scope": {"key": "a"}, "rate": {"limit": 5, "period_ms": 0}});
    let r = admin.post("/_flow_limits", zero_period).await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = admin
        .raw(
            "DELETE",
            "/_flow_limits/tenant/a/concurrency",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = admin
        .raw("DELETE", "/_flow_limits/key/a/burst", None, Vec::new())
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert_eq!(admin.get("/_flow_limits").await.body, json!([]));

    // Set over JSON; the limit binds the engine's activities.
    let set = admin.post("/_flow_limits", body.clone()).await;
    assert_eq!((set.status, set.body.clone()), (200, body.clone()));
    let remote = net.connect(&server).token(ADMIN).await.unwrap();
    let mut handles = Vec::new();
    for i in 0..10 {
        handles.push(remote.start::<Call>(format!("call-{i}"), ()).await.unwrap());
    }
    for h in handles {
        h.result().await.unwrap();
    }
    assert_eq!(gauge.max.load(Ordering::SeqCst), 1, "concurrency 1 held");

    // The remote client sets a rate, with a name that needs percent-encoding, and lists both.
    let odd = FlowScope::activity("a/b c?%");
    let rate = FlowLimit::rate(odd.clone(), 60, Duration::from_secs(60)).burst(3);
    remote.flow_limits().set(rate.clone()).await.unwrap();
    let listed = remote.flow_limits().list().await.unwrap();
    let concurrency = FlowLimit::concurrency(FlowScope::key("model"), 1);
    assert!(
        listed.contains(&rate) && listed.contains(&concurrency),
        "{listed:?}"
    );
    assert_eq!(listed.len(), 2, "{listed:?}");
    let json_list = reader.get("/_flow_limits").await.body;
    assert!(
        json_list.as_array().is_some_and(|a| a.contains(&json!({
            "scope": {"activity": "a/b c?%"},
            "rate": {"limit": 60, "period_ms": 60000, "burst": 3}
        }))),
        "{json_list}"
    );

    // Remove: the remote client, then the JSON route; removing again says there was none.
    assert!(remote
        .flow_limits()
        .remove(odd.clone(), FlowKind::Rate)
        .await
        .unwrap());
    assert!(!remote
        .flow_limits()
        .remove(odd, FlowKind::Rate)
        .await
        .unwrap());
    let r = admin
        .raw(
            "DELETE",
            "/_flow_limits/key/model/concurrency",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!((r.status, r.body), (200, json!({"removed": true})));
    assert!(remote.flow_limits().list().await.unwrap().is_empty());

    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    flow_usage_shows_the_attempts_a_limit_holds_back
);
async fn flow_usage_shows_the_attempts_a_limit_holds_back(net: common::Net) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(10))
        .workflow::<Call>()
        .shared_activities(Arc::new(Gauge::default()))
        .flow_limit(FlowLimit::concurrency(FlowScope::key("model"), 0))
        .build()
        .await
        .unwrap();
    let server = net
        .serve(
            &engine,
            ServeOptions::default().token_with_role(Role::Read, READ),
        )
        .await;
    let reader = net.http(&server, Some(READ));
    let remote = net.connect(&server).token(READ).await.unwrap();
    let mut handles = Vec::new();
    for i in 0..3 {
        let client = engine.client();
        handles.push(client.start::<Call>(format!("held-{i}"), ()).await.unwrap());
    }
    // A limit of 0 holds all three back: they wait, none runs.
    let mut usage = Vec::new();
    for _ in 0..500 {
        usage = remote.flow_limits().usage().await.unwrap();
        if usage.first().is_some_and(|u| u.waiting == 3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        (usage.len(), usage[0].running, usage[0].tokens),
        (1, 0, None)
    );
    let r = reader.get("/_flow_limits/usage").await;
    assert_eq!(
        (r.status, r.body),
        (
            200,
            json!([{"scope": {"key": "model"}, "concurrency": 0, "running": 0, "waiting": 3}])
        )
    );
    // `/metrics` carries them as gauges, labelled by the limit.
    let r = String::from_utf8_lossy(&reader.get("/metrics").await.raw).into_owned();
    let line = "wf_flow_waiting{scope_kind=\"key\",scope=\"model\",kind=\"concurrency\"} 3";
    assert!(r.contains(line), "{r}");
    assert!(r.contains("# TYPE wf_flow_running gauge"), "{r}");
    // Raised, they run and finish; nothing waits.
    let limits = engine.client().flow_limits();
    limits
        .set(FlowLimit::concurrency(FlowScope::key("model"), 3))
        .await
        .unwrap();
    for h in handles {
        h.result().await.unwrap();
    }
    let usage = limits.usage().await.unwrap();
    assert_eq!((usage[0].running, usage[0].waiting), (0, 0), "{usage:?}");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}
