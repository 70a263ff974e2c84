//! Run limits: a run's execution and run timeouts, and the retries of its retry policy.
//!
//! A run whose start set a timeout gets one durable timer with the reserved sequence number
//! [`LIMIT_TIMER_SEQ`], due at the earlier of its chain's execution deadline and the end of its
//! run timeout. Firing it (in the store's timer rule, one transaction that deletes the timer,
//! so once across engines and processes) closes the run as timed out — `WorkflowTimedOut`,
//! status `TimedOut`, no workflow code — with the fallout of a termination for its children,
//! and under a run timeout starts the retry the policy allows. A run that fails is retried by
//! the commit that fails it ([`retry_failed`]). A retry is a new run of the chain with the same
//! input and the attempt counted, whose first workflow task is ready after the policy's
//! backoff (the run's ready time is durable: a crash during the backoff loses nothing).

use super::encode_failed;
use super::start::create_run;
use super::terminate::{apply_fallout, clear_closed_run, terminate_run, Fallout};
use super::tx::{RunChange, RunClosing, Tx};
use crate::data::codec::{decode_event, encode_event};
use crate::data::history::EventKind;
use crate::data::ids::{new_id, rand_seed};
use crate::data::payload::Payload;
use crate::data::run::{ChildOutcome, ParentInfo, RunStatus};
use crate::data::run_limits::{NextAttempt, RunLimits, RunTimeout};
use crate::error::StoreError;
use crate::store::records::{NewRun, RunRecord};

/// The sequence number of a run's limit timer; workflow commands never reach it.
pub(crate) const LIMIT_TIMER_SEQ: u32 = u32::MAX;

/// What a run's `WorkflowStarted` event says that the limits need.
pub(crate) struct Started {
    /// The run's input, for a retry.
    pub input: Payload,
    /// Its parent, if it is a child.
    pub parent: Option<ParentInfo>,
    /// Its limits, if its start set any.
    pub limits: Option<RunLimits>,
}

/// Reads a run's `WorkflowStarted` event.
pub(crate) async fn started<X: Tx>(tx: &mut X, run_id: &str) -> Result<Started, StoreError> {
    let corrupt = |why: String| StoreError::corrupt(format!("run {run_id}: {why}"));
    let data = tx
        .event_row(run_id, 1)
        .await?
        .ok_or_else(|| corrupt("its first event is missing".into()))?;
    let first = decode_event(1, &data).map_err(|e| corrupt(e.to_string()))?;
    match first.kind {
        EventKind::WorkflowStarted {
            input,
            parent,
            limits,
            ..
        } => Ok(Started {
            input,
            parent,
            limits,
        }),
        other => Err(corrupt(format!(
            "its history starts with {} instead of WorkflowStarted",
            other.name()
        ))),
    }
}

/// Arms the limit timer of a run just created at `created_ms`, if its limits have a deadline.
pub(crate) async fn arm<X: Tx>(
    tx: &mut X,
    run_id: &str,
    limits: Option<&RunLimits>,
    created_ms: i64,
) -> Result<(), StoreError> {
    match limits.and_then(|l| l.deadline_ms(created_ms)) {
        Some(at) => tx.insert_timer(run_id, LIMIT_TIMER_SEQ, at).await,
        None => Ok(()),
    }
}

