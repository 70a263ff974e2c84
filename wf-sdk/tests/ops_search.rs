//! Finding runs: a workflow upserts typed search attributes, a start sets a memo; describe
//! shows both, lists filter by type, status, search attributes and start/close times and page
//! with a cursor, and a run rebuilt by replay on another engine keeps them.

mod common;
use common::*;
use std::time::{Duration, SystemTime};
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, RunInfo, StartOptions},
    history::EventKind,
};

#[derive(Serialize, Deserialize, Clone)]
pub struct OrderInput {
    pub customer: String,
    pub amount: i64,
}

/// Marks itself open, waits to be shipped, then marks itself shipped.
#[derive(Default)]
pub struct Order {
    shipped: bool,
}

#[workflow]
impl Order {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: OrderInput,
    ) -> Result<String, WorkflowError> {
        ctx.upsert_search_attributes([
            ("customer", SearchValue::from(input.customer.as_str())),
            ("amount", SearchValue::from(input.amount)),
            ("stage", SearchValue::from("open")),
        ])?;
        ctx.wait_condition(|s| s.shipped).await;
        ctx.upsert_search_attributes([
            ("stage", SearchValue::from("shipped")),
            ("express", SearchValue::from(input.amount > 50)),
        ])?;
        Ok(format!("shipped to {}", input.customer))
    }

    #[signal]
    fn ship(&mut self) {
        self.shipped = true;
    }
}

/// A workflow whose key is out of the limits: the run fails with the limit's message.
#[derive(Default)]
pub struct BadKey;

#[workflow]
impl BadKey {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.upsert_search_attributes([("", SearchValue::from(1))])?;
        Ok(())
    }
}

fn order(customer: &str, amount: i64) -> OrderInput {
    OrderInput {
        customer: customer.into(),
        amount,
    }
}

fn ids(runs: &[RunInfo]) -> Vec<&str> {
    runs.iter().map(|r| r.workflow_id.as_str()).collect()
}

fn search(pairs: &[(&str, SearchValue)]) -> ListFilter {
    ListFilter {
        search: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        ..ListFilter::default()
    }
}

/// Waits until `id`'s search attribute `key` holds `value` (the commit that records it may
/// follow the call that caused it).
async fn until_attribute(client: &Client, id: &str, key: &str, value: SearchValue) {
    eventually(&format!("{id}: {key} = {value}"), || async {
        let d = client.handle::<Order>(id).describe().await.unwrap();
        (d.search_attributes.get(key) == Some(&value)).then_some(())
    })
    .await
}

