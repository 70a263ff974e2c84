//! Starting a run. A plain start of a type this engine runs is handed to the workflow worker,
//! which runs the first task at once: the start and that task share one transaction, and the
//! run is held in memory from the start. Other starts (with messages, on another task queue,
//! on a client-only engine) go through the store.

use super::{check_signal, check_size, check_update, Core};
use crate::client::{StartRequest, Started};
use crate::data::limits::Ident;
use crate::data::message::Message;
use crate::data::run_limits::RunLimits;
use crate::error::WfError;
use crate::runtime::worker::Direct;
use crate::store::{NewRun, StartOutcome};
use crate::workflow::Role;

/// Starts a run: checks the request, then hands it to the worker or writes it to the store.
pub(super) async fn start_run(core: &Core, request: StartRequest) -> Result<Started, WfError> {
    let StartRequest {
        workflow_id,
        workflow_type,
        input,
        options,
        messages,
    } = request;
    // The ids and names a start creates are checked before anything else: a run, its
    // messages and their dedupe records are keyed by them.
    Ident::WorkflowId.check(&workflow_id)?;
    Ident::WorkflowType.check(&workflow_type)?;
    if let Some(queue) = &options.task_queue {
        Ident::TaskQueue.check(queue)?;
    }
    if let Some(request_id) = &options.request_id {
        Ident::RequestId.check(request_id)?;
    }
    for key in options.memo.keys() {
        Ident::SearchAttributeKey.check(key)?;
    }
    check_limits(&options)?;
    if !options.memo.is_empty() {
        check_size("the memo", &crate::data::search::encode_memo(&options.memo))?;
    }
    let def = core.catalog.definition(&workflow_type)?;
    check_size("the start input", &input)?;
    def.check_input(&input)?;
    // Signal-with-start: the signal was sent now, on this engine's clock.
    let now = core.now_ms();
    let messages: Vec<Message> = messages.into_iter().map(|m| m.sent_at(now)).collect();
    for m in &messages {
        match m {
            Message::Signal {
                name,
                args,
                signal_id,
                ..
            } => {
                check_signal(name, signal_id.as_deref())?;
                check_size("signal", args)?;
                def.check_message(Role::Signal, name, args)?;
            }
            Message::Update {
                update_id,
                name,
                args,
            } => {
                check_update(name, Some(update_id))?;
                check_size("update", args)?;
                def.check_message(Role::Update, name, args)?;
            }
            other => {
                return Err(WfError::InvalidArgument(format!(
                    "a start carries signals and updates, not {other:?}"
                )))
            }
        }
    }
    let (start_at_ms, debounce) = start_time(&options, now)?;
    let queue = queued_start(&options)?;
    let request = crate::store::RunStart {
        run: NewRun {
            workflow_id: workflow_id.clone(),
            run_id: crate::data::ids::new_id(),
            workflow_type: workflow_type.clone(),
            input,
            random_seed: crate::data::ids::rand_seed(),
            continued_from: None,
            parent: None,
            task_queue: options
                .task_queue
                .unwrap_or_else(|| core.config.task_queue.clone()),
            memo: options.memo,
            limits: RunLimits::for_start(
                options.execution_timeout,
                options.run_timeout,
                options.retry_policy,
                now,
            ),
        },
        policy: options.id_conflict,
        reuse: options.id_reuse,
        request_id: options.request_id,
        messages,
        now_ms: now,
        start_at_ms,
        debounce,
        queue,
    };
    let request_queued = request.queue.as_ref().map(|q| q.queue.clone());
    let outcome = if hands_over(core, &request) {
        start_eagerly(core, request).await?
    } else {
        start_in_store(core, request).await?
    };
    core.wake.waiters.publish(&outcome.workflow_id);
    if outcome.started {
        core.wake.feed_changed();
    }
    if let Some(queue) = request_queued {
        // Admitted at once if its queue has room, whether or not this engine runs workers;
        // else the dispatchers look again every 50 ms while it waits.
        let started = outcome.started.then_some(outcome.run_id.as_str());
        if crate::runtime::queues::admit_start(core, &queue, started)
            .await
            .is_some_and(|held| held > 0)
        {
            core.wake.queues.notify_one();
        }
    }
    Ok(Started {
        workflow_id: outcome.workflow_id,
        run_id: outcome.run_id,
        started: outcome.started,
    })
}

/// Hands the start to the workflow worker (which records it with the run's first task);
/// through the store if the worker is gone.
async fn start_eagerly(
    core: &Core,
    request: crate::store::RunStart,
) -> Result<StartOutcome, WfError> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let request = Box::new(request);
    match core.worker.hand_over(Direct::Start { request, reply }) {
        Ok(()) => answer.await.map_err(|_| {
            WfError::Interrupted(
                "the engine stopped before confirming the start; look the workflow id up \
                 to know whether it started"
                    .into(),
            )
        })?,
        // The worker is gone (the engine is shutting down): the store alone starts it.
        Err(direct) => match *direct {
            Direct::Start { request, .. } => start_in_store(core, *request).await,
            _ => Err(WfError::Shutdown),
        },
    }
}

