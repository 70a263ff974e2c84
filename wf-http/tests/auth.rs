//! Tokens with roles: each role reaches its routes and gets 403 naming the role above it; an
//! unknown token gets 401; every route of the guide's roles table (docs/guide/tokens-and-roles.md)
//! answers each role as the table says; tokens files; the remote client's errors.

#[macro_use]
mod common;

use common::{served, AgentRun};
use serde_json::{json, Value};
use std::path::PathBuf;
use wf_http::{Role, ServeOptions, Tokens};
use wf_sdk::prelude::*;

const READ: &str = "read-token-5c1e";
const WRITE: &str = "write-token-a07d";
const ADMIN: &str = "admin-token-93fb";

fn three_roles() -> ServeOptions {
    ServeOptions::default()
        .token_with_role(Role::Read, READ)
        .tokens(Tokens::new().with(Role::Write, WRITE))
        .token(ADMIN)
}

fn start_body(id: &str) -> Value {
    json!({"id": id, "input": {"goal": "g", "step": 0}})
}

/// `r` is 403 `forbidden` naming the role needed and the role the token has.
fn assert_forbidden(r: &common::Reply, needs: &str, has: &str) {
    assert_eq!(r.status, 403, "{:?}", r.body);
    assert_eq!(r.body["error"], "forbidden", "{:?}", r.body);
    let message = r.body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("needs a token with the {needs} role"))
            && message.contains(&format!("this token has the {has} role")),
        "{message}"
    );
}

