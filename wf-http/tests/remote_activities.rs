//! Activities run by workers outside the engine, over HTTP: `POST /_activities/poll` leases a
//! task (204 when the wait runs out), `heartbeat`, `complete` and `fail` report on it by its
//! token. The attempt behaves as one an engine's worker runs: a retryable failure is retried,
//! a non-retryable one fails the workflow's call, a missed heartbeat times the attempt out and
//! retries it, a cancelled activity is seen in the heartbeat's answer, and a late report for
//! an attempt that ended is refused. Bad bodies get 400, a read token 403.

#[macro_use]
mod common;

use common::TOKEN;
use serde_json::{json, Value};
use std::time::Duration;
use wf_http::{Role, ServeOptions};
use wf_sdk::client::ActivityTaskPoll;
use wf_sdk::engine::EngineBuilder;
use wf_sdk::prelude::*;

const READ: &str = "read-token-2b9d";

/// What the workflow hands the outside worker.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Doc {
    pub text: String,
    pub lang: String,
}

/// What the outside worker answers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Summary {
    pub words: u32,
    pub by: String,
}

/// The start input: the text, and the activity's limits.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Job {
    pub text: String,
    pub attempts: u32,
    pub heartbeat_ms: Option<u64>,
}

/// Sends `summarize` to task queue "python", which no engine serves.
#[derive(Default)]
pub struct Summarize;

#[workflow(name = "summarize")]
impl Summarize {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, job: Job) -> Result<String, WorkflowError> {
        let doc = Doc {
            text: job.text.clone(),
            lang: "en".into(),
        };
        let mut call = ctx
            .activity_by_name::<Summary>("summarize", &doc)
            .task_queue("python")
            .start_to_close(Duration::from_secs(60))
            .retry(RetryPolicy {
                initial_interval: Duration::from_millis(10),
                maximum_attempts: job.attempts,
                ..RetryPolicy::default()
            });
        if let Some(ms) = job.heartbeat_ms {
            call = call.heartbeat_timeout(Duration::from_millis(ms));
        }
        Ok(match call.await {
            Ok(s) => format!("{} words by {}", s.words, s.by),
            Err(e) => format!("error: {e}"),
        })
    }
}

async fn served(net: common::Net) -> (Engine, wf_http::Server) {
    served_on(net, Engine::builder().memory()).await
}

async fn served_on(net: common::Net, builder: EngineBuilder) -> (Engine, wf_http::Server) {
    // No activities registered: the engine runs none of them itself.
    let engine = builder
        .poll_interval(Duration::from_millis(20))
        .workflow::<Summarize>()
        .build()
        .await
        .expect("engine");
    let options = ServeOptions::default()
        .token(TOKEN)
        .token_with_role(Role::Read, READ);
    let server = net.serve(&engine, options).await;
    (engine, server)
}

fn job(text: &str, attempts: u32, heartbeat_ms: Option<u64>) -> Job {
    Job {
        text: text.into(),
        attempts,
        heartbeat_ms,
    }
}

fn poll_body(wait_ms: u64) -> Value {
    json!({"task_queue": "python", "names": ["summarize"], "wait_ms": wait_ms, "identity": "test-worker"})
}

/// Polls until a task comes (the workflow schedules it shortly after its start).
async fn take(http: &common::Http) -> Value {
    let r = http.post("/_activities/poll", poll_body(10_000)).await;
    assert_eq!(r.status, 200, "a task: {:?}", r.body);
    r.body
}

