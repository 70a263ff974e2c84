//! Hostile input through the public API: arbitrary bytes as the arguments of signals, updates,
//! queries and starts of a macro workflow. Each call is accepted or refused with a typed error
//! (`PayloadError`, `Rejected`, `QueryError`, `Unknown`...); a refused message writes nothing
//! (the history length does not move, no run is created), and nothing panics: the run keeps
//! answering, with no failed workflow task.
//!
//! A property test with a bounded number of cases per store; `PROPTEST_CASES=5000 cargo test
//! -p wf-sdk --test input_hostile` runs longer.

mod common;
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, StartOptions, UpdateStage},
    payload::{Payload, PayloadError},
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    id: String,
    qty: u32,
    tags: Vec<String>,
    note: Option<String>,
}

/// Takes orders; its handlers decode structs, tuples, options and integers. Runs until
/// terminated.
#[derive(Default)]
pub struct Shop {
    orders: Vec<Order>,
    total: u64,
    closed: bool,
}

#[workflow]
impl Shop {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, first: Order) -> Result<u64, WorkflowError> {
        ctx.state_mut(|s| s.orders.push(first));
        ctx.wait_condition(|s| s.closed).await;
        Ok(ctx.state(|s| s.total))
    }

    #[signal]
    fn add(&mut self, order: Order) {
        self.total = self.total.saturating_add(u64::from(order.qty));
        self.orders.push(order);
    }

    #[signal]
    fn bump(&mut self, by: u64, _why: Option<i32>) {
        self.total = self.total.saturating_add(by);
    }

    #[update]
    fn put(&mut self, order: Order, copies: u8) -> Result<usize, UpdateError> {
        if order.id.is_empty() {
            return Err(UpdateError::new("an order needs an id"));
        }
        for _ in 0..copies {
            self.orders.push(order.clone());
        }
        Ok(self.orders.len())
    }

    #[validator(put)]
    fn check_put(&self, _order: &Order, copies: &u8) -> Result<(), Rejection> {
        if *copies > 3 {
            return Err(Rejection::new("at most 3 copies"));
        }
        Ok(())
    }

    #[query]
    fn count(&self) -> usize {
        self.orders.len()
    }

    #[query]
    fn find(&self, id: String) -> Option<u32> {
        self.orders.iter().find(|o| o.id == id).map(|o| o.qty)
    }
}

