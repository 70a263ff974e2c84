//! The guards of `serve`: the token, the body limit, the loopback rule, and no panic (nor a
//! 5xx) on any input: random paths and JSON bodies, bounded in count.

#[macro_use]
mod common;

use common::{served, TOKEN};
use proptest::prelude::*;
use serde_json::{json, Value};
use wf_http::ServeOptions;

both_ways!(
    #[tokio::test]
    the_token_guards_everything_but_health
);
async fn the_token_guards_everything_but_health(net: common::Net) {
    let (_engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let none = net.http(&server, None);
    let wrong = net.http(&server, Some("test-tokeN"));
    let right = net.http(&server, Some(TOKEN));

    assert_eq!(none.get("/healthz").await.status, 200);
    for http in [&none, &wrong] {
        for path in [
            "/agent_run",
            "/agent_run/runs",
            "/agent_run/runs/x",
            "/nowhere",
        ] {
            let r = http.get(path).await;
            assert_eq!(
                (r.status, r.body["error"].as_str()),
                (401, Some("unauthorized")),
                "{path}"
            );
        }
        let r = http
            .post(
                "/agent_run/runs",
                json!({"id": "t-1", "input": {"goal": "g", "step": 0}}),
            )
            .await;
        assert_eq!(r.status, 401);
    }
    // Nothing was started by the refused calls.
    assert_eq!(right.get("/agent_run/runs/t-1").await.status, 404);
    let r = right
        .post(
            "/agent_run/runs",
            json!({"id": "t-1", "input": {"goal": "g", "step": 0}}),
        )
        .await;
    assert_eq!(r.status, 201);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    a_body_over_the_limit_is_413_and_changes_nothing
);
async fn a_body_over_the_limit_is_413_and_changes_nothing(net: common::Net) {
    let options = ServeOptions {
        body_limit: 64 * 1024,
        ..ServeOptions::default()
    };
    let (_engine, server) = served(net, options).await;
    let http = net.http(&server, None);
    let big = "x".repeat(100 * 1024);
    let r = http
        .post(
            "/agent_run/runs",
            json!({"id": "big", "input": {"goal": big, "step": 0}}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (413, Some("too_large")),
        "{:?}",
        r.body
    );
    assert_eq!(http.get("/agent_run/runs/big").await.status, 404);

    // Under the HTTP limit but over the engine's payload limit: 413 from the engine's check.
    let (_engine2, server2) = served(
        net,
        ServeOptions {
            body_limit: 8 * 1024 * 1024,
            ..ServeOptions::default()
        },
    )
    .await;
    let http2 = net.http(&server2, None);
    let huge = "y".repeat(wf_sdk::limits::MAX_PAYLOAD_BYTES + 10);
    let r = http2
        .post(
            "/agent_run/runs",
            json!({"id": "huge", "input": {"goal": huge, "step": 0}}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (413, Some("too_large")),
        "{:?}",
        r.body["message"]
    );
    assert_eq!(http2.get("/agent_run/runs/huge").await.status, 404);
    server.shutdown().await.unwrap();
    server2.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    serving_off_loopback_needs_a_token
);
async fn serving_off_loopback_needs_a_token(net: common::Net) {
    let engine = common::engine().await;
    let err = wf_http::serve(&engine, "0.0.0.0:0", net.options(ServeOptions::default()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs a token"), "{err}");
    let options = net.options(ServeOptions::default().token(TOKEN));
    let server = wf_http::serve(&engine, "0.0.0.0:0", options).await.unwrap();
    server.shutdown().await.unwrap();
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z_ ]{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("note"),
            Just("pause"),
            Just("status"),
            Just("change_goal"),
            Just("set_step")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("name".to_string()),
                    Just("args".to_string()),
                    Just("id".to_string()),
                    Just("input".to_string()),
                    Just("text".to_string()),
                    Just("times".to_string()),
                    Just("wait".to_string()),
                    Just("timeout_ms".to_string()),
                    Just("reason".to_string()),
                    Just("conflict".to_string()),
                    Just("update_id".to_string()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn route() -> impl Strategy<Value = (String, String)> {
    let ty = prop_oneof![
        Just("agent_run"),
        Just("_"),
        Just("other"),
        Just("%ZZ"),
        Just("")
    ];
    let id = prop_oneof![
        Just("fz-1".to_string()),
        Just("missing".to_string()),
        Just("%00".to_string()),
        Just("a%2Fb".to_string()),
        "[a-z0-9-]{1,8}",
    ];
    let tail = prop_oneof![
        Just(""),
        Just("/signal"),
        Just("/update"),
        Just("/query"),
        Just("/history?from=0&limit=0"),
        Just("/history?from=x"),
        Just("/result?wait_ms=1"),
        Just("/updates/u?wait=accepted&wait_ms=1"),
        Just("/cancel"),
        Just("/terminate"),
        Just("/nope"),
    ];
    // The routes without a run id: health, type metadata, start and list, schedules.
    let other = prop_oneof![
        Just("/healthz"),
        Just("/agent_run"),
        Just("/nap"),
        Just("/agent_run/runs"),
        Just("/agent_run/runs?status=running&limit=2"),
        Just("/agent_run/runs?status=nope&limit=-1&cursor=%FF"),
        Just("/_/runs"),
        Just("/_schedules"),
        Just("/_schedules/s-1"),
        Just("/_schedules/s-1/pause"),
        Just("/_schedules/s-1/trigger"),
        Just("/_schedules/s-1/whatever"),
    ];
    let method = prop_oneof![Just("GET"), Just("POST"), Just("PUT"), Just("DELETE")];
    (method, ty, id, tail, prop::option::weighted(0.3, other)).prop_map(
        |(m, ty, id, tail, other)| {
            let path = match (other, ty) {
                (Some(path), _) => path.to_string(),
                (None, "") => format!("/{id}{tail}"),
                (None, _) => format!("/{ty}/runs/{id}{tail}"),
            };
            (m.to_string(), path)
        },
    )
}

mod random_requests_get_an_answer_never_a_panic_or_a_5xx {
    #[test]
    fn http() {
        super::random_requests_get_an_answer_never_a_panic_or_a_5xx(super::common::Net::Http)
    }
    #[test]
    fn https() {
        super::random_requests_get_an_answer_never_a_panic_or_a_5xx(super::common::Net::Https)
    }
}
fn random_requests_get_an_answer_never_a_panic_or_a_5xx(net: common::Net) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_engine, server, http) = rt.block_on(async {
        let (engine, server) = served(net, ServeOptions::default()).await;
        let http = net.http(&server, None);
        let r = http
            .post(
                "/agent_run/runs",
                json!({"id": "fz-1", "input": {"goal": "g", "step": 0}}),
            )
            .await;
        assert_eq!(r.status, 201);
        (engine, server, http)
    });
    let config = ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |((method, path) in route(), body in json_value(), raw in any::<bool>())| {
        let bytes = if raw {
            // Bytes that are rarely JSON: cut the JSON in half.
            let s = serde_json::to_vec(&body).unwrap();
            s[..s.len() / 2].to_vec()
        } else {
            serde_json::to_vec(&body).unwrap()
        };
        let r = rt.block_on(http.raw(&method, &path, Some("application/json"), bytes));
        prop_assert!(r.status < 500 || r.status == 504, "{method} {path}: {} {:?}", r.status, r.raw);
        if r.status >= 400 {
            prop_assert!(r.body["error"].is_string() && r.body["message"].is_string(),
                "{method} {path}: {} {:?}", r.status, r.raw);
        }
    });
    rt.block_on(server.shutdown()).unwrap();
}
