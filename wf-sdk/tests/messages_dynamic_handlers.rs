//! Dynamic handlers: `#[signal(dynamic)]`, `#[query(dynamic)]`, `#[update(dynamic)]` and
//! `#[validator(dynamic)]` take the messages no named handler takes, with their name and raw
//! arguments; a named handler always wins.

mod common;
use common::*;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{SignalStatus, UpdateStage},
    error::WfError,
    history::EventKind,
    payload::Payload,
};

/// Every message it gets without a handler of its own, as `name(args)`.
#[derive(Default)]
pub struct Router {
    named: Vec<u32>,
    other: Vec<String>,
    done: bool,
}

#[workflow]
impl Router {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<Vec<String>, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.other.clone()))
    }

    #[signal]
    fn add(&mut self, n: u32) {
        self.named.push(n);
    }

    #[signal(dynamic)]
    fn any_signal(&mut self, name: String, args: Payload) {
        if name == "finish" {
            self.done = true;
            return;
        }
        let text = match args.decode::<(String,)>() {
            Ok((word,)) => word,
            Err(_) => "?".to_string(),
        };
        self.other.push(format!("signal {name}({text})"));
    }

    #[query]
    fn named(&self) -> Vec<u32> {
        self.named.clone()
    }

    #[query(dynamic)]
    fn any_query(&self, name: String, args: Payload) -> String {
        let last = args.decode::<(usize,)>().map_or(self.other.len(), |(n,)| n);
        let from = self.other.len().saturating_sub(last);
        format!("{name}: {}", self.other[from..].join(", "))
    }

    #[update]
    fn set(&mut self, n: u32) -> Result<u32, UpdateError> {
        self.named = vec![n];
        Ok(n)
    }

    #[update(dynamic)]
    async fn any_update(
        ctx: &mut WorkflowContext<Self>,
        name: String,
        args: Payload,
    ) -> Result<String, UpdateError> {
        let (word,) = args
            .decode::<(String,)>()
            .map_err(|e| UpdateError::new(format!("{name} takes one string: {e}")))?;
        let line = format!("update {name}({word})");
        ctx.state_mut(|s| s.other.push(line.clone()));
        Ok(line)
    }

    #[validator(dynamic)]
    fn check_any(&self, name: &str, _args: &Payload) -> Result<(), Rejection> {
        if name.starts_with("forbidden") {
            return Err(Rejection::new(format!("{name} is not allowed")));
        }
        Ok(())
    }
}

/// The other forms: an async dynamic signal and a sync dynamic update, without validator.
#[derive(Default)]
pub struct Tally {
    counts: Vec<(String, u32)>,
    done: bool,
}

#[workflow]
impl Tally {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<Vec<(String, u32)>, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.counts.clone()))
    }

    #[signal(dynamic)]
    async fn any_signal(ctx: &mut WorkflowContext<Self>, name: String, _args: Payload) {
        ctx.sleep(std::time::Duration::from_millis(1)).await.ok();
        ctx.state_mut(|s| match s.counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => s.counts.push((name, 1)),
        });
    }

    #[update(dynamic)]
    fn any_update(&mut self, name: String, _args: Payload) -> Result<u32, UpdateError> {
        if name == "stop" {
            self.done = true;
        }
        Ok(self.counts.iter().map(|(_, c)| c).sum())
    }
}

fn one<A: serde::Serialize>(arg: A) -> Payload {
    Payload::encode(&(arg,)).unwrap()
}

async fn dynamic_signal_takes_unknown_names_and_named_ones_win(backend: Backend) {
    let engine = builder(backend, "dyn-signal")
        .workflow::<Router>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Router>("router", ()).await.unwrap();
    let status = h.signal("colour", &"red").with_status().await.unwrap();
    assert_eq!(status, SignalStatus::Delivered);
    h.add(7).await.unwrap();
    client
        .signal_raw("router", "size", one("xl"), None)
        .await
        .unwrap();
    client
        .signal_raw("router", "empty", Payload::encode(&()).unwrap(), None)
        .await
        .unwrap();
    client
        .signal_raw("router", "finish", Payload::encode(&()).unwrap(), None)
        .await
        .unwrap();
    let expected = vec![
        "signal colour(red)".to_string(),
        "signal size(xl)".to_string(),
        "signal empty(?)".to_string(),
    ];
    assert_eq!(h.result().await.unwrap(), expected);
    assert_eq!(h.named().await.unwrap(), vec![7]);
    let history = h.history().await.unwrap();
    let names: Vec<&str> = history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SignalReceived { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["colour", "add", "size", "empty", "finish"]);
}

