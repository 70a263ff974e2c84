//! The web view over HTTP and HTTPS (no browser): its files are served with their content types
//! and a Content-Security-Policy, without the token, while the data routes, the view's own
//! included, stay behind it.

#[macro_use]
mod common;

use bytes::Bytes;
use hyper::header::HeaderMap;
use std::net::SocketAddr;

struct Got {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

async fn request(
    net: common::Net,
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> Got {
    let reply = common::Http::new(net, addr, token)
        .raw(method, path, None, Vec::new())
        .await;
    Got {
        status: reply.status,
        headers: reply.headers,
        body: reply.raw,
    }
}

fn header<'a>(got: &'a Got, name: &str) -> &'a str {
    got.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The `name` of each item of a JSON array.
fn names(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(|x| x["name"].as_str()).collect())
        .unwrap_or_default()
}

both_ways!(
    #[tokio::test]
    ui_files_are_served_without_the_token_with_their_types_and_a_csp
);
async fn ui_files_are_served_without_the_token_with_their_types_and_a_csp(net: common::Net) {
    let (_engine, server) =
        common::served(net, wf_http::ServeOptions::default().token(common::TOKEN)).await;
    let addr = server.local_addr();
    for (path, content_type, needle) in [
        ("/ui/", "text/html; charset=utf-8", "<script src=\"app.js\""),
        (
            "/ui/app.js",
            "text/javascript; charset=utf-8",
            "'use strict'",
        ),
        ("/ui/run.js", "text/javascript; charset=utf-8", "renderRun"),
        (
            "/ui/streams.js",
            "text/javascript; charset=utf-8",
            "streamsPanel",
        ),
        (
            "/ui/ops.js",
            "text/javascript; charset=utf-8",
            "renderBatches",
        ),
        ("/ui/app.css", "text/css; charset=utf-8", ".status"),
        ("/ui/favicon.svg", "image/svg+xml", "<svg"),
    ] {
        let got = request(net, addr, "GET", path, None).await;
        assert_eq!(got.status, 200, "{path}");
        assert_eq!(header(&got, "content-type"), content_type, "{path}");
        let csp = header(&got, "content-security-policy");
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
        ] {
            assert!(
                csp.contains(directive),
                "{path}: CSP {csp:?} lacks {directive}"
            );
        }
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(header(&got, "x-content-type-options"), "nosniff", "{path}");
        let text = String::from_utf8_lossy(&got.body);
        assert!(text.contains(needle), "{path} does not contain {needle:?}");
    }
    server.shutdown().await.expect("shutdown");
}

both_ways!(
    #[tokio::test]
    ui_without_a_slash_redirects_relatively
);
async fn ui_without_a_slash_redirects_relatively(net: common::Net) {
    let (_engine, server) =
        common::served(net, wf_http::ServeOptions::default().token(common::TOKEN)).await;
    let got = request(net, server.local_addr(), "GET", "/ui", None).await;
    assert_eq!(got.status, 308);
    assert_eq!(header(&got, "location"), "ui/");
    server.shutdown().await.expect("shutdown");
}

both_ways!(
    #[tokio::test]
    the_token_still_gates_the_data_routes
);
async fn the_token_still_gates_the_data_routes(net: common::Net) {
    let (_engine, server) =
        common::served(net, wf_http::ServeOptions::default().token(common::TOKEN)).await;
    let addr = server.local_addr();
    for (method, path) in [
        ("GET", "/ui/types"),
        ("GET", "/_/runs"),
        ("GET", "/agent_run"),
        ("GET", "/ui/nothing-here"),
        // Only GET of the files is open.
        ("POST", "/ui/"),
    ] {
        let got = request(net, addr, method, path, None).await;
        assert_eq!(got.status, 401, "{method} {path} without the token");
        let wrong = request(net, addr, method, path, Some("wrong-token")).await;
        assert_eq!(wrong.status, 401, "{method} {path} with a wrong token");
    }
    let got = request(net, addr, "GET", "/_/runs", Some(common::TOKEN)).await;
    assert_eq!(got.status, 200);
    server.shutdown().await.expect("shutdown");
}

both_ways!(
    #[tokio::test]
    ui_types_lists_every_served_type_with_its_handlers
);
async fn ui_types_lists_every_served_type_with_its_handlers(net: common::Net) {
    let (_engine, server) =
        common::served(net, wf_http::ServeOptions::default().token(common::TOKEN)).await;
    let got = request(
        net,
        server.local_addr(),
        "GET",
        "/ui/types",
        Some(common::TOKEN),
    )
    .await;
    assert_eq!(got.status, 200);
    assert_eq!(header(&got, "content-type"), "application/json");
    let body: serde_json::Value = serde_json::from_slice(&got.body).expect("JSON");
    let type_names = names(&body["types"]);
    assert_eq!(type_names, ["agent_run", "nap"]);
    let agent = &body["types"][0];
    let queries = names(&agent["queries"]);
    assert_eq!(queries, ["status", "notes_with"]);
    let note = agent["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .find(|s| s["name"] == "note")
        .expect("the note signal");
    assert_eq!(note["params"][0]["name"], "text");
    assert_eq!(note["params"][1]["name"], "times");
    assert_eq!(note["params"][1]["type"], "u32");
    server.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn the_view_works_nested_under_a_prefix() {
    let engine = common::engine().await;
    let app = axum::Router::new().nest("/wf", wf_http::router(&engine));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    let page = request(common::Net::Http, addr, "GET", "/wf/ui/", None).await;
    assert_eq!(page.status, 200);
    assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
    // The page reaches the API relative to itself: ../ of /wf/ui/ is /wf/.
    let types = request(common::Net::Http, addr, "GET", "/wf/ui/types", None).await;
    assert_eq!(types.status, 200);
    let redirect = request(common::Net::Http, addr, "GET", "/wf/ui", None).await;
    assert_eq!(redirect.status, 308);
    assert_eq!(
        header(&redirect, "location"),
        "ui/",
        "relative: /wf/ui -> /wf/ui/"
    );
    task.abort();
}
