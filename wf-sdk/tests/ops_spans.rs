//! The tracing spans of a run: a layer of this test records every span wf opens with its
//! fields and its parent; the workflow task, its activation, its commit, the signal, update and
//! query handlers, the activity attempt and the SQLite group commit must each carry the run's
//! workflow id and run id and the handler's or task's name. One test per binary: it installs
//! the process-wide subscriber (the workers run on threads of their own).

mod common;

use common::temp_db;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Spanned {
    go: bool,
    total: u32,
}

#[workflow(name = "spanned")]
impl Spanned {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        let n = ctx.state(|s| s.total);
        Ok(ctx.activity(Doubler::double, n).await?)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }

    #[update]
    fn add(&mut self, n: u32) -> Result<u32, UpdateError> {
        self.total += n;
        Ok(self.total)
    }

    #[validator(add)]
    fn positive(&self, n: &u32) -> Result<(), Rejection> {
        if *n == 0 {
            return Err(Rejection::new("must be positive"));
        }
        Ok(())
    }

    #[query]
    fn total(&self) -> u32 {
        self.total
    }
}

pub struct Doubler;

#[activities]
impl Doubler {
    #[activity]
    pub async fn double(&self, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        Ok(n * 2)
    }
}

/// A span as the layer saw it.
#[derive(Debug, Clone)]
struct Seen {
    name: &'static str,
    parent: Option<&'static str>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<(Id, Seen)>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.name());
        let seen = Seen {
            name: attrs.metadata().name(),
            parent,
            fields,
        };
        self.0.lock().unwrap().push((id.clone(), seen));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.0.lock().unwrap();
        if let Some((_, seen)) = spans.iter_mut().rev().find(|(i, _)| i == id) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
}

#[tokio::test]
async fn spans_carry_the_run_and_the_handler() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(capture.clone()))
        .expect("the only subscriber of this test binary");

    let engine = Engine::builder()
        .sqlite(temp_db("spans"))
        .workflow::<Spanned>()
        .activities(Doubler)
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Spanned>("span-1", ()).await.unwrap();
    assert_eq!(h.add(4).await.unwrap(), 4);
    assert!(h.add(0).await.is_err());
    assert_eq!(h.total().await.unwrap(), 4);
    h.go().await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), h.result()).await;
    assert_eq!(result.expect("the run finishes").unwrap(), 8);
    let run_id = h.describe().await.unwrap().run_id;
    engine.shutdown().await;

    let spans: Vec<Seen> = capture
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(_, s)| s.clone())
        .collect();
    let of_run = |name: &str| -> Vec<&Seen> {
        spans
            .iter()
            .filter(|s| {
                s.name == name && s.fields.get("workflow_id").map(String::as_str) == Some("span-1")
            })
            .collect()
    };
    let field = |s: &Seen, f: &str| s.fields.get(f).cloned().unwrap_or_default();

    let tasks = of_run("workflow_task");
    assert!(
        tasks.len() >= 3,
        "start, update, signal, activity result: {tasks:?}"
    );
    for t in &tasks {
        assert_eq!(field(t, "run_id"), run_id);
        assert_eq!(field(t, "workflow_type"), "spanned");
        assert!(
            ["start", "leased", "lease_free"].contains(&field(t, "mode").as_str()),
            "{t:?}"
        );
        assert!(field(t, "event_id").parse::<u64>().is_ok(), "{t:?}");
    }
    assert!(
        tasks.iter().any(|t| field(t, "mode") == "start"),
        "{tasks:?}"
    );

    let under = |name: &str, parent: &str| {
        spans
            .iter()
            .filter(|s| s.name == name && s.parent == Some(parent))
            .count()
    };
    assert!(
        under("activation", "workflow_task") >= tasks.len(),
        "{spans:?}"
    );
    assert!(under("commit", "workflow_task") >= 3, "{spans:?}");

    let signals = of_run("signal");
    assert_eq!(signals.len(), 1, "{spans:?}");
    assert_eq!(field(signals[0], "handler"), "go");
    assert_eq!(field(signals[0], "run_id"), run_id);
    assert_eq!(signals[0].parent, Some("activation"));

    let updates = of_run("update");
    assert_eq!(updates.len(), 2, "accepted and rejected: {spans:?}");
    for u in &updates {
        assert_eq!(field(u, "handler"), "add");
        assert_eq!(field(u, "run_id"), run_id);
        assert!(!field(u, "update_id").is_empty());
        assert_eq!(u.parent, Some("activation"));
    }

    let queries = of_run("query");
    assert!(!queries.is_empty(), "{spans:?}");
    assert!(queries
        .iter()
        .all(|q| field(q, "handler") == "total" && field(q, "run_id") == run_id));

    let attempts = of_run("activity_attempt");
    assert_eq!(attempts.len(), 1, "{spans:?}");
    assert_eq!(field(attempts[0], "run_id"), run_id);
    assert_eq!(field(attempts[0], "attempt"), "1");
    assert!(
        field(attempts[0], "activity").ends_with("double"),
        "{attempts:?}"
    );

    // The SQLite writer's transactions, with the number of requests each folded together.
    assert!(
        spans
            .iter()
            .any(|s| s.name == "group_commit"
                && field(s, "requests").parse::<u64>().unwrap_or(0) >= 1)
    );
}
