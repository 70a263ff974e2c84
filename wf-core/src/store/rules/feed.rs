//! The feed of what runs do: which history events are lifecycle facts, and with what details
//! ([`of_event`], written once for every store), the rows a transaction adds with the events
//! it inserts (a start, a workflow task's commit, a termination, a timeout, a repair), the
//! rows of facts history does not hold (a pause, an unpause, a retried activity attempt, what
//! signals a run waits for), and reading the feed.
//!
//! Every row is written in the transaction of what it reports: a commit that is rolled back
//! leaves none, and a crash loses none that was acknowledged.

use super::tx::{FeedRow, Tx};
use crate::data::feed::{FeedCursor, FeedDetail, FeedFilter, FeedKind, FeedPage, MAX_FEED_PAGE};
use crate::data::history::EventKind;
use crate::data::run::ChildOutcome;
use crate::data::update::UpdateOutcome;
use crate::error::StoreError;

/// The run a feed row is about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FeedRun<'a> {
    pub workflow_type: &'a str,
    pub workflow_id: &'a str,
    pub run_id: &'a str,
}

impl<'a> FeedRun<'a> {
    pub fn of(run: &'a crate::store::records::RunRecord) -> Self {
        FeedRun {
            workflow_type: &run.workflow_type,
            workflow_id: &run.workflow_id,
            run_id: &run.run_id,
        }
    }

    fn row(
        self,
        kind: FeedKind,
        event_id: Option<u64>,
        at_ms: i64,
        detail: &FeedDetail,
    ) -> FeedRow<'a> {
        FeedRow {
            workflow_type: self.workflow_type,
            workflow_id: self.workflow_id,
            run_id: self.run_id,
            kind,
            event_id,
            at_ms,
            detail: serde_json::to_string(detail).unwrap_or_else(|_| "{}".into()),
        }
    }
}

/// The feed event a history event is, with its details; `None` for the events that are no
/// lifecycle fact (listed on [`FeedKind`]).
pub(crate) fn of_event(kind: &EventKind) -> Option<(FeedKind, FeedDetail)> {
    if !crate::data::feed::is_fact(kind) {
        return None;
    }
    let d = FeedDetail::default;
    Some(match kind {
        EventKind::WorkflowStarted { .. } => (FeedKind::Started, d()),
        EventKind::SignalReceived { name, .. } => (
            FeedKind::SignalReceived,
            FeedDetail {
                name: Some(name.clone()),
                ..d()
            },
        ),
        EventKind::UpdateAccepted {
            update_id, name, ..
        } => (
            FeedKind::UpdateAccepted,
            FeedDetail {
                name: Some(name.clone()),
                update_id: Some(update_id.clone()),
                ..d()
            },
        ),
        EventKind::UpdateCompleted { update_id, outcome } => (
            FeedKind::UpdateCompleted,
            FeedDetail {
                update_id: Some(update_id.clone()),
                error: match outcome {
                    UpdateOutcome::Completed(_) => None,
                    UpdateOutcome::Failed(message) => Some(message.clone()),
                },
                ..d()
            },
        ),
        EventKind::ActivityScheduled { seq, name, .. } => (
            FeedKind::ActivityScheduled,
            FeedDetail {
                name: Some(name.clone()),
                seq: Some(*seq),
                ..d()
            },
        ),
        EventKind::ActivityCompleted { seq, attempts, .. } => (
            FeedKind::ActivityCompleted,
            FeedDetail {
                seq: Some(*seq),
                attempt: Some(*attempts),
                ..d()
            },
        ),
        EventKind::ActivityFailed {
            seq,
            failure,
            attempts,
            ..
        } => (
            FeedKind::ActivityFailed,
            FeedDetail {
                seq: Some(*seq),
                attempt: Some(*attempts),
                error: Some(failure.message.clone()),
                ..d()
            },
        ),
        EventKind::ActivityTimedOut {
            seq,
            timeout,
            attempts,
            ..
        } => (
            FeedKind::ActivityTimedOut,
            FeedDetail {
                seq: Some(*seq),
                attempt: Some(*attempts),
                error: Some(format!("{timeout:?}")),
                ..d()
            },
        ),
        EventKind::LocalActivityCompleted {
            seq,
            name,
            outcome,
            attempts,
        } => {
            use crate::data::activity::LocalOutcome;
            let (kind, error) = match outcome {
                LocalOutcome::Completed(_) => (FeedKind::ActivityCompleted, None),
                LocalOutcome::Failed(f) => (FeedKind::ActivityFailed, Some(f.message.clone())),
                LocalOutcome::Backoff { failure, .. } => {
                    (FeedKind::ActivityFailed, Some(failure.message.clone()))
                }
                LocalOutcome::TimedOut(t) => (FeedKind::ActivityTimedOut, Some(format!("{t:?}"))),
            };
            (
                kind,
                FeedDetail {
                    name: Some(name.clone()),
                    seq: Some(*seq),
                    attempt: Some(*attempts),
                    error,
                    ..d()
                },
            )
        }
        EventKind::ActivityCancelled { seq } => (
            FeedKind::ActivityCancelled,
            FeedDetail {
                seq: Some(*seq),
                ..d()
            },
        ),
        EventKind::TimerStarted { seq, fire_at_ms } => (
            FeedKind::TimerStarted,
            FeedDetail {
                seq: Some(*seq),
                fire_at_ms: Some(*fire_at_ms),
                ..d()
            },
        ),
        EventKind::TimerFired { seq } => (
            FeedKind::TimerFired,
            FeedDetail {
                seq: Some(*seq),
                ..d()
            },
        ),
        EventKind::TimerCancelled { seq } => (
            FeedKind::TimerCancelled,
            FeedDetail {
                seq: Some(*seq),
                ..d()
            },
        ),
        EventKind::CancelRequested { reason } => (FeedKind::CancelRequested, error(reason)),
        EventKind::WorkflowCompleted { .. } => (FeedKind::Completed, d()),
        EventKind::WorkflowFailed { message } => (FeedKind::Failed, error(message)),
        EventKind::ContinuedAsNew { new_run_id, .. } => (
            FeedKind::ContinuedAsNew,
            FeedDetail {
                new_run_id: Some(new_run_id.clone()),
                ..d()
            },
        ),
        EventKind::WorkflowTerminated { reason } => (FeedKind::Terminated, error(reason)),
        EventKind::WorkflowCancelled { reason } => (FeedKind::Cancelled, error(reason)),
        EventKind::WorkflowTimedOut {
            timeout,
            new_run_id,
        } => (
            FeedKind::TimedOut,
            FeedDetail {
                error: Some(format!("{} timeout", timeout.as_str())),
                new_run_id: new_run_id.clone(),
                ..d()
            },
        ),
        EventKind::WorkflowReset {
            new_run_id, reason, ..
        } => (
            FeedKind::Reset,
            FeedDetail {
                new_run_id: Some(new_run_id.clone()),
                error: Some(reason.clone()),
                ..d()
            },
        ),
        EventKind::ChildWorkflowStarted {
            seq,
            workflow_id,
            workflow_type,
            run_id,
            ..
        } => (
            FeedKind::ChildStarted,
            FeedDetail {
                name: Some(workflow_type.clone()),
                seq: Some(*seq),
                child_workflow_id: Some(workflow_id.clone()),
                new_run_id: Some(run_id.clone()),
                ..d()
            },
        ),
        EventKind::ChildWorkflowClosed { seq, outcome } => (
            FeedKind::ChildClosed,
            FeedDetail {
                seq: Some(*seq),
                error: match outcome {
                    ChildOutcome::Completed(_) => None,
                    ChildOutcome::Failed(m)
                    | ChildOutcome::Cancelled(m)
                    | ChildOutcome::Terminated(m)
                    | ChildOutcome::StartFailed(m) => Some(m.clone()),
                },
                ..d()
            },
        ),
        // No lifecycle fact (see `FeedKind` and `is_fact`, which answered already).
        EventKind::WorkflowTaskCompleted { .. }
        | EventKind::MarkerRecorded { .. }
        | EventKind::ExternalSignalSent { .. }
        | EventKind::ChildCancelRequested { .. }
        | EventKind::SearchAttributesUpserted { .. }
        | EventKind::StreamWritten { .. }
        | EventKind::StreamClosed { .. }
        | EventKind::EventSet { .. } => return None,
    })
}