both_ways!(
    #[tokio::test]
    a_polled_task_completes_the_workflows_activity
);
async fn a_polled_task_completes_the_workflows_activity(net: common::Net) {
    let (engine, server) = served(net).await;
    let http = net.http(&server, Some(TOKEN));
    let h = engine
        .client()
        .start::<Summarize>("s-1", job("one two three", 3, Some(30_000)))
        .await
        .unwrap();
    let task = take(&http).await;
    assert_eq!(task["name"], "summarize");
    assert_eq!(task["workflow_id"], "s-1");
    assert_eq!(task["attempt"], 1);
    assert_eq!(
        task["input"],
        json!({"text": "one two three", "lang": "en"})
    );
    assert_eq!(task["heartbeat_timeout_ms"], 30_000);
    assert_eq!(task["last_heartbeat"], Value::Null);
    let started = task["started_ms"].as_i64().unwrap();
    assert_eq!(task["start_to_close_deadline_ms"], started + 60_000);
    assert_eq!(task["schedule_to_close_deadline_ms"], Value::Null);
    let token = task["token"].as_str().unwrap();

    let r = http
        .post(
            "/_activities/heartbeat",
            json!({"token": token, "details": {"read": 1}}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body),
        (
            200,
            &json!({"status": "recorded", "cancel_requested": false})
        )
    );
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": token, "result": {"words": 3, "by": "python"}}),
        )
        .await;
    assert_eq!((r.status, &r.body["status"]), (200, &json!("completed")));
    assert_eq!(h.result().await.unwrap(), "3 words by python");

    let r = http
        .post(
            "/_activities/complete",
            json!({"token": token, "result": {"words": 4, "by": "again"}}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["error"]),
        (404, &json!("activity_not_pending"))
    );
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    a_retryable_failure_is_retried_with_its_details
);
async fn a_retryable_failure_is_retried_with_its_details(net: common::Net) {
    let (engine, server) = served(net).await;
    let http = net.http(&server, Some(TOKEN));
    let h = engine
        .client()
        .start::<Summarize>("s-2", job("a b", 3, None))
        .await
        .unwrap();
    let first = take(&http).await;
    let r = http
        .post(
            "/_activities/fail",
            json!({"token": first["token"], "message": "the model is busy", "retryable": true,
                   "details": {"done": 2}}),
        )
        .await;
    assert_eq!((r.status, &r.body["status"]), (200, &json!("failed")));
    let second = take(&http).await;
    assert_eq!(second["attempt"], 2);
    assert_eq!(second["last_heartbeat"], json!({"done": 2}));
    assert_eq!(second["last_failure"], "the model is busy");
    assert_ne!(second["token"], first["token"]);
    // The first attempt's token is spent: its attempt was replaced.
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": first["token"], "result": {"words": 2, "by": "late"}}),
        )
        .await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("attempt 2 replaced it"),
        "{:?}",
        r.body
    );
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": second["token"], "result": {"words": 2, "by": "python"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(h.result().await.unwrap(), "2 words by python");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    a_non_retryable_failure_fails_the_workflows_call
);
async fn a_non_retryable_failure_fails_the_workflows_call(net: common::Net) {
    let (engine, server) = served(net).await;
    let http = net.http(&server, Some(TOKEN));
    let h = engine
        .client()
        .start::<Summarize>("s-3", job("x", 5, None))
        .await
        .unwrap();
    let task = take(&http).await;
    let r = http
        .post(
            "/_activities/fail",
            json!({"token": task["token"], "message": "not a language I know",
                   "retryable": false, "kind": "bad_language"}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let result = h.result().await.unwrap();
    assert!(result.starts_with("error: "), "{result}");
    assert!(result.contains("not a language I know"), "{result}");
    assert!(result.contains("bad_language"), "{result}");
    // Nothing is left to poll: the activity failed for good, after one attempt.
    let r = http.post("/_activities/poll", poll_body(100)).await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    a_missed_heartbeat_times_the_attempt_out_and_retries_it
);
async fn a_missed_heartbeat_times_the_attempt_out_and_retries_it(net: common::Net) {
    let (engine, server) = served(net).await;
    missed_heartbeat(net, engine, server).await;
}

/// The same on the durable stores: the lease, its expiry and the retry are theirs.
#[tokio::test]
async fn a_missed_heartbeat_is_retried_on_sqlite_and_postgres() {
    for backend in [wf_testkit::Backend::Sqlite, wf_testkit::Backend::Postgres] {
        if backend == wf_testkit::Backend::Postgres && !wf_testkit::postgres_available() {
            continue;
        }
        let builder = wf_testkit::builder(backend, "remote-activity-heartbeat");
        let (engine, server) = served_on(common::Net::Http, builder).await;
        missed_heartbeat(common::Net::Http, engine, server).await;
    }
}

async fn missed_heartbeat(net: common::Net, engine: Engine, server: wf_http::Server) {
    let http = net.http(&server, Some(TOKEN));
    let h = engine
        .client()
        .start::<Summarize>("s-4", job("slow", 3, Some(300)))
        .await
        .unwrap();
    let first = take(&http).await;
    let r = http
        .post(
            "/_activities/heartbeat",
            json!({"token": first["token"], "details": {"progress": 1}}),
        )
        .await;
    assert_eq!(r.body["cancel_requested"], false, "{:?}", r.body);
    // Then silence: the heartbeat timeout ends the attempt and the next one is polled.
    let second = take(&http).await;
    assert_eq!(second["attempt"], 2);
    assert_eq!(second["last_heartbeat"], json!({"progress": 1}));
    assert!(
        second["last_failure"]
            .as_str()
            .unwrap()
            .contains("Heartbeat"),
        "{second:?}"
    );
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": first["token"], "result": {"words": 1, "by": "late"}}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["error"]),
        (404, &json!("activity_not_pending")),
        "a late result of the timed-out attempt is refused"
    );
    let r = http
        .post("/_activities/heartbeat", json!({"token": first["token"]}))
        .await;
    assert_eq!(
        (r.status, &r.body["status"], &r.body["cancel_requested"]),
        (200, &json!("not_open"), &json!(true)),
        "{:?}",
        r.body
    );
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": second["token"], "result": {"words": 1, "by": "python"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(h.result().await.unwrap(), "1 words by python");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    a_cancelled_activity_is_seen_in_the_heartbeat
);
async fn a_cancelled_activity_is_seen_in_the_heartbeat(net: common::Net) {
    let (engine, server) = served(net).await;
    let http = net.http(&server, Some(TOKEN));
    let h = engine
        .client()
        .start::<Summarize>("s-5", job("long", 3, None))
        .await
        .unwrap();
    let task = take(&http).await;
    let r = http
        .post(
            "/summarize/runs/s-5/cancel",
            json!({"reason": "not needed"}),
        )
        .await;
    assert!(r.status < 300, "{:?}", r.body);
    // The workflow's call ends as cancelled, as for an activity an engine runs.
    assert_eq!(
        h.result().await.unwrap(),
        "error: activity summarize cancelled"
    );
    let r = http
        .post(
            "/_activities/heartbeat",
            json!({"token": task["token"], "details": {"progress": 5}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["cancel_requested"], true, "{:?}", r.body);
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": task["token"], "result": {"words": 1, "by": "late"}}),
        )
        .await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    a_poll_with_nothing_to_take_answers_204
);
async fn a_poll_with_nothing_to_take_answers_204(net: common::Net) {
    let (engine, server) = served(net).await;
    let http = net.http(&server, Some(TOKEN));
    let r = http.post("/_activities/poll", poll_body(50)).await;
    assert_eq!((r.status, r.raw.len()), (204, 0));
    // A task of another name, or on another queue, is not this poller's.
    engine
        .client()
        .start::<Summarize>("s-6", job("x", 1, None))
        .await
        .unwrap();
    let r = http
        .post(
            "/_activities/poll",
            json!({"task_queue": "python", "names": ["translate"], "wait_ms": 200}),
        )
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let r = http
        .post(
            "/_activities/poll",
            json!({"task_queue": "gpu", "names": ["summarize"], "wait_ms": 200}),
        )
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    assert_eq!(take(&http).await["workflow_id"], "s-6");
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    a_read_token_may_not_take_or_report_tasks
);
async fn a_read_token_may_not_take_or_report_tasks(net: common::Net) {
    let (engine, server) = served(net).await;
    let read = net.http(&server, Some(READ));
    for (path, body) in [
        ("/_activities/poll", poll_body(10)),
        ("/_activities/heartbeat", json!({"token": "wfat1.x"})),
        (
            "/_activities/complete",
            json!({"token": "wfat1.x", "result": 1}),
        ),
        (
            "/_activities/fail",
            json!({"token": "wfat1.x", "message": "m"}),
        ),
    ] {
        let r = read.post(path, body).await;
        assert_eq!(
            (r.status, &r.body["error"]),
            (403, &json!("forbidden")),
            "{path}"
        );
    }
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    bad_bodies_get_400_with_a_json_error
);
async fn bad_bodies_get_400_with_a_json_error(net: common::Net) {
    let (engine, server) = served(net).await;
    let http = net.http(&server, Some(TOKEN));
    let r = http
        .raw(
            "POST",
            "/_activities/poll",
            Some("application/json"),
            b"{not json".to_vec(),
        )
        .await;
    assert_eq!((r.status, &r.body["error"]), (400, &json!("invalid_args")));
    for (path, body, says) in [
        (
            "/_activities/poll",
            json!({"names": ["summarize"]}),
            "task_queue",
        ),
        (
            "/_activities/poll",
            json!({"task_queue": "python", "names": []}),
            "at least one",
        ),
        (
            "/_activities/poll",
            json!({"task_queue": "python", "names": [""]}),
            "activity name",
        ),
        (
            "/_activities/poll",
            json!({"task_queue": "", "names": ["a"]}),
            "task queue",
        ),
        (
            "/_activities/poll",
            json!({"task_queue": "python", "names": ["a"], "wait_ms": "soon"}),
            "wait_ms",
        ),
        (
            "/_activities/poll",
            json!({"task_queue": "python", "activities": ["a"]}),
            "activities",
        ),
        ("/_activities/complete", json!({"result": 1}), "token"),
        (
            "/_activities/complete",
            json!({"token": "forged", "result": 1}),
            "not an activity task token",
        ),
        ("/_activities/fail", json!({"token": "wfat1.x"}), "message"),
        (
            "/_activities/fail",
            json!({"token": "wfat1.x", "message": "m", "retryable": "no"}),
            "retryable",
        ),
        ("/_activities/heartbeat", json!({"token": 7}), "token"),
    ] {
        let r = http.post(path, body.clone()).await;
        assert_eq!(
            (r.status, &r.body["error"]),
            (400, &json!("invalid_args")),
            "{path} {body}: {:?}",
            r.body
        );
        let message = r.body["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{path} {body}: {message}");
    }
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    the_remote_client_takes_and_completes_a_task
);
async fn the_remote_client_takes_and_completes_a_task(net: common::Net) {
    let (engine, server) = served(net).await;
    let remote = net.connect(&server).token(TOKEN).await.expect("connect");
    let h = remote
        .start::<Summarize>("s-7", job("four words in here", 2, None))
        .await
        .unwrap();
    let poll = ActivityTaskPoll {
        task_queue: "python".into(),
        names: vec!["summarize".into()],
        wait: Duration::from_secs(10),
        identity: "rust-remote".into(),
    };
    let task = remote
        .poll_activity_task(poll)
        .await
        .unwrap()
        .expect("a task");
    let doc: Doc = task.input.decode().unwrap();
    assert_eq!(doc.text, "four words in here");
    let summary = Summary {
        words: 4,
        by: "rust".into(),
    };
    remote
        .complete_activity(&task.token, &summary)
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), "4 words by rust");
    match remote.heartbeat_activity(&task.token, &()).await {
        Err(WfError::ActivityNotPending(m)) => assert!(m.contains("not open"), "{m}"),
        other => panic!("{other:?}"),
    }
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}

