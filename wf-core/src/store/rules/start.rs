//! Starting a run: the start's request id (a retry returns what the first attempt did), the
//! id-conflict policy for a running run (`Fail`, `UseExisting`, `TerminateExisting`), the
//! id-reuse policy for a closed one (`AllowDuplicate`, `AllowDuplicateFailedOnly`,
//! `RejectDuplicate`), the run's row and first event, its start messages, and the first workflow task committed in the
//! same transaction.

use super::commit::commit;
use super::deliver::deliver_to;
use super::encode_failed;
use super::terminate::terminate_run;
use super::tx::{RunChange, Tx};
use crate::data::codec::encode_event;
use crate::data::message::Message;
use crate::data::run::{IdConflictPolicy, RunStatus};
use crate::error::StoreError;
use crate::store::records::{
    DeliverOutcome, NewRun, RunRecord, RunStart, StartOutcome, StartWithTask, TaskCommit,
};

/// [`Store::start_run`](crate::store::Store::start_run).
pub(crate) async fn start_run<X: Tx>(
    tx: &mut X,
    req: RunStart,
) -> Result<StartOutcome, StoreError> {
    start(tx, req, None).await.map(|(outcome, _)| outcome)
}

/// The `next_event_id` of a run just created (its `WorkflowStarted` is event 1).
const CREATED_NEXT_EVENT_ID: u64 = 2;

/// [`Store::start_run_with_task`](crate::store::Store::start_run_with_task): the start, then
/// the first task in a nested savepoint, so that a failed task leaves the start standing.
pub(crate) async fn start_run_with_task<X: Tx>(
    tx: &mut X,
    req: RunStart,
    first: TaskCommit,
) -> Result<StartWithTask, StoreError> {
    // A first task of the new run (lease-free, at event 2, no start messages in its inbox)
    // that records nothing needs none of the general commit's checks: all it does is clear the
    // ready mark and set the summary (the hot path of a start whose workflow waits at once),
    // which the run's row is inserted with. Not for an engine with a build id: the run may be
    // routed to another build (its queue's current one), which the general commit checks on
    // the row.
    let trivial = first.records_nothing()
        && first.build.is_none()
        && first.without_lease
        && first.run_id == req.run.run_id
        && first.expected_next_event_id == CREATED_NEXT_EVENT_ID
        && req.messages.is_empty();
    let settled = trivial.then(|| RunChange {
        run_id: &first.run_id,
        next_event_id: CREATED_NEXT_EVENT_ID,
        added_bytes: 0,
        summary: Some(&first.summary),
        ready_at: None,
        close: None,
        versioning: Some(super::builds::task_versioning(&first.build)),
    });
    let (outcome, created) = start(tx, req, settled.as_ref()).await?;
    let Some(mut created) = created else {
        return Ok(StartWithTask {
            start: outcome,
            first_task: None,
        });
    };
    if trivial {
        // Its code waits for a signal at once, maybe: the feed says so.
        if let Some(waiting) = &first.signal_waiting {
            let feed = super::feed::FeedRun::of(&created);
            let kind = crate::data::feed::FeedKind::SignalWaiting;
            super::feed::record_fact(tx, feed, kind, first.now_ms, waiting).await?;
        }
        created.summary = first.summary;
        return Ok(StartWithTask {
            start: outcome,
            first_task: Some(Ok(created)),
        });
    }
    tx.savepoint().await?;
    let first = commit(tx, first).await.map(|(done, _spent)| done.run);
    if first.is_err() {
        tx.rollback_to_savepoint().await?;
    }
    tx.release_savepoint().await?;
    Ok(StartWithTask {
        start: outcome,
        first_task: Some(first),
    })
}

