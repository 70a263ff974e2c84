//! What a JSON caller reads when a request is wrong: decode errors in JSON terms, hints
//! without typos, a signal to a name no handler takes, durations as milliseconds, and no
//! panic (always a JSON error body) on any body shape. Servers on 127.0.0.1:0.

#[macro_use]
mod common;

use common::Http;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use wf_http::ServeOptions;
use wf_sdk::prelude::*;

/// A price list's input: a nested struct, so that errors say where in it.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Prices {
    /// What is priced.
    pub item: String,
    /// How many decimals.
    pub digits: u32,
}

/// A run with an `f64` update, an `approve` signal and a query, waiting until closed.
#[derive(Default)]
pub struct Pricing {
    price: f64,
    closed: bool,
}

#[workflow(name = "pricing")]
impl Pricing {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, input: Prices) -> Result<f64, WorkflowError> {
        let _ = input;
        ctx.wait_condition(|s| s.closed).await;
        Ok(ctx.state(|s| s.price))
    }

    #[signal]
    fn approve(&mut self, by: String) {
        let _ = by;
        self.closed = true;
    }

    #[update]
    fn set_price(&mut self, new: f64, flags: Vec<bool>) -> Result<f64, UpdateError> {
        let _ = flags;
        self.price = new;
        Ok(new)
    }

    #[query]
    fn price(&self) -> f64 {
        self.price
    }
}

