//! Local activities, the worker's side: once a workflow task's code blocks, the worker runs
//! the local activities it called, in this process, hands their outcomes back to the run as
//! inputs of the same task (its code then goes on, and may call more), and commits everything
//! together: each outcome is one `LocalActivityCompleted` event, after a
//! `WorkflowTaskCompleted` that closes the part of the task that called it (so replay feeds
//! the recorded outcome to the code at the same point, and never runs the activity).
//!
//! Retries follow the call's retry policy with backoff here, as long as the task stays within
//! its window (half the workflow task lease, so a leased task commits before its lease runs
//! out); a longer wait is recorded as a `Backoff` outcome, and the workflow waits on a durable
//! timer before the next attempt. Nothing is recorded before the commit: a worker that dies
//! first leaves the task to the next worker, which runs the activities again (at least once).

use super::Worker;
use crate::activity::{ActivityContext, ActivityInfo};
use crate::data::activity::{duration_ms, ActivityFailure, LocalOutcome, TimeoutKind};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::metrics::AttemptFailure;
use crate::replay::{panic_message, Instance, TaskError, TaskMeta, TaskOutput};
use crate::runtime::core::Core;
use crate::store::RunRecord;
use crate::workflow::LocalRequest;
use std::sync::Arc;
use std::time::Instant;
use tokio::task::JoinHandle;
use tracing::Instrument;

/// Why a task's local activities did not all settle.
pub(super) enum LocalStop {
    /// The run's code failed when their outcomes were handed to it.
    Task(TaskError),
    /// The engine is stopping: the task ends without its commit, and the next worker runs the
    /// activities again.
    Shutdown,
}

/// Runs the local activities `output` asks for, hands their outcomes to `instance`, and
/// repeats until the code asks for none (or the run closed); `output` then holds the
/// events of the whole task. `started_ms`: when the task began (its window starts there).
pub(super) async fn settle(
    w: &Worker,
    run: &RunRecord,
    instance: &mut dyn Instance,
    output: &mut TaskOutput,
    started_ms: i64,
) -> Result<(), LocalStop> {
    let core = &w.core;
    let deadline = started_ms.saturating_add(window_ms(core));
    loop {
        let requests = std::mem::take(&mut output.local_activities);
        if requests.is_empty() || output.close.is_some() {
            return Ok(());
        }
        let messages = run_all(core, run, requests, deadline)
            .await
            .ok_or(LocalStop::Shutdown)?;
        let meta = TaskMeta::live(
            core.now_ms(),
            run.next_event_id,
            run.history_bytes,
            core.config.build_id.clone(),
        );
        let next = instance
            .run_task(messages, meta, None)
            .map_err(LocalStop::Task)?;
        output.events.extend(next.events);
        output.update_states.extend(next.update_states);
        output.close = next.close;
        output.summary = next.summary;
        output.local_activities = next.local_activities;
    }
}

/// How long a workflow task may spend on local activities, retries and backoff included:
/// half the workflow task lease.
fn window_ms(core: &Core) -> i64 {
    core.config.lease_ms() / 2
}

/// Aborts its task when dropped (the worker gave up waiting for it).
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `requests` at once on the activity runtime; their outcomes in request order, or
/// `None` when the engine stops first.
async fn run_all(
    core: &Arc<Core>,
    run: &RunRecord,
    requests: Vec<LocalRequest>,
    deadline: i64,
) -> Option<Vec<Message>> {
    let mut shutdown = core.wake.shutdown.subscribe();
    if core.is_shutdown() {
        return None;
    }
    let handles: Vec<_> =
        requests
            .into_iter()
            .map(|request| {
                let span = tracing::info_span!(
                    "local_activity",
                    workflow_id = %run.workflow_id,
                    run_id = %run.run_id,
                    activity = %request.name,
                    seq = request.seq,
                );
                let (core, workflow_id, run_id) =
                    (core.clone(), run.workflow_id.clone(), run.run_id.clone());
                AbortOnDrop(core.activities.runtime.clone().spawn(
                async move { run_local(&core, workflow_id, run_id, request, deadline).await }
                    .instrument(span),
            ))
            })
            .collect();
    let mut out = Vec::with_capacity(handles.len());
    for mut handle in handles {
        tokio::select! {
            r = &mut handle.0 => out.push(r.ok()?),
            _ = shutdown.changed() => return None,
        }
    }
    Some(out)
}