/// One client call, by wire name (`nope` names no handler).
#[derive(Debug, Clone, Copy)]
enum Call {
    Signal(&'static str),
    Update(&'static str),
    Query(&'static str),
    Start,
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        prop::sample::select(vec!["add", "bump", "nope"]).prop_map(Call::Signal),
        prop::sample::select(vec!["put", "nope"]).prop_map(Call::Update),
        prop::sample::select(vec!["count", "find", "nope"]).prop_map(Call::Query),
        Just(Call::Start),
    ]
}

fn order() -> impl Strategy<Value = Order> {
    (
        "[a-z]{0,3}",
        any::<u32>(),
        vec("\\PC{0,4}", 0..3),
        proptest::option::of("[a-z]{0,3}"),
    )
        .prop_map(|(id, qty, tags, note)| Order {
            id,
            qty,
            tags,
            note,
        })
}

/// Arguments: arbitrary bytes, or valid encodings of the handlers' argument tuples (right or
/// wrong for the call) with a few bytes flipped, cut or inserted.
fn args() -> impl Strategy<Value = Vec<u8>> {
    let valid = prop_oneof![
        order().prop_map(|o| encode(&(o,))),
        (order(), any::<u8>()).prop_map(|(o, n)| encode(&(o, n))),
        (any::<u64>(), proptest::option::of(any::<i32>())).prop_map(|v| encode(&v)),
        "[a-z]{0,3}".prop_map(|s| encode(&(s,))),
        order().prop_map(|o| encode(&o)),
        Just(encode(&())),
    ];
    let mutations = vec((any::<Index>(), any::<u8>(), 0..3u8), 0..3);
    prop_oneof![
        vec(any::<u8>(), 0..48),
        (valid, mutations).prop_map(|(mut bytes, mutations)| {
            for (at, byte, how) in mutations {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                match how {
                    0 => bytes[i] ^= byte | 1,
                    1 => bytes.truncate(i),
                    _ => bytes.insert(i, byte),
                }
            }
            bytes
        }),
    ]
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    Payload::encode(v).unwrap().into_bytes()
}

/// Starts tried (each under a fresh workflow id) and accepted.
#[derive(Default)]
struct Starts {
    tried: AtomicUsize,
    accepted: AtomicUsize,
}

/// Makes one call with `bytes` as its arguments and checks its outcome and what it wrote.
async fn one_call(
    client: &Client,
    starts: &Starts,
    call: Call,
    bytes: Vec<u8>,
) -> Result<(), TestCaseError> {
    let args = Payload::from_bytes(bytes).expect("small");
    let length = || async { client.describe("shop").await.unwrap().history_length };
    let before = length().await;
    match call {
        Call::Signal(name) => match client.signal_raw("shop", name, args, None).await {
            Ok(()) => prop_assert!(length().await > before, "an accepted signal is recorded"),
            Err(WfError::PayloadError(PayloadError::Decode { .. })) => {
                prop_assert_eq!(length().await, before, "a refused signal wrote an event")
            }
            Err(e) => prop_assert!(false, "signal {name}: unexpected {e:?}"),
        },
        Call::Update(name) => {
            let outcome = client
                .update_raw("shop", name, args, None, UpdateStage::Completed)
                .await;
            match outcome {
                Ok(_) | Err(WfError::UpdateFailed(_)) => {
                    prop_assert!(length().await > before, "an accepted update is recorded")
                }
                Err(
                    WfError::PayloadError(PayloadError::Decode { .. })
                    | WfError::Rejected(_)
                    | WfError::Unknown { kind: "update", .. },
                ) => prop_assert_eq!(length().await, before, "a refused update wrote an event"),
                Err(e) => prop_assert!(false, "update {name}: unexpected {e:?}"),
            }
        }
        Call::Query(name) => {
            match client.query_raw("shop", name, args).await {
                Ok(_) | Err(WfError::PayloadError(PayloadError::Decode { .. })) => {}
                Err(WfError::QueryError(m)) => prop_assert!(m.contains("unknown query"), "{m}"),
                Err(e) => prop_assert!(false, "query {name}: unexpected {e:?}"),
            }
            prop_assert_eq!(length().await, before, "a query wrote an event");
        }
        Call::Start => {
            let id = format!("start-{}", starts.tried.fetch_add(1, Ordering::SeqCst));
            let started = client
                .start_raw(&id, "Shop", args, StartOptions::default())
                .await;
            let run = client.describe(&id).await;
            match started {
                Ok(_) => {
                    starts.accepted.fetch_add(1, Ordering::SeqCst);
                    prop_assert!(run.is_ok(), "a started run exists")
                }
                Err(WfError::PayloadError(PayloadError::Decode { .. })) => prop_assert!(
                    matches!(run, Err(WfError::NotFound { .. })),
                    "a refused start created a run"
                ),
                Err(e) => prop_assert!(false, "start: unexpected {e:?}"),
            }
        }
    }
    Ok(())
}

fn cases(default: u32) -> Config {
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default;
    }
    config
}

async fn arbitrary_arguments_get_typed_errors_and_refused_ones_write_nothing(backend: Backend) {
    let engine = builder(backend, "hostile")
        .workflow::<Shop>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let first = Order {
        id: "o-1".into(),
        qty: 1,
        tags: vec![],
        note: None,
    };
    let shop = client.start::<Shop>("shop", first).await.unwrap();
    let starts = Arc::new(Starts::default());
    let runtime = tokio::runtime::Handle::current();
    let (c, s) = (client.clone(), starts.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        TestRunner::new(cases(256)).run(&(call(), args()), |(call, bytes)| {
            runtime.block_on(one_call(&c, &s, call, bytes))
        })
    })
    .await
    .unwrap();
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // Nothing panicked in the engine: the run answers and no workflow task failed.
    assert!(shop.count().await.unwrap() >= 1);
    let d = shop.describe().await.unwrap();
    assert_eq!(d.status, RunStatus::Running);
    assert!(d.task_failure.is_none(), "{:?}", d.task_failure);
    let runs = client.list(ListFilter::default()).await.unwrap();
    assert_eq!(runs.len(), 1 + starts.accepted.load(Ordering::SeqCst));
    engine.shutdown().await;
}

both!(arbitrary_arguments_get_typed_errors_and_refused_ones_write_nothing);