async fn setup() -> (wf_sdk::engine::Engine, wf_http::Server, Http) {
    let engine = Engine::builder()
        .memory()
        .workflow::<Pricing>()
        .build()
        .await
        .expect("engine");
    let net = common::Net::Http;
    let server = net.serve(&engine, ServeOptions::default()).await;
    let http = net.http(&server, None);
    let r = http
        .post(
            "/pricing/runs",
            json!({"id": "p-1", "input": {"item": "tea", "digits": 2}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    (engine, server, http)
}

#[tokio::test]
async fn decode_errors_read_in_json_terms() {
    let (_engine, server, http) = setup().await;
    let update = |args: Value| json!({"name": "set_price", "args": args});
    let cases = [
        (
            update(json!(["abc", []])),
            Some("new"),
            r#"argument "new" (f64): expected a number, got a string "abc""#,
        ),
        (
            update(json!({"new": true, "flags": []})),
            Some("new"),
            r#"argument "new" (f64): expected a number, got the boolean true"#,
        ),
        (
            update(json!([null, []])),
            Some("new"),
            r#"argument "new" (f64): expected a number, got null"#,
        ),
        (
            update(json!([1.5, {"a": 1}])),
            Some("flags"),
            r#"argument "flags" (Vec<bool>): expected an array, got an object"#,
        ),
        (
            update(json!([1.5, [true, "no"]])),
            Some("flags"),
            r#"argument "flags" (Vec<bool>): at "[1]": expected a boolean, got a string "no""#,
        ),
        (
            update(json!([1.5])),
            None,
            r#"update "set_price" takes 2 arguments (new: f64, flags: Vec<bool>), got 1"#,
        ),
        (
            update(json!({"new": 1.5})),
            Some("flags"),
            r#"missing argument "flags" (Vec<bool>) of update "set_price""#,
        ),
        (
            update(json!({"new": 1.5, "flags": [], "old": 1})),
            Some("old"),
            r#"update "set_price" has no parameter "old"; its parameters: new: f64, flags: Vec<bool>"#,
        ),
    ];
    for (body, param, message) in cases {
        let r = http.post("/pricing/runs/p-1/update", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {:?}", r.body);
        assert_eq!(r.body["error"], "invalid_args", "{body}");
        assert_eq!(r.body["param"].as_str(), param, "{body}: {:?}", r.body);
        assert_eq!(r.body["message"], message, "{body}");
    }
    let r = http
        .post(
            "/pricing/runs/p-1/signal",
            json!({"name": "approve", "args": [42]}),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.body["message"],
        r#"argument "by" (String): expected a string, got the number 42"#
    );
    // A start's input: where in it.
    for (input, message) in [
        (
            json!({"item": "tea", "digits": "two"}),
            r#"input (Prices): at "digits": expected a non-negative integer (u32), got a string "two""#,
        ),
        (
            json!({"item": "tea", "digits": -1}),
            r#"input (Prices): at "digits": expected a non-negative integer (u32), got the number -1"#,
        ),
        (
            json!({"item": "tea"}),
            r#"input (Prices): missing field "digits""#,
        ),
        (
            json!("tea"),
            r#"input (Prices): expected an object (Prices), got a string "tea""#,
        ),
    ] {
        let r = http
            .post("/pricing/runs", json!({"id": "p-2", "input": input}))
            .await;
        assert_eq!((r.status, &r.body["error"]), (400, &json!("invalid_args")));
        assert_eq!(r.body["message"], message, "{input}");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_names_get_plurals_a_clean_hint_and_a_guess() {
    let (_engine, server, http) = setup().await;
    let r = http
        .post("/pricing/runs/p-1/query", json!({"name": "prise"}))
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.body,
        json!({
            "error": "not_found",
            "message": "unknown query \"prise\"; did you mean \"price\"? pricing has queries: price",
            "kind": "query",
            "name": "prise",
            "hint": "did you mean \"price\"? pricing has queries: price",
        })
    );
    let r = http
        .post("/pricing/runs/p-1/update", json!({"name": "reprice"}))
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["hint"], "pricing has updates: set_price");
    let r = http.post("/pricng/runs", json!({"id": "x"})).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.body["hint"],
        "did you mean \"pricing\"? this server serves: pricing"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_signal_without_a_handler_is_buffered_and_says_so() {
    let (_engine, server, http) = setup().await;
    let r = http
        .post(
            "/pricing/runs/p-1/signal",
            json!({"name": "aprove", "args": ["ann"]}),
        )
        .await;
    assert_eq!(r.status, 202);
    assert_eq!(
        r.body,
        json!({
            "status": "buffered",
            "handler": false,
            "hint": "pricing has no signal handler named \"aprove\"; did you mean \"approve\"? \
                     It is kept and delivered if a handler for it exists later (or read by \
                     ctx.wait_for_signal).",
        })
    );
    let r = http
        .post(
            "/pricing/runs/p-1/signal",
            json!({"name": "approve", "args": ["ann"]}),
        )
        .await;
    assert_eq!(r.status, 202);
    assert_eq!(r.body["handler"], true);
    assert!(r.body.get("hint").is_none(), "{:?}", r.body);
    server.shutdown().await.unwrap();
}

/// Every route that takes a body, given every JSON shape: a 4xx JSON error body (or a
/// success), never a panic or a dropped connection.
#[tokio::test]
async fn hostile_bodies_get_json_errors() {
    let (_engine, server, http) = setup().await;
    let routes = [
        "/pricing/runs",
        "/pricing/runs/p-1/signal",
        "/pricing/runs/p-1/update",
        "/pricing/runs/p-1/query",
        "/pricing/runs/p-1/cancel",
        "/_any/runs/p-1/query",
    ];
    let shapes = [
        json!(null),
        json!(true),
        json!(-1),
        json!(1e300),
        json!("x"),
        json!([]),
        json!([1, "a", null]),
        json!({}),
        json!({"name": null}),
        json!({"name": "set_price", "args": 7}),
        json!({"name": "set_price", "args": [[[[[]]]], {"a": {"b": []}}]}),
        json!({"name": "set_price", "args": {"new": {"x": [1]}, "flags": "no"}}),
        json!({"name": "approve", "args": [{"by": "ann"}]}),
        json!({"name": "price", "args": [1, 2, 3]}),
        json!({"id": 5, "input": [1, 2]}),
        json!({"id": "p-3", "input": {"item": [], "digits": {"x": 1}}, "memo": 3}),
    ];
    for route in routes {
        for shape in &shapes {
            let r = http.post(route, shape.clone()).await;
            if r.status >= 400 {
                assert!(r.status < 500, "{route} {shape}: {} {:?}", r.status, r.body);
                assert!(
                    r.body["error"].is_string() && r.body["message"].is_string(),
                    "{route} {shape}: {:?}",
                    r.body
                );
                let message = r.body["message"].as_str().unwrap();
                assert!(!message.contains("msgpack"), "{route} {shape}: {message}");
            }
        }
    }
    server.shutdown().await.unwrap();
}