/// Starts a run through the store; its first task runs from the ready queue.
async fn start_in_store(
    core: &Core,
    request: crate::store::RunStart,
) -> Result<StartOutcome, WfError> {
    let workflow_id = request.run.workflow_id.clone();
    // Its signals may go to the inbox of a running run cached here: queries must look.
    let carries_signals = request
        .messages
        .iter()
        .any(|m| matches!(m, Message::Signal { .. }));
    let delivery = (carries_signals && core.config.run_workers)
        .then(|| core.worker.marks.deliver(&workflow_id));
    let outcome = core.store.start_run(request).await;
    drop(delivery);
    let outcome = outcome?;
    if outcome.started {
        core.worker.forget(&workflow_id);
    }
    core.wake.workflow.notify_one();
    Ok(outcome)
}

/// Whether the worker takes the start in memory and runs its first task in the same
/// transaction: a plain start (signals and updates sent with a start go through the store,
/// which dedupes their ids; a delayed start has no first task to run now) on this engine's
/// task queue, on an engine that runs workers.
fn hands_over(core: &Core, request: &crate::store::RunStart) -> bool {
    request.messages.is_empty()
        && request.queue.is_none()
        && request.start_at_ms.is_none()
        && core.config.run_workers
        && request.run.task_queue == core.config.task_queue
}

/// When a start's run is due (`None`: at once), from its start delay or its debounce window
/// (whichever is later), and its debounce for the store.
fn start_time(
    options: &crate::client::StartOptions,
    now: i64,
) -> Result<(Option<i64>, Option<crate::store::StartDebounce>), WfError> {
    use crate::data::activity::duration_ms;
    let delay = options.start_delay.map_or(0, duration_ms);
    let Some(d) = &options.debounce else {
        return Ok(((delay > 0).then(|| now.saturating_add(delay)), None));
    };
    Ident::DebounceKey.check(&d.key)?;
    if d.window.is_zero() {
        return Err(WfError::InvalidArgument(
            "the debounce window is zero, which would collapse nothing; give it the time              within which starts make one run"
                .into(),
        ));
    }
    let window_ms = duration_ms(d.window);
    let max_wait_ms = d.max_wait.map(duration_ms);
    let wait = max_wait_ms
        .map_or(window_ms, |m| m.min(window_ms))
        .max(delay);
    let debounce = crate::store::StartDebounce {
        key: d.key.clone(),
        window_ms,
        max_wait_ms,
    };
    Ok((Some(now.saturating_add(wait)), Some(debounce)))
}

/// A zero timeout would close the run before its first task: refused, with what to do.
fn check_limits(options: &crate::client::StartOptions) -> Result<(), WfError> {
    let zero = |name: &str| {
        WfError::InvalidArgument(format!(
            "the {name} is zero, which would time the run out at once; leave it unset for no \
             limit"
        ))
    };
    if options.execution_timeout.is_some_and(|d| d.is_zero()) {
        return Err(zero("execution timeout"));
    }
    if options.run_timeout.is_some_and(|d| d.is_zero()) {
        return Err(zero("run timeout"));
    }
    Ok(())
}

/// The queue a start goes on, checked: a priority, deduplication id or fairness key or weight
/// needs a queue, a fairness weight is a finite number above 0, and a debounced start cannot
/// go on one (which run would the queue hold?).
fn queued_start(
    options: &crate::client::StartOptions,
) -> Result<Option<crate::data::queue::QueuedStart>, WfError> {
    use crate::data::limits::Ident;
    let Some(queue) = &options.queue else {
        if options.dedupe_id.is_some() || options.queue_priority != 0 {
            return Err(WfError::InvalidArgument(
                "a queue priority or deduplication id needs a queue: set StartOptions::queue"
                    .into(),
            ));
        }
        if options.fairness_key.is_some() || options.fairness_weight.is_some() {
            return Err(WfError::InvalidArgument(
                "a fairness key or weight orders the runs held on a queue and needs one: set \
                 StartOptions::queue (an activity's is set on the call, ctx.activity(..))"
                    .into(),
            ));
        }
        return Ok(None);
    };
    let invalid = |e: crate::data::limits::LimitError| WfError::InvalidArgument(e.to_string());
    Ident::TaskQueue.check(queue).map_err(invalid)?;
    if let Some(id) = &options.dedupe_id {
        Ident::RequestId.check(id).map_err(invalid)?;
    }
    if let Some(key) = &options.fairness_key {
        Ident::RequestId.check(key).map_err(invalid)?;
    }
    if let Some(w) = options
        .fairness_weight
        .filter(|w| !(w.is_finite() && *w > 0.0))
    {
        return Err(WfError::InvalidArgument(format!(
            "fairness weight {w} on queue {queue:?} is not a finite number above 0 (1.0 by \
             default; a weight of 0 would never be admitted)"
        )));
    }
    if options.debounce.is_some() {
        return Err(WfError::InvalidArgument(
            "a start cannot both debounce and go on a queue; choose one".into(),
        ));
    }
    Ok(Some(crate::data::queue::QueuedStart {
        queue: queue.clone(),
        priority: options.queue_priority,
        dedupe_id: options.dedupe_id.clone(),
        fairness_key: options.fairness_key.clone(),
        fairness_weight: options.fairness_weight,
    }))
}