async fn dynamic_query_answers_unknown_names_on_running_and_finished_runs(backend: Backend) {
    let engine = builder(backend, "dyn-query")
        .workflow::<Router>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Router>("router", ()).await.unwrap();
    h.signal("a", &"1").await.unwrap();
    h.signal("b", &"2").await.unwrap();
    let last_one = client.query_raw("router", "tail", one(1usize)).await;
    let last_one: String = last_one.unwrap().decode().unwrap();
    assert_eq!(last_one, "tail: signal b(2)");
    // The named query still answers its own name.
    assert_eq!(h.named().await.unwrap(), Vec::<u32>::new());
    h.signal("finish", &()).await.unwrap();
    h.result().await.unwrap();
    // On the finished run the query replays the history, dynamic signals included.
    let all = client
        .query_raw("router", "all", Payload::encode(&()).unwrap())
        .await;
    let all: String = all.unwrap().decode().unwrap();
    assert_eq!(all, "all: signal a(1), signal b(2)");
}

async fn dynamic_update_runs_unknown_names_behind_its_validator(backend: Backend) {
    let engine = builder(backend, "dyn-update")
        .workflow::<Router>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Router>("router", ()).await.unwrap();
    let (_, value) = client
        .update_raw("router", "greet", one("bob"), None, UpdateStage::Completed)
        .await
        .unwrap();
    assert_eq!(value.decode::<String>().unwrap(), "update greet(bob)");
    // A named update wins over the dynamic one.
    assert_eq!(h.set(5).await.unwrap(), 5);
    let rejected = client
        .update_raw(
            "router",
            "forbidden_x",
            one("x"),
            None,
            UpdateStage::Completed,
        )
        .await;
    match rejected {
        Err(WfError::Rejected(msg)) => assert!(msg.contains("forbidden_x is not allowed"), "{msg}"),
        other => panic!("expected Rejected, got {other:?}"),
    }
    let failed = client
        .update_raw("router", "greet", one(3u32), None, UpdateStage::Completed)
        .await;
    match failed {
        Err(WfError::UpdateFailed(msg)) => assert!(msg.contains("greet takes one string"), "{msg}"),
        other => panic!("expected UpdateFailed, got {other:?}"),
    }
    h.signal("finish", &()).await.unwrap();
    assert_eq!(h.result().await.unwrap(), vec!["update greet(bob)"]);
    assert_eq!(h.named().await.unwrap(), vec![5]);
    let history = h.history().await.unwrap();
    let accepted: Vec<&str> = history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UpdateAccepted { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    // The rejected update left no trace; the failed one was accepted.
    assert_eq!(accepted, ["greet", "set", "greet"]);
}

async fn async_dynamic_signal_and_sync_dynamic_update(backend: Backend) {
    let engine = builder(backend, "dyn-tally")
        .workflow::<Tally>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Tally>("tally", ()).await.unwrap();
    for name in ["x", "y", "x"] {
        let status = h.signal(name, &()).with_status().await.unwrap();
        assert_eq!(status, SignalStatus::Delivered);
    }
    let total = eventually("three signals counted", || async {
        let (_, v) = client
            .update_raw(
                "tally",
                "total",
                Payload::encode(&()).unwrap(),
                None,
                UpdateStage::Completed,
            )
            .await
            .unwrap();
        let total: u32 = v.decode().unwrap();
        (total == 3).then_some(total)
    })
    .await;
    assert_eq!(total, 3);
    client
        .update_raw(
            "tally",
            "stop",
            Payload::encode(&()).unwrap(),
            None,
            UpdateStage::Completed,
        )
        .await
        .unwrap();
    assert_eq!(
        h.result().await.unwrap(),
        vec![("x".to_string(), 2), ("y".to_string(), 1)]
    );
    // Without a dynamic query, an unknown query is still an error.
    let unknown = client
        .query_raw("tally", "nope", Payload::encode(&()).unwrap())
        .await;
    assert!(
        matches!(unknown, Err(WfError::QueryError(_))),
        "{unknown:?}"
    );
}

#[test]
fn metadata_says_which_roles_have_a_dynamic_handler() {
    let router = wf_sdk::workflow::WorkflowType::of::<Router>();
    assert!(router.dynamic.signal && router.dynamic.query && router.dynamic.update);
    assert!(router.dynamic.update_validated);
    // Dynamic handlers are not listed as named ones.
    let names: Vec<&str> = router.handlers.iter().map(|h| h.name).collect();
    assert_eq!(names, ["add", "named", "set"]);
    let tally = wf_sdk::workflow::WorkflowType::of::<Tally>();
    assert!(tally.dynamic.signal && !tally.dynamic.query && tally.dynamic.update);
    assert!(!tally.dynamic.update_validated);
}

both!(
    dynamic_signal_takes_unknown_names_and_named_ones_win,
    dynamic_query_answers_unknown_names_on_running_and_finished_runs,
    dynamic_update_runs_unknown_names_behind_its_validator,
    async_dynamic_signal_and_sync_dynamic_update,
);
