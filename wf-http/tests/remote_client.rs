//! The remote typed client: `Client::connect(url).token(..)` drives the agent scenario of
//! `examples/agent_run.rs` over HTTP with the same generated methods as in-process code, and
//! gets the same `WfError` variants back. Each test runs over plain HTTP and over HTTPS
//! (`both_ways!`).

#[macro_use]
mod common;

use common::{served, AgentInput, AgentRun, AgentRunClient, Nap, Net, Status, TOKEN};
use std::time::Duration;
use wf_http::{ConnectExt, ServeOptions};
use wf_sdk::prelude::*;
use wf_sdk::{
    client::ListFilter,
    history::EventKind,
    payload::Payload,
    schedule::{ScheduleAction, SchedulePolicies, ScheduleSpec},
};

async fn remote(net: Net) -> (Engine, wf_http::Server, Client) {
    let (engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    (engine, server, client)
}

async fn wait_status(h: &WorkflowHandle<AgentRun>, pred: impl Fn(&Status) -> bool) -> Status {
    for _ in 0..500 {
        let s = h.status().await.unwrap();
        if pred(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the agent never reached the expected state");
}

both_ways!(
    #[tokio::test]
    the_agent_scenario_over_http
);
async fn the_agent_scenario_over_http(net: Net) {
    let (engine, server, client) = remote(net).await;
    let input = AgentInput {
        goal: "ship".into(),
        step: 0,
    };
    let h = client
        .start::<AgentRun>("agent-42", input.clone())
        .await
        .unwrap();
    let again = client.start::<AgentRun>("agent-42", input.clone()).await;
    assert!(
        matches!(again, Err(WfError::AlreadyStarted { .. })),
        "{again:?}"
    );

    // Pause with a signal id, twice: applied once.
    h.pause().signal_id("cmd-1").await.unwrap();
    h.pause().signal_id("cmd-1").await.unwrap();
    let paused = wait_status(&h, |s| s.paused).await;
    let held = paused.step;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        h.status().await.unwrap().step,
        held,
        "a paused agent takes no step"
    );
    let pauses = h
        .history()
        .await
        .unwrap()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::SignalReceived { name, .. } if name == "pause"))
        .count();
    assert_eq!(pauses, 1);

    // Updates: value, idempotent retry, rejection (no event), handler error.
    let old = h
        .change_goal("tests first".into())
        .update_id("u-1")
        .await
        .unwrap();
    assert_eq!(old, "ship");
    let retried = h
        .change_goal("ignored".into())
        .update_id("u-1")
        .await
        .unwrap();
    assert_eq!(retried, "ship");
    let before = h.history().await.unwrap().len();
    let rejected = h.change_goal("  ".into()).await;
    assert!(
        matches!(&rejected, Err(WfError::Rejected(m)) if m.contains("must not be empty")),
        "{rejected:?}"
    );
    assert_eq!(h.history().await.unwrap().len(), before);
    let failed = h.set_step(5000).await;
    assert!(
        matches!(&failed, Err(WfError::UpdateFailed(m)) if m.contains("too many")),
        "{failed:?}"
    );
    let accepted = h.change_goal("docs".into()).start().await.unwrap();
    assert_eq!(accepted.result().await.unwrap(), "tests first");

    // Two arguments, and the status struct round-trips exactly.
    h.note("remote".into(), 2).await.unwrap();
    let s = wait_status(&h, |s| {
        s.notes.iter().filter(|n| *n == "remote").count() == 2
    })
    .await;
    assert_eq!(s.goal, "docs");
    let local: Status = engine
        .client()
        .handle::<AgentRun>("agent-42")
        .status()
        .await
        .unwrap();
    assert_eq!(h.status().await.unwrap(), local);

    let d = h.describe().await.unwrap();
    assert_eq!(
        (d.workflow_type.as_str(), d.status),
        ("agent_run", RunStatus::Running)
    );
    let listed = client.list(ListFilter::default()).await.unwrap();
    assert!(listed.iter().any(|r| r.workflow_id == "agent-42"));

    h.resume().await.unwrap();
    wait_status(&h, |s| s.step > held).await;
    h.stop().await.unwrap();
    let out = h.result().await.unwrap();
    assert!(out.starts_with("stopped at step"), "{out}");
    let history = h.history().await.unwrap();
    let local = engine.client().history("agent-42").await.unwrap();
    assert_eq!(history, local, "the history arrives exactly as stored");
    assert!(matches!(
        history.last().map(|e| &e.kind),
        Some(EventKind::WorkflowCompleted { .. }) | Some(EventKind::WorkflowTaskCompleted { .. })
    ));

    let late = h.pause().await;
    assert!(
        matches!(
            late,
            Err(WfError::RunFinished {
                status: RunStatus::Completed,
                ..
            })
        ),
        "{late:?}"
    );
    let nobody = client.handle::<AgentRun>("nobody").describe().await;
    assert!(
        matches!(nobody, Err(WfError::NotFound { .. })),
        "{nobody:?}"
    );
    let unknown = client
        .query_raw("agent-42", "nope", Payload::encode(&()).unwrap())
        .await;
    assert!(
        matches!(unknown, Err(WfError::QueryError(_))),
        "{unknown:?}"
    );
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    with_start_cancel_terminate_and_schedules_over_http
);
async fn with_start_cancel_terminate_and_schedules_over_http(net: Net) {
    let (_engine, server, client) = remote(net).await;
    let input = AgentInput {
        goal: "g".into(),
        step: 0,
    };
    let h = client.handle::<AgentRun>("ws-1");
    h.signal_with_start(input.clone(), h.pause(), IdConflictPolicy::UseExisting)
        .await
        .unwrap();
    assert!(wait_status(&h, |s| s.paused).await.paused);
    let h2 = client.handle::<AgentRun>("ws-2");
    let previous = h2
        .update_with_start(input.clone(), h2.set_step(7), IdConflictPolicy::UseExisting)
        .await
        .unwrap();
    assert_eq!(previous, 0);

    // Cancel a run surely waiting on its timer (see `Nap`): it ends as cancelled.
    let ten_s = Duration::from_secs(10);
    let nap = client.start::<Nap>("nap-1", 1).await.unwrap();
    for _ in 0..500 {
        let events = nap.history().await.unwrap();
        if events
            .iter()
            .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    nap.cancel().await.unwrap();
    let r = tokio::time::timeout(ten_s, nap.result())
        .await
        .expect("the cancelled run ends");
    assert!(matches!(r, Err(WfError::Cancelled(_))), "{r:?}");
    // Terminate the agents: one paused, one taking steps.
    for h in [&h, &h2] {
        h.terminate("done here").await.unwrap();
        let r = tokio::time::timeout(ten_s, h.result())
            .await
            .expect("the terminated run ends");
        assert!(matches!(r, Err(WfError::Terminated(_))), "{r:?}");
    }

    let schedules = client.schedules();
    let action = ScheduleAction::start::<AgentRun>("nightly", &input).unwrap();
    let s = schedules
        .create(
            "nightly",
            ScheduleSpec::every(Duration::from_secs(3600)),
            action,
            SchedulePolicies::default(),
        )
        .await
        .unwrap();
    s.pause("maintenance").await.unwrap();
    let d = s.describe().await.unwrap();
    assert!(d.paused && d.note == "maintenance" && d.action.workflow_type == "agent_run");
    s.trigger().await.unwrap();
    assert_eq!(schedules.list().await.unwrap().len(), 1);
    s.delete().await.unwrap();
    let gone = s.describe().await;
    assert!(gone.is_err(), "{gone:?}");
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    connecting_checks_the_server_and_the_token
);
async fn connecting_checks_the_server_and_the_token(net: Net) {
    let (_engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let url = net.url(&server);
    let wrong = net.connect(&server).token("nope").await;
    assert!(
        matches!(&wrong, Err(e) if e.to_string().contains("401")),
        "{wrong:?}"
    );
    let none = net.connect(&server).await;
    assert!(none.is_err());
    let odd = Client::connect(net.url(&server).replacen("http", "ftp", 1)).await;
    assert!(matches!(odd, Err(WfError::InvalidArgument(_))), "{odd:?}");
    // The other scheme than the server's: an error that says which to use.
    let (other, hint) = match net {
        Net::Http => (
            net.url(&server).replacen("http", "https", 1),
            "use an http:// URL",
        ),
        Net::Https => (
            net.url(&server).replacen("https", "http", 1),
            "use an https:// URL",
        ),
    };
    let mixed = Client::connect(other)
        .tls(common::pki().client_tls())
        .token(TOKEN)
        .await;
    assert!(
        matches!(&mixed, Err(e) if e.to_string().contains(hint)),
        "{mixed:?}"
    );
    server.shutdown().await.unwrap();
    let down = Client::connect(url)
        .tls(common::pki().client_tls())
        .token(TOKEN)
        .await;
    assert!(matches!(&down, Err(e) if e.is_retryable()), "{down:?}");
}

both_ways!(
    #[tokio::test]
    calls_go_on_when_the_server_closed_their_connections
);
async fn calls_go_on_when_the_server_closed_their_connections(net: Net) {
    let engine = common::engine().await;
    let options = || ServeOptions::default().token(TOKEN);
    let server = net.serve(&engine, options()).await;
    let addr = server.local_addr();
    let client = net.connect(&server).token(TOKEN).await.expect("connect");
    let input = AgentInput {
        goal: "g".into(),
        step: 0,
    };
    let h = client.start::<AgentRun>("re-1", input).await.unwrap();
    // Many calls at once: as many connections, all kept for later calls.
    let calls = (0..20).map(|_| {
        let h = h.clone();
        async move { h.status().await }
    });
    for status in futures_join_all(calls).await {
        assert_eq!(status.unwrap().goal, "g");
    }
    // A graceful stop closes the idle connections; a new server on the same address gets
    // the next calls on new ones.
    server.shutdown().await.unwrap();
    let server = wf_http::serve(&engine, addr, net.options(options()))
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(h.status().await.unwrap().goal, "g");
    }
    h.pause().await.unwrap();
    assert!(wait_status(&h, |s| s.paused).await.paused);
    server.shutdown().await.unwrap();
}

/// Awaits all `futures` (spawned, so that they run at once).
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.expect("a call panicked"));
    }
    out
}