both_ways!(
    #[tokio::test]
    each_role_reaches_its_routes_and_is_refused_above_them
);
async fn each_role_reaches_its_routes_and_is_refused_above_them(net: common::Net) {
    let (_engine, server) = served(net, three_roles()).await;
    let read = net.http(&server, Some(READ));
    let write = net.http(&server, Some(WRITE));
    let admin = net.http(&server, Some(ADMIN));

    for (http, role) in [(&read, "read"), (&write, "write"), (&admin, "admin")] {
        let r = http.get("/_whoami").await;
        assert_eq!((r.status, r.body["role"].as_str()), (200, Some(role)));
    }

    // read: looks, never starts.
    assert_eq!(read.get("/agent_run/runs").await.status, 200);
    assert_eq!(read.get("/metrics").await.status, 200);
    let r = read.post("/agent_run/runs", start_body("r-1")).await;
    assert_forbidden(&r, "write", "read");
    assert_eq!(
        read.get("/agent_run/runs/r-1").await.status,
        404,
        "not started"
    );

    // write: starts, signals, queries; never terminates.
    assert_eq!(
        write
            .post("/agent_run/runs", start_body("w-1"))
            .await
            .status,
        201
    );
    let r = write
        .post("/agent_run/runs/w-1/signal", json!({"name": "pause"}))
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let r = read
        .post("/agent_run/runs/w-1/query", json!({"name": "status"}))
        .await;
    assert_eq!(r.status, 200, "a query is a read: {:?}", r.body);
    let r = write
        .post("/agent_run/runs/w-1/terminate", json!({"reason": "no"}))
        .await;
    assert_forbidden(&r, "admin", "write");
    let r = write.post("/_purge", json!({"dry_run": true})).await;
    assert_forbidden(&r, "admin", "write");
    let r = read.get("/agent_run/runs/w-1").await;
    assert_eq!(r.body["status"], "running", "{:?}", r.body);

    // admin: everything.
    let r = admin
        .post("/agent_run/runs/w-1/terminate", json!({"reason": "ops"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = admin
        .post("/_purge", json!({"closed_before_ms": 0, "dry_run": true}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = read.get("/agent_run/runs/w-1").await;
    assert_eq!(r.body["status"], "terminated", "{:?}", r.body);
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    unknown_or_missing_tokens_get_401_and_public_routes_need_none
);
async fn unknown_or_missing_tokens_get_401_and_public_routes_need_none(net: common::Net) {
    let (_engine, server) = served(net, three_roles()).await;
    let none = net.http(&server, None);
    let unknown = net.http(&server, Some("admin-token-93fB"));
    for (http, says) in [
        (&none, "needs a token"),
        (&unknown, "does not know the token"),
    ] {
        for path in ["/_whoami", "/agent_run/runs", "/ui/types", "/nowhere"] {
            let r = http.get(path).await;
            assert_eq!(
                (r.status, r.body["error"].as_str()),
                (401, Some("unauthorized")),
                "{path}"
            );
            let message = r.body["message"].as_str().unwrap_or_default();
            assert!(message.contains(says), "{path}: {message}");
        }
        assert_eq!(
            http.post("/agent_run/runs", start_body("u-1")).await.status,
            401
        );
        for path in [
            "/healthz",
            "/readyz",
            "/ui/",
            "/ui/app.js",
            "/ui/favicon.svg",
        ] {
            assert_eq!(http.get(path).await.status, 200, "{path}");
        }
    }
    let admin = net.http(&server, Some(ADMIN));
    assert_eq!(
        admin.get("/agent_run/runs/u-1").await.status,
        404,
        "nothing started"
    );
    // A known token on no route or a wrong method: 404 and 405, as before tokens.
    assert_eq!(admin.get("/nowhere/at/all/here").await.status, 404);
    let r = admin.raw("PUT", "/healthz", None, Vec::new()).await;
    assert_eq!(r.status, 405);
    server.shutdown().await.unwrap();
}

/// The concrete request for a row of the guide's table.
fn concrete(path: &str) -> String {
    // The feed follows until the client leaves: ask for what is kept, then the end.
    if path == "/_events" {
        return "/_events?follow=false".to_string();
    }
    path.replace("{type}", "agent_run")
        .replace("{id}", "no-such-run")
        .replace("{update_id}", "u-1")
        .replace("{name}", "steps")
        // A published event is waited for even before its run exists: wait little.
        .replace("{key}", "stage?timeout_ms=1")
        .replace(
            "{action}",
            if path.starts_with("/_activities") {
                "complete"
            } else {
                "pause"
            },
        )
}

/// The guide's routes table: (method, path pattern, role or `none`).
fn guide_routes() -> Vec<(String, String, String)> {
    let guide = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/guide/tokens-and-roles.md");
    let text = std::fs::read_to_string(&guide).expect("the guide's tokens page");
    let section = text
        .split_once("## Which route needs which role")
        .expect("its routes section")
        .1;
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = Vec::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(route) = cells
            .get(1)
            .and_then(|c| c.strip_prefix('`'))
            .and_then(|c| c.strip_suffix('`'))
        else {
            continue;
        };
        let (method, path) = route.split_once(' ').expect("`METHOD /path`");
        rows.push((method.to_string(), path.to_string(), cells[2].to_string()));
    }
    rows
}

both_ways!(
    #[tokio::test]
    every_route_answers_each_role_as_the_guide_says
);
/// Every route of the table, asked by no token and by each role: refused exactly below its
/// role (401 without a token, 403 with one naming both roles), answered otherwise.
async fn every_route_answers_each_role_as_the_guide_says(net: common::Net) {
    let (_engine, server) = served(net, three_roles()).await;
    let rows = guide_routes();
    assert!(rows.len() >= 30, "the table has its routes: {rows:?}");
    let callers = [
        (None, None),
        (Some(Role::Read), Some(READ)),
        (Some(Role::Write), Some(WRITE)),
        (Some(Role::Admin), Some(ADMIN)),
    ];
    for (method, pattern, needs) in &rows {
        let needs: Option<Role> = match needs.as_str() {
            "none" => None,
            role => Some(role.parse().expect("a role")),
        };
        let path = concrete(pattern);
        for (role, token) in callers {
            let http = net.http(&server, token);
            let body = if method == "GET" {
                Vec::new()
            } else {
                b"{}".to_vec()
            };
            let r = http
                .raw(method, &path, Some("application/json"), body)
                .await;
            let what = format!("{method} {path} as {role:?}: {} {:?}", r.status, r.body);
            match (needs, role) {
                (None, _) => assert!(r.status != 401 && r.status != 403, "{what}"),
                (Some(_), None) => assert_eq!(r.status, 401, "{what}"),
                (Some(n), Some(has)) if has < n => {
                    assert_forbidden(&r, n.as_str(), has.as_str());
                    let message = r.body["message"].as_str().unwrap_or_default();
                    assert!(
                        message.contains(pattern.as_str()),
                        "names the route: {what}"
                    );
                }
                (Some(_), Some(_)) => assert!(r.status != 401 && r.status != 403, "{what}"),
            }
        }
    }
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    the_remote_client_says_which_role_a_call_needs
);
async fn the_remote_client_says_which_role_a_call_needs(net: common::Net) {
    let (_engine, server) = served(net, three_roles()).await;
    let reader = net.connect(&server).token(READ).await.expect("connect");
    let err = reader
        .start::<AgentRun>(
            "c-1",
            common::AgentInput {
                goal: "g".into(),
                step: 0,
            },
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, WfError::InvalidArgument(_)), "{err:?}");
    assert!(
        text.contains("403 forbidden") && text.contains("needs a token with the write role"),
        "{text}"
    );
    assert!(!text.contains(READ), "no token in messages: {text}");
    let err = net.connect(&server).token("not-a-token").await.unwrap_err();
    assert!(err.to_string().contains("refused the token (401)"), "{err}");
    server.shutdown().await.unwrap();
}

/// A file under the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn with(name: &str, text: &str) -> TempFile {
        // A file of its own per call: a test runs over HTTP and HTTPS at once, in one process,
        // and each removes its file when done.
        static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("wf-auth-{}-{name}-{n}", std::process::id()));
        std::fs::write(&path, text).expect("write a temporary file");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

both_ways!(
    #[tokio::test]
    a_tokens_file_gives_each_token_its_role
);
async fn a_tokens_file_gives_each_token_its_role(net: common::Net) {
    let file = TempFile::with(
        "good",
        "# who may do what\n\nread   dash-1\n\t# indented comment\nwrite\tsvc-1\nadmin ops-1   \n",
    );
    let tokens = Tokens::from_file(&file.0).expect("a good file");
    assert_eq!(tokens.len(), 3);
    let (_engine, server) = served(net, ServeOptions::default().tokens(tokens)).await;
    for (token, role) in [("dash-1", "read"), ("svc-1", "write"), ("ops-1", "admin")] {
        let r = net.http(&server, Some(token)).get("/_whoami").await;
        assert_eq!(r.body["role"], role, "{token}");
    }
    let r = net
        .http(&server, Some("dash-1"))
        .post("/agent_run/runs", start_body("f-1"))
        .await;
    assert_forbidden(&r, "write", "read");
    server.shutdown().await.unwrap();
}

#[test]
fn a_bad_tokens_file_names_the_file_and_line_never_the_token() {
    let cases = [
        (
            "bad-role",
            "read ok-1\nsuperuser s3cret-one\n",
            "line 2: the first field is not a role",
        ),
        (
            "swapped",
            "# swapped\n\ns3cret-one admin\n",
            "line 3: the first field is not a role",
        ),
        (
            "no-token",
            "read ok-1\nwrite\n",
            "line 2: expected 2 fields, found 1 (no token?)",
        ),
        (
            "three",
            "admin s3cret-one extra\n",
            "line 1: expected 2 fields, found 3",
        ),
        (
            "twice",
            "read s3cret-one\nadmin s3cret-one\n",
            "line 2: this token is already given on line 1",
        ),
        (
            "case",
            "Admin s3cret-one\n",
            "line 1: the first field is not a role",
        ),
    ];
    for (name, text, expected) in cases {
        let file = TempFile::with(name, text);
        let err = Tokens::from_file(&file.0).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, WfError::InvalidConfig(_)), "{name}: {err:?}");
        assert!(
            message.contains(&file.0.display().to_string()),
            "{name}: {message}"
        );
        assert!(message.contains(expected), "{name}: {message}");
        assert!(
            !message.contains("s3cret"),
            "{name} shows a token: {message}"
        );
    }
    let missing = std::env::temp_dir().join("wf-auth-no-such-tokens-file");
    let err = Tokens::from_file(&missing).unwrap_err();
    assert!(
        err.to_string().contains("could not read the tokens file"),
        "{err}"
    );
    // Comments and blank lines only: a file with no tokens.
    assert!(Tokens::parse("# nobody yet\n\n", "--tokens")
        .unwrap()
        .is_empty());
}

both_ways!(
    #[tokio::test]
    off_loopback_any_token_will_do_and_none_is_refused_unless_allowed
);
async fn off_loopback_any_token_will_do_and_none_is_refused_unless_allowed(net: common::Net) {
    let engine = common::engine().await;
    let only_tokens = ServeOptions::default().tokens(Tokens::new().with(Role::Read, READ));
    let server = wf_http::serve(&engine, "0.0.0.0:0", net.options(only_tokens))
        .await
        .expect("tokens from a file suffice");
    server.shutdown().await.unwrap();
    let err = wf_http::serve(&engine, "0.0.0.0:0", net.options(ServeOptions::default()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs a token"), "{err}");
    let open = ServeOptions {
        allow_no_token: true,
        ..ServeOptions::default()
    };
    let server = wf_http::serve(&engine, "0.0.0.0:0", net.options(open))
        .await
        .expect("allowed");
    server.shutdown().await.unwrap();
}

#[test]
fn options_never_show_a_token() {
    let options = three_roles();
    let shown = format!("{options:?}");
    for token in [READ, WRITE, ADMIN] {
        assert!(!shown.contains(token), "{shown}");
    }
}
