//! Payloads at the engine's size limit round-trip through every place a payload is stored.

use super::fixtures::*;
use crate::store::Payload;
use crate::store::{ActivityOptions, EventKind};
use crate::store::{ActivityResolution, Message, NewActivityTask, RunClose, RunStart, Store};
use crate::MAX_PAYLOAD_BYTES;
use std::sync::Arc;

fn big(fill: char) -> Payload {
    // A MessagePack string just under the limit (the header takes 5 bytes).
    let p = payload(fill.to_string().repeat(MAX_PAYLOAD_BYTES - 5));
    assert_eq!(p.len(), MAX_PAYLOAD_BYTES);
    p
}

/// A two mib payload round trips everywhere.
pub async fn a_two_mib_payload_round_trips_everywhere(store: Arc<dyn Store>) {
    let (input, args, result, beat, output) = (big('i'), big('a'), big('r'), big('h'), big('o'));
    let mut req: RunStart = start_request("wf-1", "run-1", T0);
    req.run.input = input.clone();
    req.messages = vec![Message::Signal {
        name: "load".into(),
        args: args.clone(),
        signal_id: None,
        sent_at: None,
    }];
    store.start_run(req).await.unwrap();

    let history = store.read_history("run-1", 1).await.unwrap();
    assert!(matches!(&history[0].kind, EventKind::WorkflowStarted { input: i, .. } if *i == input));
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert!(run.history_bytes > MAX_PAYLOAD_BYTES as u64);

    let task = lease_one(&*store, "w", T0).await;
    assert!(matches!(&task.messages[0].message, Message::Signal { args: a, .. } if *a == args));
    let mut c = commit_for(&task, "w", T0);
    c.events.insert(
        0,
        event(
            T0,
            EventKind::SignalReceived {
                name: "load".into(),
                args: args.clone(),
                signal_id: None,
                sent_at: None,
            },
        ),
    );
    c.new_activities = vec![NewActivityTask {
        seq: 1,
        name: "crunch".into(),
        input: input.clone(),
        options: ActivityOptions::default(),
    }];
    c.summary = big('s');
    let run = store.commit_workflow_task(c).await.unwrap();
    assert_eq!(run.summary, big('s'));

    let leased = store.poll_activity_tasks_any("aw", T0, 1).await.unwrap();
    assert_eq!(leased[0].input, input);
    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), Some(beat.clone()), T0 + 1)
        .await
        .unwrap());
    assert_eq!(
        store.pending_activities("run-1").await.unwrap()[0]
            .heartbeat
            .as_ref(),
        Some(&beat)
    );
    let done = ActivityResolution::Completed {
        result: result.clone(),
        attempts: 1,
    };
    assert!(store
        .resolve_activity(attempt_of("run-1", 1, 1), done.clone(), T0 + 2)
        .await
        .unwrap());

    let task = lease_one(&*store, "w", T0 + 2).await;
    assert_eq!(
        task.messages[0].message,
        Message::ActivityResolved {
            seq: 1,
            resolution: done
        }
    );
    let mut c = commit_for(&task, "w", T0 + 2);
    c.events.push(event(
        T0 + 2,
        EventKind::WorkflowCompleted {
            result: output.clone(),
        },
    ));
    c.close = Some(RunClose::Completed(output.clone()));
    let closed = store.commit_workflow_task(c).await.unwrap();
    assert_eq!(closed.result.as_ref(), Some(&output));
    assert_eq!(
        store.get_run("wf-1", None).await.unwrap().unwrap().result,
        Some(output.clone())
    );

    let history = store.read_history("run-1", 1).await.unwrap();
    assert!(matches!(&history[1].kind, EventKind::SignalReceived { args: a, .. } if *a == args));
    assert!(
        matches!(&history.last().unwrap().kind, EventKind::WorkflowCompleted { result: r } if *r == output)
    );
}