both_ways!(
    #[tokio::test]
    a_retried_start_over_http_returns_the_same_run
);
/// A start retried over HTTP with its request id returns the run the first attempt started,
/// also after that run closed; the id-reuse policy travels in the body and its refusal comes
/// back as `DuplicateRejected`.
async fn a_retried_start_over_http_returns_the_same_run(net: Net) {
    let (engine, server, client) = remote(net).await;
    let input = AgentInput {
        goal: "ship".into(),
        step: 0,
    };
    let options = wf_sdk::client::StartOptions::new().request_id("req-http");
    let first = client
        .start_with::<AgentRun>("agent-7", input.clone(), options.clone())
        .await
        .unwrap();
    let run_id = first.start_outcome().unwrap().run_id.clone();
    assert!(first.start_outcome().unwrap().started);
    let retry = client
        .start_with::<AgentRun>("agent-7", input.clone(), options.clone())
        .await
        .unwrap();
    assert_eq!(retry.start_outcome().unwrap().run_id, run_id);
    assert!(!retry.start_outcome().unwrap().started);

    first.terminate("done here").await.unwrap();
    let strict = options.id_reuse_policy(IdReusePolicy::RejectDuplicate);
    let late = client
        .start_with::<AgentRun>("agent-7", input.clone(), strict.clone())
        .await
        .unwrap();
    assert_eq!(late.start_outcome().unwrap().run_id, run_id);
    let other = client
        .start_with::<AgentRun>("agent-7", input, strict.request_id("req-other"))
        .await;
    match other {
        Err(WfError::DuplicateRejected {
            run_id: closed,
            status,
            ..
        }) => assert_eq!((closed, status), (run_id, RunStatus::Terminated)),
        other => panic!("expected DuplicateRejected, got {other:?}"),
    }
    server.shutdown().await.unwrap();
    engine.shutdown().await;
}