/// The server may be a client-only engine on the store other engines run the workflows on:
/// its polls lease the tasks those engines' commits leave, and their time keepers expire the
/// attempts it leased.
#[tokio::test]
async fn a_client_only_engines_server_serves_the_tasks_of_other_engines() {
    let shared = wf_testkit::shared_store(wf_testkit::Backend::Sqlite, "remote-activity-shared");
    let worker = shared()
        .workflow::<Summarize>()
        .build()
        .await
        .expect("the workflow engine");
    let front = shared()
        .workflow::<Summarize>()
        .client_only()
        .build()
        .await
        .expect("the serving engine");
    let server = common::Net::Http
        .serve(&front, ServeOptions::default().token(TOKEN))
        .await;
    let http = common::Net::Http.http(&server, Some(TOKEN));
    let h = worker
        .client()
        .start::<Summarize>("s-8", job("far away", 3, Some(300)))
        .await
        .unwrap();
    let first = take(&http).await;
    assert_eq!(first["workflow_id"], "s-8");
    // Silence: the workflow engine's time keeper ends the attempt; the retry is polled here.
    let second = take(&http).await;
    assert_eq!(second["attempt"], 2, "{second:?}");
    let r = http
        .post(
            "/_activities/complete",
            json!({"token": second["token"], "result": {"words": 2, "by": "python"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(h.result().await.unwrap(), "2 words by python");
    server.shutdown().await.unwrap();
    front.shutdown().await;
    worker.shutdown().await;
}
