//! Finding runs: lists filter by search attributes (upserted by commits), start and close
//! times, and page with a cursor; memos and search attributes are read back, carried over a
//! continue-as-new, and go with a purge.

use super::fixtures::*;
use crate::data::search::{Memo, SearchAttributes, SearchValue};
use crate::store::{Delivery, EventKind, ListFilter, NewRun, RunClose, RunStatus, Store};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms as u64)
}

fn upsert(pairs: &[(&str, SearchValue)]) -> EventKind {
    EventKind::SearchAttributesUpserted {
        attributes: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

/// Starts `workflow_id` (run `run_id`) at `now_ms` and commits one task that upserts
/// `pairs`, closing the run when `close` is set.
async fn run_with(
    store: &dyn Store,
    workflow_id: &str,
    run_id: &str,
    now_ms: i64,
    pairs: &[(&str, SearchValue)],
    close: bool,
) {
    start(store, workflow_id, run_id, now_ms).await;
    let attributes = upsert(pairs);
    run_task(store, now_ms, |_, c| {
        c.events.insert(0, event(now_ms, attributes));
        if close {
            c.close = Some(RunClose::Completed(payload("done")));
        }
    })
    .await;
}

async fn ids(store: &dyn Store, filter: ListFilter) -> Vec<String> {
    let runs = store.admin().list_runs(filter).await.expect("list");
    runs.into_iter().map(|r| r.run_id).collect()
}

/// Lists keep only the runs whose search attributes hold every value asked for (same kind:
/// the keyword "42" is not the int 42), within the start and close time bounds, and page
/// with the last run id of the previous page.
pub async fn lists_filter_by_search_attributes_and_times_and_page(store: Arc<dyn Store>) {
    let acme = || SearchValue::from("acme");
    let s = &*store;
    run_with(
        s,
        "o-1",
        "run-1",
        T0,
        &[("customer", acme()), ("n", SearchValue::Int(42))],
        true,
    )
    .await;
    run_with(
        s,
        "o-2",
        "run-2",
        T0 + 10,
        &[("customer", SearchValue::from("globex"))],
        false,
    )
    .await;
    run_with(
        s,
        "o-3",
        "run-3",
        T0 + 20,
        &[("customer", acme()), ("n", SearchValue::from("42"))],
        false,
    )
    .await;
    run_with(
        s,
        "o-4",
        "run-4",
        T0 + 30,
        &[("vip", SearchValue::Bool(true))],
        false,
    )
    .await;
    // A later upsert replaces the value of its key, and adds to the others.
    s.deliver(Delivery::new("o-2", signal("go", None), T0 + 40))
        .await
        .unwrap();
    let attributes = upsert(&[("customer", acme()), ("amount", SearchValue::Float(2.5))]);
    run_task(s, T0 + 40, |_, c| {
        c.events.insert(0, event(T0 + 40, attributes))
    })
    .await;

    let by = |pairs: Vec<(&str, SearchValue)>| ListFilter {
        search: pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        ..ListFilter::default()
    };
    assert_eq!(
        ids(s, by(vec![("customer", acme())])).await,
        ["run-3", "run-2", "run-1"]
    );
    assert_eq!(
        ids(s, by(vec![("customer", SearchValue::from("globex"))])).await,
        Vec::<String>::new()
    );
    assert_eq!(
        ids(
            s,
            by(vec![("customer", acme()), ("n", SearchValue::Int(42))])
        )
        .await,
        ["run-1"]
    );
    assert_eq!(
        ids(s, by(vec![("n", SearchValue::from("42"))])).await,
        ["run-3"]
    );
    assert_eq!(
        ids(s, by(vec![("amount", SearchValue::Float(2.5))])).await,
        ["run-2"]
    );
    assert_eq!(
        ids(s, by(vec![("vip", SearchValue::Bool(true))])).await,
        ["run-4"]
    );
    assert_eq!(
        ids(s, by(vec![("vip", SearchValue::Bool(false))])).await,
        Vec::<String>::new()
    );
    let with_status = ListFilter {
        status: Some(RunStatus::Running),
        ..by(vec![("customer", acme())])
    };
    assert_eq!(ids(s, with_status).await, ["run-3", "run-2"]);

    let started = ListFilter {
        started_after: Some(at(T0 + 10)),
        started_before: Some(at(T0 + 30)),
        ..ListFilter::default()
    };
    assert_eq!(ids(s, started).await, ["run-3", "run-2"]);
    let closed = ListFilter {
        closed_after: Some(at(T0)),
        closed_before: Some(at(T0 + 1)),
        ..ListFilter::default()
    };
    assert_eq!(ids(s, closed).await, ["run-1"]);
    let none_closed_later = ListFilter {
        closed_after: Some(at(T0 + 1)),
        ..ListFilter::default()
    };
    assert_eq!(ids(s, none_closed_later).await, Vec::<String>::new());

    // Pages of two, newest first, each after the last run of the one before.
    let page = |after: Option<&str>| ListFilter {
        limit: 2,
        after_run_id: after.map(str::to_string),
        ..ListFilter::default()
    };
    assert_eq!(ids(s, page(None)).await, ["run-4", "run-3"]);
    assert_eq!(ids(s, page(Some("run-3"))).await, ["run-2", "run-1"]);
    assert_eq!(ids(s, page(Some("run-1"))).await, Vec::<String>::new());
    assert_eq!(
        ids(s, page(Some("no-such-run"))).await,
        Vec::<String>::new()
    );
}

/// A start records its memo; a continue-as-new carries the search attributes and the memo to
/// the next run (which may bring a memo of its own); a purge deletes both with the run.
pub async fn memos_and_search_attributes_carry_over_and_go_with_a_purge(store: Arc<dyn Store>) {
    let s = &*store;
    let mut memo = Memo::new();
    memo.insert("owner".into(), payload("ops"));
    let mut request = start_request("wf-1", "run-1", T0);
    request.run.memo = memo.clone();
    s.start_run(request).await.unwrap();
    let attributes = upsert(&[("stage", SearchValue::from("one"))]);
    run_task(s, T0 + 1, |_, c| {
        c.events.insert(0, event(T0 + 1, attributes));
        c.close = Some(RunClose::ContinuedAsNew(NewRun {
            input: payload("round 2"),
            ..new_run("wf-1", "run-2")
        }));
    })
    .await;
    let expected: SearchAttributes = [("stage".to_string(), SearchValue::from("one"))].into();
    let both = s
        .admin()
        .run_search(vec!["run-1".into(), "run-2".into(), "nope".into()])
        .await
        .unwrap();
    assert_eq!(both.len(), 3);
    for found in &both[..2] {
        assert_eq!(found.attributes, expected);
        assert_eq!(found.memo, memo);
    }
    assert_eq!(both[2], Default::default());

    // The next run brings its own memo: it replaces the carried one.
    let mut own = Memo::new();
    own.insert("owner".into(), payload("dev"));
    run_task(s, T0 + 2, |_, c| {
        c.close = Some(RunClose::ContinuedAsNew(NewRun {
            memo: own.clone(),
            ..new_run("wf-1", "run-3")
        }));
    })
    .await;
    let third = s
        .admin()
        .run_search(vec!["run-3".into()])
        .await
        .unwrap()
        .remove(0);
    assert_eq!((third.attributes, third.memo), (expected.clone(), own));
    let listed = ListFilter {
        search: vec![("stage".into(), SearchValue::from("one"))],
        ..ListFilter::default()
    };
    assert_eq!(ids(s, listed.clone()).await, ["run-3", "run-2", "run-1"]);

    let purged = s.admin().purge_closed_runs(T0 + 100, 100).await.unwrap();
    assert_eq!(purged, ["run-1", "run-2"]);
    assert_eq!(ids(s, listed).await, ["run-3"]);
    let gone = s
        .admin()
        .run_search(vec!["run-1".into()])
        .await
        .unwrap()
        .remove(0);
    assert_eq!(gone, Default::default());
}
