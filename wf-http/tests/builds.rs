//! Worker versioning over HTTP, behind the token: the remote client makes a build current,
//! counts runs by build, lists by build and moves a run; the routes refuse callers without
//! the token.

#[macro_use]
mod common;

use std::time::Duration;
use wf_http::ServeOptions;
use wf_sdk::client::ListFilter;
use wf_sdk::prelude::*;

const TOKEN: &str = "builds-test-token";

/// Waits for `go`.
#[derive(Default)]
pub struct Job {
    go: bool,
}

#[workflow(name = "job")]
impl Job {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        Ok(())
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

both_ways!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    the_remote_client_manages_builds_behind_the_token
);
async fn the_remote_client_manages_builds_behind_the_token(net: common::Net) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .build_id("v1")
        .workflow::<Job>()
        .versioning::<Job>(VersioningBehavior::Pinned)
        .build()
        .await
        .unwrap();
    let server = net
        .serve(&engine, ServeOptions::default().token(TOKEN))
        .await;
    let anonymous = net.http(&server, None);
    assert_eq!(anonymous.get("/_builds").await.status, 401);
    let denied = anonymous
        .post(
            "/_builds/current",
            serde_json::json!({"task_queue": "default", "build_id": "v9"}),
        )
        .await;
    assert_eq!(denied.status, 401);

    let remote = net.connect(&server).token(TOKEN).await.unwrap();
    let old = remote.start::<Job>("old", ()).await.unwrap();
    let builds = remote.build_ids(None).await.unwrap();
    assert_eq!(builds.len(), 1, "{builds:?}");
    assert_eq!((builds[0].build_id.as_str(), builds[0].pinned), ("v1", 1));

    remote.set_current_build("default", "v2").await.unwrap();
    remote.start::<Job>("new", ()).await.unwrap();
    let builds = remote.build_ids(Some("default")).await.unwrap();
    let v2 = builds
        .iter()
        .find(|b| b.build_id == "v2")
        .expect("v2 listed");
    assert_eq!(v2.current_for, ["default"]);
    assert_eq!(v2.not_started, 1);
    let on_v2 = remote
        .list(ListFilter {
            build_id: Some("v2".into()),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    let ids: Vec<(&str, Option<&str>)> = on_v2
        .iter()
        .map(|r| (r.workflow_id.as_str(), r.build_id.as_deref()))
        .collect();
    assert_eq!(ids, [("new", Some("v2"))]);

    // No engine of v2 runs: move the new run to v1, whose engine finishes it.
    remote.move_to_build("new", "v1").await.unwrap();
    let new = remote.handle::<Job>("new");
    new.go().await.unwrap();
    new.result().await.unwrap();
    old.go().await.unwrap();
    old.result().await.unwrap();
    assert!(remote
        .build_ids(None)
        .await
        .unwrap()
        .iter()
        .all(|b| b.build_id != "v1"));
    assert!(matches!(
        remote.move_to_build("nobody", "v1").await,
        Err(WfError::NotFound { .. })
    ));
    server.shutdown().await.unwrap();
}