async fn lists_find_runs_by_search_attributes_status_and_times(backend: Backend) {
    let engine = builder(backend, "search-list")
        .workflow::<Order>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let before = SystemTime::now() - Duration::from_secs(1);
    let memo = StartOptions::default()
        .with_memo("requested_by", "ops@example.com")
        .unwrap()
        .with_memo("ticket", &4711)
        .unwrap();
    client
        .start_with::<Order>("o-1", order("acme", 100), memo)
        .await
        .unwrap();
    client
        .start::<Order>("o-2", order("globex", 5))
        .await
        .unwrap();
    client
        .start::<Order>("o-3", order("acme", 7))
        .await
        .unwrap();
    for id in ["o-1", "o-2", "o-3"] {
        until_attribute(&client, id, "stage", SearchValue::from("open")).await;
    }

    let acme = client
        .list(search(&[("customer", SearchValue::from("acme"))]))
        .await
        .unwrap();
    assert_eq!(ids(&acme), ["o-3", "o-1"]);
    let big = search(&[
        ("customer", SearchValue::from("acme")),
        ("amount", SearchValue::from(100)),
    ]);
    assert_eq!(ids(&client.list(big).await.unwrap()), ["o-1"]);
    // Typed: the keyword "100" is not the int 100.
    let keyword = search(&[("amount", SearchValue::from("100"))]);
    assert!(client.list(keyword).await.unwrap().is_empty());

    client.handle::<Order>("o-1").ship().await.unwrap();
    let done = client.handle::<Order>("o-1").result().await.unwrap();
    assert_eq!(done, "shipped to acme");
    until_attribute(&client, "o-1", "stage", SearchValue::from("shipped")).await;

    let shipped = ListFilter {
        status: Some(RunStatus::Completed),
        workflow_type: Some("Order".into()),
        ..search(&[("stage", SearchValue::from("shipped"))])
    };
    let shipped = client.list(shipped).await.unwrap();
    assert_eq!(ids(&shipped), ["o-1"]);
    let o1 = &shipped[0];
    assert_eq!(
        o1.search_attributes.get("express"),
        Some(&SearchValue::Bool(true))
    );
    assert_eq!(
        o1.memo["requested_by"].decode::<String>().unwrap(),
        "ops@example.com"
    );
    let open_acme = ListFilter {
        status: Some(RunStatus::Running),
        ..search(&[("customer", SearchValue::from("acme"))])
    };
    assert_eq!(ids(&client.list(open_acme).await.unwrap()), ["o-3"]);

    // Describe shows both, and the history holds the upserts.
    let d = client.handle::<Order>("o-1").describe().await.unwrap();
    assert_eq!(d.search_attributes.len(), 4);
    assert_eq!(d.search_attributes["customer"], SearchValue::from("acme"));
    assert_eq!(d.search_attributes["amount"], SearchValue::Int(100));
    assert_eq!(d.memo["ticket"].decode::<i64>().unwrap(), 4711);
    let history = client.handle::<Order>("o-1").history().await.unwrap();
    let upserts = count(&history, |k| {
        matches!(k, EventKind::SearchAttributesUpserted { .. })
    });
    assert_eq!(upserts, 2);
    let o2 = client.handle::<Order>("o-2").describe().await.unwrap();
    assert!(o2.memo.is_empty());

    // Times: all started after `before`, none in the future; only o-1 closed.
    let started = |after| ListFilter {
        started_after: Some(after),
        ..ListFilter::default()
    };
    assert_eq!(client.list(started(before)).await.unwrap().len(), 3);
    let later = SystemTime::now() + Duration::from_secs(3600);
    assert!(client.list(started(later)).await.unwrap().is_empty());
    let closed = ListFilter {
        closed_after: Some(before),
        ..ListFilter::default()
    };
    assert_eq!(ids(&client.list(closed).await.unwrap()), ["o-1"]);
    let started_early = ListFilter {
        started_before: Some(before),
        ..ListFilter::default()
    };
    assert!(client.list(started_early).await.unwrap().is_empty());

    // Pages of two, each after the last run of the one before.
    let page = |after: Option<String>| ListFilter {
        limit: 2,
        after_run_id: after,
        ..ListFilter::default()
    };
    let first = client.list(page(None)).await.unwrap();
    assert_eq!(ids(&first), ["o-3", "o-2"]);
    let second = client
        .list(page(Some(first[1].run_id.clone())))
        .await
        .unwrap();
    assert_eq!(ids(&second), ["o-1"]);
    engine.shutdown().await;
}

async fn a_run_replayed_on_another_engine_keeps_its_search_attributes(backend: Backend) {
    let engines = shared_store(backend, "search-replay");
    let first = engines().workflow::<Order>().build().await.unwrap();
    first
        .client()
        .start::<Order>("o-9", order("initech", 60))
        .await
        .unwrap();
    until_attribute(&first.client(), "o-9", "stage", SearchValue::from("open")).await;
    first.shutdown().await;

    // A fresh engine rebuilds the run from its history (the upsert replays, matching its
    // recorded event) and goes on.
    let second = engines().workflow::<Order>().build().await.unwrap();
    let client = second.client();
    let h = client.handle::<Order>("o-9");
    h.ship().await.unwrap();
    assert_eq!(h.result().await.unwrap(), "shipped to initech");
    let d = h.describe().await.unwrap();
    assert_eq!(
        d.search_attributes["customer"],
        SearchValue::from("initech")
    );
    assert_eq!(d.search_attributes["stage"], SearchValue::from("shipped"));
    assert!(d.task_failure.is_none());
    second.shutdown().await;
}

async fn a_key_out_of_the_limits_fails_the_run_with_its_message(backend: Backend) {
    let engine = builder(backend, "search-bad-key")
        .workflow::<BadKey>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<BadKey>("bad", ()).await.unwrap();
    let err = h.result().await.unwrap_err();
    assert!(err.to_string().contains("search attribute key"), "{err}");
    engine.shutdown().await;
}

both!(
    lists_find_runs_by_search_attributes_status_and_times,
    a_run_replayed_on_another_engine_keeps_its_search_attributes,
    a_key_out_of_the_limits_fails_the_run_with_its_message,
);