fn error(message: &str) -> FeedDetail {
    FeedDetail {
        error: Some(message.to_string()),
        ..FeedDetail::default()
    }
}

/// Adds the feed rows of events inserted for `run`, the first of them with id `first_id`, each
/// with its time.
pub(crate) async fn record_events<'e, X: Tx>(
    tx: &mut X,
    run: FeedRun<'_>,
    first_id: u64,
    events: impl Iterator<Item = (i64, &'e EventKind)>,
) -> Result<(), StoreError> {
    let rows: Vec<FeedRow<'_>> = events
        .enumerate()
        .filter_map(|(i, (at_ms, kind))| {
            let (kind, detail) = of_event(kind)?;
            Some(run.row(kind, Some(first_id + i as u64), at_ms, &detail))
        })
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    tx.insert_feed(&rows).await
}

/// Adds one row of a fact history does not hold (a pause, an unpause, a retried attempt, a
/// signal wait).
pub(crate) async fn record_fact<X: Tx>(
    tx: &mut X,
    run: FeedRun<'_>,
    kind: FeedKind,
    at_ms: i64,
    detail: &FeedDetail,
) -> Result<(), StoreError> {
    tx.insert_feed(&[run.row(kind, None, at_ms, detail)]).await
}

/// [`Store::read_feed`](crate::store::Store::read_feed): the events after `after` that the
/// filter takes (at most `max`, and at most [`MAX_FEED_PAGE`]), and the cursor to read on
/// from. From [`FeedCursor::now`], no event: the cursor of the feed's end.
pub(crate) async fn read_feed<X: Tx>(
    tx: &mut X,
    filter: FeedFilter,
    after: FeedCursor,
    max: usize,
) -> Result<FeedPage, StoreError> {
    if after.is_now() {
        return Ok(FeedPage {
            events: Vec::new(),
            next: tx.feed_tail().await?,
            held_back: false,
        });
    }
    let max = max.clamp(1, MAX_FEED_PAGE);
    let rows = tx
        .feed_rows(
            after,
            filter.workflow_type.as_deref(),
            filter.workflow_id.as_deref(),
            max,
        )
        .await?;
    let next = rows.last().map_or(after, |e| e.cursor);
    let held_back = rows.len() < max && tx.feed_held_back().await?;
    let events = rows
        .into_iter()
        .filter(|e| filter.wants_kind(e.kind))
        .collect();
    Ok(FeedPage {
        events,
        next,
        held_back,
    })
}
