//! Queries: never written to history, and they see every signal acknowledged before them
//! (read your writes). A running run held in this engine's cache answers from memory, with no
//! store read unless a signal may wait in its inbox: this engine put one there (see
//! `worker/marks.rs`) or other engines share the store. Otherwise the run is rebuilt from its
//! history on a blocking thread, and the signals waiting in its inbox are applied to that copy
//! in a step that is never committed, as the run's next task would apply them.

use super::route::hot_run;
use super::{check_size, latest, Core};
use crate::data::blocked::BlockedPart;
use crate::data::limits::Ident;
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::error::WfError;
use crate::replay::{replay, replay_to, ErasedDefinition, TaskMeta};
use crate::runtime::spin::answer_soon;
use crate::runtime::worker::QueryRequest;
use crate::workflow::blocked::BLOCKED_QUERY;
use crate::workflow::Role;
use std::sync::Arc;
use std::time::Duration;

/// How long a query on a run cached here waits for this engine's worker to apply the signals
/// this engine put in the run's inbox, before it rebuilds the run instead.
const TASK_WAIT: Duration = Duration::from_millis(20);

/// What this engine's cache can say about a query.
enum Cached {
    /// Its answer.
    Answer(Result<Payload, WfError>),
    /// Signals wait in the run's inbox: the cache has not seen them. `ours`: this engine
    /// put some there (its worker was woken to apply them).
    Behind { ours: bool },
    /// The run is not in the cache.
    Absent,
}

/// Answers a query: from the cache when it can, else from a rebuilt copy of the run.
pub(super) async fn ask(
    core: &Core,
    workflow_id: &str,
    name: &str,
    args: Payload,
) -> Result<Payload, WfError> {
    Ident::QueryName.check(name)?;
    if let Some((run_id, def)) = hot_run(core, workflow_id) {
        check_query(&def, name, &args)?;
        if let Some(answer) = answer_cached(core, &def, workflow_id, &run_id, name, &args).await {
            return answer;
        }
    }
    let run = latest(core, workflow_id).await?;
    let def = core.catalog.definition(&run.workflow_type)?.clone();
    check_query(&def, name, &args)?;
    if core.config.run_workers {
        if let Some(answer) = answer_cached(core, &def, workflow_id, &run.run_id, name, &args).await
        {
            return answer;
        }
    }
    rebuild(core, def, run.workflow_id, run.run_id, name, args).await
}

/// Checks a query's arguments against the type's handler table (describe's own question,
/// [`BLOCKED_QUERY`], has no handler).
fn check_query(def: &Arc<dyn ErasedDefinition>, name: &str, args: &Payload) -> Result<(), WfError> {
    check_size("query", args)?;
    if name == BLOCKED_QUERY {
        return Ok(());
    }
    def.check_message(Role::Query, name, args)
}

/// What each part of the latest run of `workflow_id` is blocked on, read from its cached
/// copy, else from a copy rebuilt by replay (as a query is answered).
pub(super) async fn blocked_on(
    core: &Core,
    workflow_id: &str,
) -> Result<Vec<BlockedPart>, WfError> {
    let answer = ask(core, workflow_id, BLOCKED_QUERY, Payload::encode(&())?).await?;
    Ok(answer.decode()?)
}

/// The answer for a run this engine may hold in its cache (waiting for its worker, or
/// rebuilding it, if signals wait in its inbox); `None` if the cache does not hold it.
async fn answer_cached(
    core: &Core,
    def: &Arc<dyn ErasedDefinition>,
    workflow_id: &str,
    run_id: &str,
    name: &str,
    args: &Payload,
) -> Option<Result<Payload, WfError>> {
    match ask_cache(core, workflow_id, run_id, name, args).await {
        Cached::Answer(answer) => Some(answer),
        Cached::Behind { ours } => Some(
            behind(
                core,
                def.clone(),
                workflow_id,
                run_id,
                ours,
                name,
                args.clone(),
            )
            .await,
        ),
        Cached::Absent => None,
    }
}

/// Answers a query on a run cached here whose inbox holds signals the cache has not seen.
/// If this engine put them there, its worker was woken to apply them, and its commit takes
/// well under a millisecond where a rebuild replays the whole history: wait for it (a
/// little, as a query must not hang on a stuck task), then answer from the cache. Else,
/// or if the worker does not get there, rebuild.
async fn behind(
    core: &Core,
    def: Arc<dyn ErasedDefinition>,
    workflow_id: &str,
    run_id: &str,
    ours: bool,
    name: &str,
    args: Payload,
) -> Result<Payload, WfError> {
    let deadline = tokio::time::Instant::now() + TASK_WAIT;
    if ours {
        loop {
            let notify = core.wake.progress.subscribe(workflow_id);
            let committed = notify.notified();
            tokio::pin!(committed);
            committed.as_mut().enable();
            match ask_cache(core, workflow_id, run_id, name, &args).await {
                Cached::Answer(answer) => return answer,
                Cached::Behind { .. } => {}
                Cached::Absent => break,
            }
            if tokio::time::timeout_at(deadline, committed).await.is_err() {
                break;
            }
        }
    }
    rebuild(
        core,
        def,
        workflow_id.to_string(),
        run_id.to_string(),
        name,
        args,
    )
    .await
}