/// Runs one local activity, attempts and in-task backoff included, to its outcome.
async fn run_local(
    core: &Arc<Core>,
    workflow_id: String,
    run_id: String,
    request: LocalRequest,
    deadline: i64,
) -> Message {
    let policy = &request.options.retry;
    let mut attempt = request.attempt.max(1);
    let outcome = loop {
        let info = ActivityInfo {
            workflow_id: workflow_id.clone(),
            run_id: run_id.clone(),
            seq: request.seq,
            name: request.name.clone(),
            attempt,
        };
        let (failure, timeout) = match attempt_once(core, info, &request).await {
            Ok(result) => break LocalOutcome::Completed(result),
            Err(e) => e,
        };
        let next = attempt.saturating_add(1);
        if !policy.allows_retry(next, &failure) {
            break match timeout {
                Some(kind) => LocalOutcome::TimedOut(kind),
                None => LocalOutcome::Failed(failure),
            };
        }
        core.metrics.of_activity(&request.name).retries.inc();
        let delay = duration_ms(policy.delay_before(next));
        let now = core.now_ms();
        if now.saturating_add(delay) > deadline {
            break LocalOutcome::Backoff {
                failure,
                delay_ms: u64::try_from(delay).unwrap_or(u64::MAX),
            };
        }
        core.clock.sleep_until(now.saturating_add(delay)).await;
        attempt = next;
    };
    Message::LocalActivityResolved {
        seq: request.seq,
        name: request.name,
        outcome,
        attempts: attempt,
    }
}

/// One attempt, bounded by its start-to-close timeout (default: the task's window).
async fn attempt_once(
    core: &Arc<Core>,
    info: ActivityInfo,
    request: &LocalRequest,
) -> Result<Payload, (ActivityFailure, Option<TimeoutKind>)> {
    let fail = |kind: &str, message: String, non_retryable| ActivityFailure {
        kind: kind.into(),
        message,
        non_retryable,
    };
    let metrics = core.metrics.of_activity(&request.name);
    let Some(invoker) = core.catalog.activities.get(&request.name).cloned() else {
        metrics.failed(AttemptFailure::Error);
        let message = format!(
            "no activity named {:?} is registered with this engine (a local activity runs in \
             the engine that runs its workflow: register it there)",
            request.name
        );
        return Err((fail("unknown_activity", message, true), None));
    };
    metrics.attempts.inc();
    let started = Instant::now();
    let limit = request
        .options
        .start_to_close
        .map(duration_ms)
        .unwrap_or_else(|| window_ms(core));
    let deadline = core.now_ms().saturating_add(limit);
    let mut handle = AbortOnDrop(tokio::spawn(invoker(
        ActivityContext::local(info),
        request.input.clone(),
    )));
    let end = tokio::select! {
        r = &mut handle.0 => match r {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) if e.is_will_complete_async() => Err((fail(
                "will_complete_async",
                "a local activity cannot complete asynchronously: run it as a regular activity".into(),
                true,
            ), None)),
            Ok(Err(e)) => Err((fail(&e.kind, e.message, e.non_retryable), None)),
            Err(e) if e.is_panic() => {
                Err((fail("panic", panic_message(&*e.into_panic()), false), None))
            }
            Err(e) => Err((fail("aborted", e.to_string(), false), None)),
        },
        _ = core.clock.sleep_until(deadline) => Err((
            fail("timeout", "start-to-close timeout".into(), false),
            Some(TimeoutKind::StartToClose),
        )),
    };
    metrics.attempt_seconds.observe_duration(started.elapsed());
    match &end {
        Ok(_) => {}
        Err((_, Some(_))) => metrics.failed(AttemptFailure::Timeout),
        Err((f, None)) if f.kind == "panic" => metrics.failed(AttemptFailure::Panic),
        Err(_) => metrics.failed(AttemptFailure::Error),
    }
    end
}
