//! The Replayer: histories recorded by version 1 of a workflow, exported to JSON files, replayed
//! by later versions of its code. A compatible change passes, an incompatible one fails naming
//! the event and both commands, a patched change passes on old and new histories.

mod common;

use common::{both, builder, eventually, Backend};
use std::path::{Path, PathBuf};
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    history::{EventKind, History, ReplayError, Replayer},
    workflow::WorkflowDefinition,
};

/// The activities every version calls.
#[derive(Default)]
pub struct Shop;

#[activities]
impl Shop {
    #[activity]
    async fn charge(&self, _ctx: ActivityContext, order: String) -> Result<String, ActivityError> {
        Ok(format!("charged {order}"))
    }

    #[activity]
    async fn ship(&self, _ctx: ActivityContext, note: String) -> Result<String, ActivityError> {
        Ok(format!("{note}, shipped"))
    }

    #[activity]
    async fn fee(&self, _ctx: ActivityContext, note: String) -> Result<String, ActivityError> {
        Ok(format!("{note}, fee"))
    }
}

/// One version of the `order` workflow: a type `$name` whose state is `go` (set by the `go`
/// signal), with `run` as given, and any more handlers. Each version is a type of its own so
/// that one test can record with one and replay with another.
macro_rules! order_version {
    ($(#[$doc:meta])* $name:ident, |$ctx:ident, $order:ident| $body:block $($extra:tt)*) => {
        $(#[$doc])*
        #[derive(Default)]
        pub struct $name {
            go: bool,
        }

        #[workflow(name = "order")]
        impl $name {
            #[run]
            async fn run(
                $ctx: &mut WorkflowContext<Self>,
                $order: String,
            ) -> Result<String, WorkflowError> $body

            #[signal]
            fn go(&mut self) {
                self.go = true;
            }

            $($extra)*
        }
    };
}

order_version!(
    /// Version 1: charge, wait for `go`, ship.
    OrderV1,
    |ctx, order| {
        let note = ctx.activity(Shop::charge, order).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(ctx.activity(Shop::ship, note).await?)
    }
);

order_version!(
    /// Compatible: a new query and a new signal; the commands are the same.
    OrderWithQuery,
    |ctx, order| {
        let note = ctx.activity(Shop::charge, order).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(ctx.activity(Shop::ship, note).await?)
    }
    #[signal]
    fn hold(&mut self) {}

    #[query]
    fn released(&self) -> bool {
        self.go
    }
);

order_version!(
    /// Incompatible: the charge activity became a timer.
    OrderWithTimer,
    |ctx, order| {
        ctx.sleep(Duration::from_secs(5)).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(ctx.activity(Shop::ship, order).await?)
    }
);

order_version!(
    /// Incompatible: ship before charge.
    OrderReordered,
    |ctx, order| {
        let note = ctx.activity(Shop::ship, order).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(ctx.activity(Shop::charge, note).await?)
    }
);

order_version!(
    /// Version 2, done right: a fee activity after the signal, guarded by a patch.
    OrderPatched,
    |ctx, order| {
        let mut note = ctx.activity(Shop::charge, order).await?;
        ctx.wait_condition(|s| s.go).await;
        if ctx.patched("add-fee") {
            note = ctx.activity(Shop::fee, note).await?;
        }
        Ok(ctx.activity(Shop::ship, note).await?)
    }
);

order_version!(
    /// Version 2 without the patch: the same change, unguarded.
    OrderUnguarded,
    |ctx, order| {
        let note = ctx.activity(Shop::charge, order).await?;
        ctx.wait_condition(|s| s.go).await;
        let note = ctx.activity(Shop::fee, note).await?;
        Ok(ctx.activity(Shop::ship, note).await?)
    }
);

/// A fresh folder under cargo's scratch directory.
fn temp_dir(tag: &str) -> PathBuf {
    let db = common::temp_db(tag);
    let dir = db.with_extension("histories");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs code `W` on `backend`: one order finished (signalled) and one left waiting for its
/// signal; exports both to `dir` as `<prefix>-done.json` and `<prefix>-waiting.json`.
async fn record<W: WorkflowDefinition<Input = String>>(backend: Backend, dir: &Path, prefix: &str) {
    let engine = builder(backend, "replayer")
        .workflow::<W>()
        .activities(Shop)
        .build()
        .await
        .unwrap();
    let client = engine.client();
    for (id, finish) in [("done", true), ("waiting", false)] {
        let id = format!("{prefix}-{id}");
        let h = client.start::<W>(id.as_str(), id.clone()).await.unwrap();
        if finish {
            let no_args = wf_sdk::payload::Payload::encode(&()).unwrap();
            client.signal_raw(&id, "go", no_args, None).await.unwrap();
            h.result().await.unwrap();
        } else {
            eventually("the charge to complete", || async {
                let history = h.history().await.ok()?;
                history
                    .iter()
                    .any(|e| matches!(e.kind, EventKind::ActivityCompleted { .. }))
                    .then_some(())
            })
            .await;
        }
        let exported = h.export().await.unwrap();
        assert_eq!(exported.workflow_type, "order");
        assert_eq!(exported.workflow_id, id);
        assert_eq!(exported.events, h.history().await.unwrap());
        std::fs::write(dir.join(format!("{id}.json")), exported.to_json().unwrap()).unwrap();
    }
    engine.shutdown().await;
}

fn load(dir: &Path, name: &str) -> History {
    History::from_json(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
}

/// The event id of the first event matching `pred`.
fn event_id(h: &History, pred: impl Fn(&EventKind) -> bool) -> u64 {
    h.events.iter().find(|e| pred(&e.kind)).unwrap().event_id
}

async fn exported_histories_round_trip_and_replay_on_the_same_code(backend: Backend) {
    let dir = temp_dir("replayer-same");
    record::<OrderV1>(backend, &dir, "v1").await;
    let done = load(&dir, "v1-done.json");
    assert!(done
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::WorkflowCompleted { .. })));
    let text = std::fs::read_to_string(dir.join("v1-done.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["format"], "wf-history");
    assert_eq!(json["version"], 1);
    assert_eq!(json["run_id"], done.run_id.as_str());
    // Payloads are shown decoded for people.
    assert_eq!(json["events"][0]["attributes"]["input"], "v1-done");

    let replayer = Replayer::new().workflow::<OrderV1>();
    replayer.replay(&done).unwrap();
    let outcomes = replayer.replay_dir(&dir).unwrap();
    assert_eq!(outcomes.len(), 2);
    for o in &outcomes {
        assert!(o.result.is_ok(), "{o}");
    }
    // A compatible change (new query, new signal) replays both.
    let compatible = Replayer::new().workflow::<OrderWithQuery>();
    for o in compatible.replay_dir(&dir).unwrap() {
        assert!(o.result.is_ok(), "{o}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn an_activity_swapped_for_a_timer_fails_naming_the_event(backend: Backend) {
    let dir = temp_dir("replayer-timer");
    record::<OrderV1>(backend, &dir, "v1").await;
    let outcomes = Replayer::new()
        .workflow::<OrderWithTimer>()
        .replay_dir(&dir)
        .unwrap();
    assert_eq!(outcomes.len(), 2);
    for o in outcomes {
        let history = load(&dir, o.path.file_name().unwrap().to_str().unwrap());
        let scheduled = event_id(
            &history,
            |k| matches!(k, EventKind::ActivityScheduled { name, .. } if name == "charge"),
        );
        let Err(ReplayError::NonDeterminism(d)) = &o.result else {
            panic!("expected a nondeterminism error, got {o}");
        };
        assert_eq!(d.event_id, Some(scheduled), "{o}");
        assert!(d
            .recorded
            .as_deref()
            .unwrap()
            .starts_with("ActivityScheduled"));
        assert!(d.recorded.as_deref().unwrap().contains("charge"));
        assert!(d.issued.as_deref().unwrap().starts_with("TimerStarted"));
        let shown = o.to_string();
        assert!(
            shown.contains(&format!("history event {scheduled}")),
            "{shown}"
        );
        assert!(shown.contains("TimerStarted"), "{shown}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn reordered_activities_fail_naming_both_commands(backend: Backend) {
    let dir = temp_dir("replayer-reorder");
    record::<OrderV1>(backend, &dir, "v1").await;
    let history = load(&dir, "v1-done.json");
    let err = Replayer::new()
        .workflow::<OrderReordered>()
        .replay(&history)
        .unwrap_err();
    let ReplayError::NonDeterminism(d) = &err else {
        panic!("expected a nondeterminism error, got {err}");
    };
    let scheduled = event_id(&history, |k| {
        matches!(k, EventKind::ActivityScheduled { .. })
    });
    assert_eq!(d.event_id, Some(scheduled));
    assert!(d.recorded.as_deref().unwrap().contains("charge"), "{err}");
    assert!(d.issued.as_deref().unwrap().contains("ship"), "{err}");
    // An unguarded new step fails only on the history that got past the signal.
    let unguarded = Replayer::new().workflow::<OrderUnguarded>();
    assert!(matches!(
        unguarded.replay(&history),
        Err(ReplayError::NonDeterminism(_))
    ));
    unguarded.replay(&load(&dir, "v1-waiting.json")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn a_patched_change_replays_old_and_new_histories(backend: Backend) {
    let dir = temp_dir("replayer-patch");
    record::<OrderV1>(backend, &dir, "v1").await;
    record::<OrderPatched>(backend, &dir, "v2").await;
    let new = load(&dir, "v2-done.json");
    assert!(new
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::ActivityScheduled { name, .. } if name == "fee")));
    let outcomes = Replayer::new()
        .workflow::<OrderPatched>()
        .replay_dir(&dir)
        .unwrap();
    assert_eq!(outcomes.len(), 4);
    for o in &outcomes {
        assert!(o.result.is_ok(), "{o}");
    }
    // The old code cannot replay the new finished history: the check has teeth.
    assert!(matches!(
        Replayer::new().workflow::<OrderV1>().replay(&new),
        Err(ReplayError::NonDeterminism(_))
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

both!(
    exported_histories_round_trip_and_replay_on_the_same_code,
    an_activity_swapped_for_a_timer_fails_naming_the_event,
    reordered_activities_fail_naming_both_commands,
    a_patched_change_replays_old_and_new_histories,
);

#[test]
fn unknown_types_unreadable_files_and_other_versions_are_reported_per_file() {
    let dir = temp_dir("replayer-bad");
    std::fs::write(dir.join("a-garbage.json"), "not json").unwrap();
    let doc = r#"{"format": "wf-history", "version": 9, "workflow_type": "order",
        "workflow_id": "x", "run_id": "r", "events": []}"#;
    std::fs::write(dir.join("b-future.json"), doc).unwrap();
    let other = doc
        .replace("\"version\": 9", "\"version\": 1")
        .replace("order", "invoice");
    std::fs::write(dir.join("c-other-type.json"), other).unwrap();
    std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
    let outcomes = Replayer::new()
        .workflow::<OrderV1>()
        .replay_dir(&dir)
        .unwrap();
    assert_eq!(outcomes.len(), 3);
    assert!(matches!(outcomes[0].result, Err(ReplayError::Format(_))));
    let future = outcomes[1].to_string();
    assert!(future.contains("version 9 is not supported"), "{future}");
    match &outcomes[2].result {
        Err(ReplayError::UnknownType {
            workflow_type,
            registered,
        }) => {
            assert_eq!(workflow_type, "invoice");
            assert_eq!(registered, "order");
        }
        other => panic!("expected UnknownType, got {other:?}"),
    }
    assert!(Replayer::new().replay_dir(dir.join("missing")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