/// The limit timer of `run_id` fired at `now_ms`: a running run past a limit closes as timed
/// out (and a run timeout is retried if the policy allows); a closed run is left alone.
pub(crate) async fn time_out<X: Tx>(
    tx: &mut X,
    run_id: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let Some(row) = tx.load_run(run_id).await? else {
        return Ok(());
    };
    let run = row.record;
    if run.status != RunStatus::Running {
        return Ok(());
    }
    let first = started(tx, run_id).await?;
    let Some(limits) = first.limits.clone() else {
        return Ok(());
    };
    let Some(which) = limits.passed(run.created_ms, now_ms) else {
        // Not yet (a timer moved by hand): wait for the deadline again.
        return arm(tx, run_id, Some(&limits), run.created_ms).await;
    };
    let next = match which {
        RunTimeout::Run => limits.next_attempt("run_timeout", now_ms),
        RunTimeout::Execution => None,
    };
    let new_run_id = next.as_ref().map(|_| new_id());
    let message = format!("the workflow's {} passed", limits.describe(which));
    let kind = EventKind::WorkflowTimedOut {
        timeout: which,
        new_run_id: new_run_id.clone(),
    };
    let data = encode_event(now_ms, &kind).map_err(encode_failed)?;
    tx.insert_events(run_id, run.next_event_id, &data).await?;
    let feed = super::feed::FeedRun::of(&run);
    let event = std::iter::once((now_ms, &kind));
    super::feed::record_events(tx, feed, run.next_event_id, event).await?;
    tx.update_run(&RunChange {
        run_id,
        next_event_id: run.next_event_id + 1,
        added_bytes: data.len() as u64,
        summary: None,
        ready_at: None,
        close: Some(RunClosing {
            status: RunStatus::TimedOut,
            closed_ms: now_ms,
            result: None,
            failure: Some(&message),
        }),
        versioning: None,
    })
    .await?;
    clear_closed_run(tx, run_id).await?;
    // A retried run's parent waits on for the retry; otherwise it learns of the timeout.
    let parent = match (&next, first.parent.clone()) {
        (None, Some(p)) => Some((p, ChildOutcome::Failed(message.clone()))),
        _ => None,
    };
    let why = format!("its parent run {run_id} timed out");
    let fallout = Fallout::of(&run, parent, &why);
    for (child, why) in apply_fallout(tx, &run, fallout, now_ms).await? {
        terminate_run(tx, &child, &why, now_ms).await?;
    }
    if let (Some(next), Some(new_run_id)) = (next, new_run_id) {
        start_retry(tx, &run, first, next, new_run_id, now_ms).await?;
    }
    Ok(())
}

/// A commit failed run `run` with an error of type `error_type`: if its retry policy allows,
/// starts the next attempt and returns its run id (the caller then keeps the failure from the
/// parent, which waits on for the retry).
pub(crate) async fn retry_failed<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    error_type: &str,
    now_ms: i64,
) -> Result<Option<String>, StoreError> {
    let first = started(tx, &run.run_id).await?;
    let Some(next) = first
        .limits
        .as_ref()
        .and_then(|l| l.next_attempt(error_type, now_ms))
    else {
        return Ok(None);
    };
    let new_run_id = new_id();
    start_retry(tx, run, first, next, new_run_id.clone(), now_ms).await?;
    Ok(Some(new_run_id))
}

/// Creates the retry of the closed `run`: same workflow id, type, input, parent, task queue and
/// chain, its search attributes and memo carried over, ready after the backoff.
async fn start_retry<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    first: Started,
    next: NextAttempt,
    new_run_id: String,
    now_ms: i64,
) -> Result<(), StoreError> {
    let new = NewRun {
        workflow_id: run.workflow_id.clone(),
        run_id: new_run_id,
        workflow_type: run.workflow_type.clone(),
        input: first.input,
        random_seed: rand_seed(),
        continued_from: Some(run.run_id.clone()),
        parent: first.parent,
        task_queue: run.task_queue.clone(),
        memo: Default::default(),
        limits: Some(next.limits),
    };
    let created = create_run(tx, &new, &run.chain_id, now_ms).await?;
    super::search::carry_over(tx, &run.run_id, &new.run_id, false).await?;
    super::queues::carry_over(tx, &run.run_id, &new.run_id).await?;
    tx.update_run(&RunChange {
        run_id: &created.run_id,
        next_event_id: created.next_event_id,
        added_bytes: 0,
        summary: None,
        ready_at: Some(next.ready_at_ms),
        close: None,
        versioning: None,
    })
    .await
}