/// The answer of this engine's cache, unless signals wait in the run's inbox. The inbox
/// is read only when one may: this engine put a signal there, or other engines share the
/// store (a signal they acknowledged must be seen here too).
async fn ask_cache(
    core: &Core,
    workflow_id: &str,
    run_id: &str,
    name: &str,
    args: &Payload,
) -> Cached {
    let marks = &core.worker.marks;
    let check = marks.check(workflow_id);
    let marked = check.marked;
    let mut at = None;
    if marked.is_some() || core.liveness.others_live() {
        match core.store.pending_messages(run_id, None).await {
            Ok(pending) if pending.inbox.iter().any(|m| is_signal(&m.message)) => {
                return Cached::Behind {
                    ours: marked.is_some(),
                }
            }
            Ok(pending) => {
                if let Some(seen) = marked {
                    marks.clear_if_settled(workflow_id, seen);
                }
                // Another engine may have run the run since this one cached it.
                at = pending.next_event_id;
            }
            Err(e) => return Cached::Answer(Err(e.into())),
        }
    }
    match ask_worker(core, run_id, name, args, at, check.entries).await {
        Some(answer) => Cached::Answer(answer),
        None => Cached::Absent,
    }
}

/// The worker's answer from its cache; `None` if it does not hold the run (at history
/// position `at`, if given), or is gone.
async fn ask_worker(
    core: &Core,
    run_id: &str,
    name: &str,
    args: &Payload,
    at: Option<u64>,
    entries: u64,
) -> Option<Result<Payload, WfError>> {
    let (reply, rx) = tokio::sync::oneshot::channel();
    let request = QueryRequest {
        run_id: run_id.to_string(),
        name: name.to_string(),
        args: args.clone(),
        at,
        entries,
        reply,
    };
    if !core.worker.query(request) {
        return None;
    }
    answer_soon(rx).await.flatten()
}

/// Answers from a copy of the run rebuilt from its history, with the signals waiting in
/// its inbox applied (both read on one snapshot of the store, so each signal is applied
/// once). Nothing is written: the copy is dropped after the answer.
async fn rebuild(
    core: &Core,
    def: Arc<dyn ErasedDefinition>,
    workflow_id: String,
    run_id: String,
    name: &str,
    args: Payload,
) -> Result<Payload, WfError> {
    let pending = core.store.pending_messages(&run_id, Some(1)).await?;
    let signals: Vec<Message> = pending
        .inbox
        .into_iter()
        .map(|m| m.message)
        .filter(is_signal)
        .collect();
    let history = pending.history;
    core.metrics.of_type(def.name()).replayed(history.len());
    let meta = TaskMeta::live(
        core.now_ms(),
        history.len() as u64 + 1,
        0,
        core.config.build_id.clone(),
    );
    let name = name.to_string();
    tokio::task::spawn_blocking(move || {
        let rebuilt = || {
            replay(def.as_ref(), &workflow_id, &run_id, &history)
                .map_err(|e| e.into_query_error())
        };
        let mut instance = rebuilt()?;
        if !signals.is_empty() {
            if let Err(e) = instance.run_task(signals, meta, None) {
                // The run's next task will fail the same way (and be retried): until it
                // succeeds, the run's state is the one before these signals.
                tracing::debug!(%workflow_id, %run_id, error = %e.message(), "pending signals could not be applied for a query");
                instance = rebuilt()?;
            }
        }
        instance.query(&name, &args)
    })
    .await
    .map_err(|e| WfError::QueryError(format!("query replay panicked: {e}")))?
}

/// Whether an inbox message is a signal (what a sender is told is delivered before a task
/// applies it; updates are answered only once a task applied them).
fn is_signal(message: &Message) -> bool {
    matches!(message, Message::Signal { .. })
}

/// Answers a query as of history event `at_event` of the latest run of `workflow_id` (running
/// or closed): the run is rebuilt by replay from its history up to that event (see
/// `replay::replay_to`) on a blocking thread, and the query runs on that copy. Never written,
/// never cached.
pub(super) async fn ask_at(
    core: &Core,
    workflow_id: &str,
    name: &str,
    args: Payload,
    at_event: u64,
) -> Result<Payload, WfError> {
    Ident::QueryName.check(name)?;
    let run = latest(core, workflow_id).await?;
    let def = core.catalog.definition(&run.workflow_type)?.clone();
    check_query(&def, name, &args)?;
    let history = core.store.read_history(&run.run_id, 1).await?;
    let last = history.last().map(|e| e.event_id).unwrap_or(0);
    if at_event == 0 || at_event > last {
        return Err(WfError::InvalidArgument(format!(
            "run {} of workflow {workflow_id} has events 1 to {last}: at_event {at_event} is out of range; pick an event id from its history (`wf history {workflow_id}`)",
            run.run_id
        )));
    }
    core.metrics.of_type(def.name()).replayed(history.len());
    let meta = TaskMeta::live(core.now_ms(), last + 1, 0, core.config.build_id.clone());
    let (workflow_id, run_id, name) = (run.workflow_id, run.run_id, name.to_string());
    tokio::task::spawn_blocking(move || {
        let instance = replay_to(
            def.as_ref(),
            &workflow_id,
            &run_id,
            &history,
            at_event,
            meta,
        )
        .map_err(|e| e.into_query_error())?;
        instance.query(&name, &args)
    })
    .await
    .map_err(|e| WfError::QueryError(format!("query replay panicked: {e}")))?
}