/// Starts a run: a start whose request id is recorded returns the run it addressed and writes
/// nothing; then the id-conflict policy decides about a running run, the id-reuse policy about
/// a closed one. Also returns the created run's record. A created run's row is inserted with
/// `first` applied (its first task's change, when that task is trivial).
async fn start<X: Tx>(
    tx: &mut X,
    req: RunStart,
    first: Option<&RunChange<'_>>,
) -> Result<(StartOutcome, Option<RunRecord>), StoreError> {
    let RunStart {
        run,
        policy,
        reuse,
        request_id,
        messages,
        now_ms,
        start_at_ms,
        debounce,
        queue,
    } = req;
    if let Some(request_id) = &request_id {
        if let Some(run_id) = tx.start_request(&run.workflow_id, request_id).await? {
            let outcome = repeat(tx, &run.workflow_id, run_id, messages, now_ms).await?;
            return Ok((outcome, None));
        }
    }
    if let Some(d) = &debounce {
        if let Some(mut waiting) =
            super::debounce::waiting_run(tx, &run.workflow_type, &d.key).await?
        {
            super::debounce::push(tx, &mut waiting, &run.input, d, now_ms).await?;
            remember(tx, request_id.as_deref(), &waiting).await?;
            let outcome = deliver_all(tx, &waiting, messages, now_ms, false).await?;
            return Ok((outcome, None));
        }
    }
    if let Some(latest) = tx.latest_run(&run.workflow_id).await? {
        let latest = latest.record;
        if latest.status == RunStatus::Running {
            match policy {
                IdConflictPolicy::Fail => {
                    return Err(StoreError::AlreadyStarted {
                        workflow_id: run.workflow_id,
                        run_id: latest.run_id,
                    })
                }
                IdConflictPolicy::UseExisting => {
                    let outcome = deliver_all(tx, &latest, messages, now_ms, false).await?;
                    remember(tx, request_id.as_deref(), &latest).await?;
                    return Ok((outcome, None));
                }
                IdConflictPolicy::TerminateExisting => {
                    terminate_run(tx, &latest, "terminated by a new start", now_ms).await?;
                }
            }
        } else if !reuse.allows_after(latest.status) {
            return Err(StoreError::DuplicateRejected {
                workflow_id: run.workflow_id,
                run_id: latest.run_id,
                status: latest.status,
                policy: reuse.as_str(),
            });
        }
    }
    let mut created = create_run_settled(tx, &run, &run.run_id, now_ms, first).await?;
    if let Some(at) = start_at_ms.filter(|&at| at > now_ms) {
        // As a retry waits out its backoff: the row is ready at the start time; deliveries
        // and leases respect it (see `deliver::ready_at`).
        tx.delay_start(&created.run_id, at).await?;
        created.start_at_ms = Some(at);
    }
    if let Some(d) = &debounce {
        tx.set_debounce_key(&created.run_id, &d.key).await?;
    }
    if let Some(q) = &queue {
        super::queues::hold(tx, &mut created, q).await?;
    }
    remember(tx, request_id.as_deref(), &created).await?;
    let outcome = deliver_all(tx, &created, messages, now_ms, true).await?;
    Ok((outcome, Some(created)))
}

/// Records that the start with `request_id` addressed `run`.
async fn remember<X: Tx>(
    tx: &mut X,
    request_id: Option<&str>,
    run: &RunRecord,
) -> Result<(), StoreError> {
    match request_id {
        Some(id) => {
            tx.insert_start_request(&run.workflow_id, id, &run.run_id, &run.chain_id)
                .await
        }
        None => Ok(()),
    }
}

/// A start retried with a recorded request id: the run its first attempt addressed, running or
/// closed, and nothing written. Its signals were delivered by the first attempt; its updates
/// are answered by their update ids.
async fn repeat<X: Tx>(
    tx: &mut X,
    workflow_id: &str,
    run_id: String,
    messages: Vec<Message>,
    now_ms: i64,
) -> Result<StartOutcome, StoreError> {
    let mut outcomes = Vec::with_capacity(messages.len());
    for m in messages {
        let outcome = match m {
            Message::Update { .. } => {
                let run = tx
                    .load_run(&run_id)
                    .await?
                    .ok_or_else(|| StoreError::NotFound {
                        workflow_id: workflow_id.to_string(),
                        run_id: Some(run_id.clone()),
                    })?;
                deliver_to(tx, &run.record, m, now_ms).await?
            }
            _ => DeliverOutcome::DuplicateSignal {
                run_id: run_id.clone(),
            },
        };
        outcomes.push(outcome);
    }
    Ok(StartOutcome {
        workflow_id: workflow_id.to_string(),
        run_id,
        started: false,
        messages: outcomes,
    })
}

/// Delivers a start's messages to the run it addresses, in order.
async fn deliver_all<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    messages: Vec<Message>,
    now_ms: i64,
    started: bool,
) -> Result<StartOutcome, StoreError> {
    let mut outcomes = Vec::with_capacity(messages.len());
    for m in messages {
        outcomes.push(deliver_to(tx, run, m, now_ms).await?);
    }
    Ok(StartOutcome {
        workflow_id: run.workflow_id.clone(),
        run_id: run.run_id.clone(),
        started,
        messages: outcomes,
    })
}

/// Creates a run of chain `chain_id` with its `WorkflowStarted` event, ready at `now_ms`, and
/// the timer of its limits; returns its record.
pub(crate) async fn create_run<X: Tx>(
    tx: &mut X,
    new: &NewRun,
    chain_id: &str,
    now_ms: i64,
) -> Result<RunRecord, StoreError> {
    create_run_settled(tx, new, chain_id, now_ms, None).await
}

/// [`create_run`], its row inserted with `first` applied (see [`Tx::insert_new_run`]).
async fn create_run_settled<X: Tx>(
    tx: &mut X,
    new: &NewRun,
    chain_id: &str,
    now_ms: i64,
    first: Option<&RunChange<'_>>,
) -> Result<RunRecord, StoreError> {
    let started = new.started_event();
    let data = encode_event(now_ms, &started).map_err(encode_failed)?;
    let record = new.created_record(chain_id, data.len() as u64, now_ms);
    debug_assert_eq!(record.next_event_id, CREATED_NEXT_EVENT_ID);
    tx.insert_new_run(&record, &data, first).await?;
    let feed = super::feed::FeedRun::of(&record);
    super::feed::record_events(tx, feed, 1, std::iter::once((now_ms, &started))).await?;
    super::search::record_memo(tx, &new.run_id, &new.memo).await?;
    super::run_limits::arm(tx, &new.run_id, new.limits.as_ref(), now_ms).await?;
    Ok(record)
}
