//! Dynamic workflow types: `#[workflow(dynamic)]` runs every workflow type name no other
//! registration has, with the type name and the raw input; a registered type always wins, and
//! messages to its runs go through its (dynamic) handlers.

mod common;
use common::*;
use serde::{Deserialize, Serialize};
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, UpdateStage},
    error::WfError,
    history::EventKind,
    payload::Payload,
    workflow::DynamicInput,
};

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Invoice {
    total: u32,
}

/// Runs any type: `invoice` doubles its total, `chat` collects signals until `bye`, `count`
/// continues as new until it reaches 3; others echo their name.
#[derive(Default)]
pub struct Anything {
    kind: String,
    lines: Vec<String>,
    done: bool,
}

#[workflow(dynamic)]
impl Anything {
    #[init]
    fn new(name: &str, _input: &Payload) -> Self {
        Anything {
            kind: name.to_string(),
            ..Default::default()
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        name: String,
        input: Payload,
    ) -> Result<String, WorkflowError> {
        match name.as_str() {
            "invoice" => {
                let invoice: Invoice = input.decode()?;
                Ok(format!("invoice: {}", invoice.total * 2))
            }
            "chat" => {
                ctx.wait_condition(|s| s.done).await;
                Ok(ctx.state(|s| format!("{}: {}", s.kind, s.lines.join(", "))))
            }
            "count" => {
                let n: u32 = input.decode()?;
                if n < 3 {
                    let next = DynamicInput::new(name, Payload::encode(&(n + 1))?);
                    return Err(ctx.continue_as_new(&next));
                }
                Ok(format!("count: {n}"))
            }
            other => Ok(format!("echo: {other}")),
        }
    }

    #[signal(dynamic)]
    fn any_signal(&mut self, name: String, args: Payload) {
        match name.as_str() {
            "bye" => self.done = true,
            _ => {
                let (word,) = args.decode::<(String,)>().unwrap_or(("?".into(),));
                self.lines.push(format!("{name} {word}"));
            }
        }
    }

    #[query]
    fn kind(&self) -> String {
        self.kind.clone()
    }

    #[query(dynamic)]
    fn any_query(&self, name: String, _args: Payload) -> String {
        format!("{name} of {}: {}", self.kind, self.lines.len())
    }

    #[update(dynamic)]
    fn any_update(&mut self, name: String, args: Payload) -> Result<usize, UpdateError> {
        let (word,) = args
            .decode::<(String,)>()
            .map_err(|e| UpdateError::new(format!("{name} takes one string: {e}")))?;
        self.lines.push(format!("{name} {word}"));
        Ok(self.lines.len())
    }
}

/// A registered type: it runs its own name even next to a dynamic type.
#[derive(Default)]
pub struct Invoicing;

#[workflow(name = "invoice")]
impl Invoicing {
    #[run]
    async fn run(
        _ctx: &mut WorkflowContext<Self>,
        input: Invoice,
    ) -> Result<String, WorkflowError> {
        Ok(format!("registered: {}", input.total))
    }
}

/// A second dynamic type, to register next to `Anything`.
#[derive(Default)]
pub struct Other;

#[workflow(dynamic)]
impl Other {
    #[run]
    async fn run(
        _ctx: &mut WorkflowContext<Self>,
        name: String,
        _input: Payload,
    ) -> Result<String, WorkflowError> {
        Ok(name)
    }
}

async fn result_of(client: &Client, workflow_id: &str) -> String {
    client
        .result_raw(workflow_id)
        .await
        .unwrap()
        .decode()
        .unwrap()
}

async fn an_unregistered_type_runs_on_the_dynamic_workflow(backend: Backend) {
    let engine = builder(backend, "dyn-wf-run")
        .workflow::<Anything>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let run_id = client
        .start_untyped("invoice", "inv-1", &Invoice { total: 21 })
        .await
        .unwrap();
    assert_eq!(result_of(&client, "inv-1").await, "invoice: 42");
    client
        .start_untyped("anything-at-all", "any-1", &())
        .await
        .unwrap();
    assert_eq!(result_of(&client, "any-1").await, "echo: anything-at-all");
    // The run is of the type its starter named, in history and in the list.
    let history = client.history("inv-1").await.unwrap();
    match &history[0].kind {
        EventKind::WorkflowStarted { workflow_type, .. } => assert_eq!(workflow_type, "invoice"),
        other => panic!("expected WorkflowStarted, got {other:?}"),
    }
    let listed = client.list(ListFilter::default()).await.unwrap();
    let inv = listed.iter().find(|r| r.run_id == run_id).unwrap();
    assert_eq!(inv.workflow_type, "invoice");
}

async fn a_registered_type_wins_over_the_dynamic_one(backend: Backend) {
    let engine = builder(backend, "dyn-wf-wins")
        .workflow::<Anything>()
        .workflow::<Invoicing>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    client
        .start_untyped("invoice", "inv-2", &Invoice { total: 5 })
        .await
        .unwrap();
    assert_eq!(result_of(&client, "inv-2").await, "registered: 5");
    let h = client
        .start::<Invoicing>("inv-3", Invoice { total: 6 })
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), "registered: 6");
    client.start_untyped("receipt", "rec-1", &()).await.unwrap();
    assert_eq!(result_of(&client, "rec-1").await, "echo: receipt");
}

async fn messages_to_a_dynamic_run_reach_its_handlers(backend: Backend) {
    let engine = builder(backend, "dyn-wf-msgs")
        .workflow::<Anything>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    client.start_untyped("chat", "chat-1", &()).await.unwrap();
    let h = client.handle::<Anything>("chat-1");
    h.signal("hello", &"ann").await.unwrap();
    let (_, n) = client
        .update_raw(
            "chat-1",
            "shout",
            Payload::encode(&("bob",)).unwrap(),
            None,
            UpdateStage::Completed,
        )
        .await
        .unwrap();
    assert_eq!(n.decode::<usize>().unwrap(), 2);
    assert_eq!(h.kind().await.unwrap(), "chat");
    let asked = client
        .query_raw("chat-1", "size", Payload::encode(&()).unwrap())
        .await
        .unwrap();
    assert_eq!(asked.decode::<String>().unwrap(), "size of chat: 2");
    h.signal("bye", &()).await.unwrap();
    assert_eq!(h.result().await.unwrap(), "chat: hello ann, shout bob");
}

async fn a_dynamic_run_continues_as_new_under_its_type_name(backend: Backend) {
    let engine = builder(backend, "dyn-wf-can")
        .workflow::<Anything>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    client
        .start_untyped("count", "count-1", &0u32)
        .await
        .unwrap();
    assert_eq!(result_of(&client, "count-1").await, "count: 3");
    let runs = client.list(ListFilter::default()).await.unwrap();
    let types: Vec<&str> = runs
        .iter()
        .filter(|r| r.workflow_id == "count-1")
        .map(|r| r.workflow_type.as_str())
        .collect();
    assert_eq!(types, ["count"; 4]);
}

async fn a_dynamic_run_resumes_on_another_engine(backend: Backend) {
    let open = shared_store(backend, "dyn-wf-resume");
    let first = open().workflow::<Anything>().build().await.unwrap();
    first
        .client()
        .start_untyped("chat", "chat-2", &())
        .await
        .unwrap();
    first
        .client()
        .handle::<Anything>("chat-2")
        .signal("hi", &"there")
        .await
        .unwrap();
    first.shutdown().await;
    // A fresh engine replays the run through the dynamic type, then finishes it.
    let second = open().workflow::<Anything>().build().await.unwrap();
    let h = second.client().handle::<Anything>("chat-2");
    assert_eq!(h.kind().await.unwrap(), "chat");
    h.signal("bye", &()).await.unwrap();
    assert_eq!(h.result().await.unwrap(), "chat: hi there");
}

both!(
    an_unregistered_type_runs_on_the_dynamic_workflow,
    a_registered_type_wins_over_the_dynamic_one,
    messages_to_a_dynamic_run_reach_its_handlers,
    a_dynamic_run_continues_as_new_under_its_type_name,
    a_dynamic_run_resumes_on_another_engine,
);

#[tokio::test]
async fn two_dynamic_workflow_types_are_a_builder_error() {
    let built = Engine::builder()
        .memory()
        .workflow::<Anything>()
        .workflow::<Other>()
        .build()
        .await;
    let Err(err) = built else {
        panic!("two dynamic types must not build")
    };
    let msg = err.to_string();
    assert!(msg.contains("two dynamic workflow types"), "{msg}");
    assert!(msg.contains("Anything") && msg.contains("Other"), "{msg}");
}

#[tokio::test]
async fn a_typed_start_of_a_dynamic_type_is_refused() {
    let engine = Engine::builder()
        .memory()
        .workflow::<Anything>()
        .build()
        .await
        .unwrap();
    let input = DynamicInput::new("chat", Payload::encode(&()).unwrap());
    match engine.client().start::<Anything>("x", input).await {
        Err(WfError::InvalidArgument(msg)) => assert!(msg.contains("start_untyped"), "{msg}"),
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn without_a_dynamic_type_an_unknown_type_is_refused() {
    let engine = Engine::builder()
        .memory()
        .workflow::<Invoicing>()
        .build()
        .await
        .unwrap();
    let started = engine.client().start_untyped("receipt", "r", &()).await;
    assert!(
        matches!(started, Err(WfError::Unknown { .. })),
        "{started:?}"
    );
}

#[tokio::test]
async fn the_replayer_replays_dynamic_runs_through_the_dynamic_type() {
    let engine = Engine::builder()
        .memory()
        .workflow::<Anything>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    client.start_untyped("chat", "chat-r", &()).await.unwrap();
    let h = client.handle::<Anything>("chat-r");
    h.signal("hi", &"you").await.unwrap();
    h.signal("bye", &()).await.unwrap();
    h.result().await.unwrap();
    let history = client.export("chat-r").await.unwrap();
    let replayer = wf_sdk::history::Replayer::new().workflow::<Anything>();
    replayer.replay(&history).unwrap();
    let without = wf_sdk::history::Replayer::new().workflow::<Invoicing>();
    assert!(without.replay(&history).is_err());
}
