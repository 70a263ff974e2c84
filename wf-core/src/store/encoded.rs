//! The one place payload codecs are applied: [`EncodedStore`] wraps any [`Store`] and encodes
//! every user payload of what goes in (starts, messages, commits, heartbeats, schedules) and
//! decodes every one of what comes out (runs, histories, inboxes, activity tasks, updates,
//! memos). Everything above it (workers, queries, describe, the client, the HTTP service,
//! exports) sees clear payloads; everything below it (the stores' tables, events and files)
//! holds only encoded ones. An engine without a codec has no wrapper at all.
//!
//! Which fields are user payloads is written once per type by [`HasPayloads`]: the data types'
//! impls are in `data::payload_codec`, the store records' here.

use super::records::{
    ActivityTask, DeliverOutcome, NewActivityTask, NewRun, PendingMessages, RunClose, RunRecord,
    RunSearch, ScheduleRow, StartOutcome, StartRequest, TaskCommit, WorkflowTask,
};
use super::{EngineRecord, Store, StoreFuture};
use crate::data::activity::{ActivityFailure, ActivityResolution};
use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::payload::{Payload, PayloadError};
use crate::data::payload_codec::{HasPayloads, PayloadCodecs};
use crate::data::run::{ListFilter, TaskFailure};
use crate::data::run_limits::RunLimits;
use crate::data::update::UpdateRecord;
use crate::data::versioning::BuildIdStatus;
use crate::error::{BackendErrorKind, StoreError};
use std::sync::Arc;

/// A store whose user payloads are encoded at rest by a chain of payload codecs.
pub struct EncodedStore {
    inner: Arc<dyn Store>,
    codecs: PayloadCodecs,
}

impl EncodedStore {
    /// Wraps `inner`: payloads written through this store are encoded by `codecs`, payloads
    /// read are decoded (clear ones, written before the codecs were installed, read as they
    /// are).
    pub fn new(inner: Arc<dyn Store>, codecs: PayloadCodecs) -> Self {
        EncodedStore { inner, codecs }
    }

    /// [`Store::deliver`], or [`Store::deliver_durable`] when `durable`, with the message
    /// encoded and the outcome decoded.
    fn deliver_encoded(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
        durable: bool,
    ) -> StoreFuture<'_, DeliverOutcome> {
        let what = format!("a message to workflow {workflow_id:?}");
        let (workflow_id, run_id) = (workflow_id.to_owned(), run_id.map(str::to_owned));
        let call = self.with_encoded(&what, message, move |message| {
            Box::pin(async move {
                let (workflow_id, run_id) = (&workflow_id, run_id.as_deref());
                if durable {
                    self.inner
                        .deliver_durable(workflow_id, run_id, message, now_ms)
                        .await
                } else {
                    self.inner
                        .deliver(workflow_id, run_id, message, now_ms)
                        .await
                }
            })
        });
        self.decoded(what, call)
    }

    /// Encodes `value`'s payloads for a call that `what` describes.
    fn encode<T: HasPayloads + ?Sized>(&self, what: &str, value: &mut T) -> Result<(), StoreError> {
        self.codecs
            .encode_all(value)
            .map_err(|e| codec_error("writing", what, e))
    }

    /// Runs `call` with `value` encoded, or fails at once if it does not encode.
    fn with_encoded<'a, V: HasPayloads, T: Send + 'a>(
        &'a self,
        what: &str,
        mut value: V,
        call: impl FnOnce(V) -> StoreFuture<'a, T>,
    ) -> StoreFuture<'a, T> {
        match self.encode(what, &mut value) {
            Ok(()) => call(value),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    /// Decodes the payloads of what `call` answers.
    fn decoded<'a, T: HasPayloads + Send + 'a>(
        &'a self,
        what: String,
        call: StoreFuture<'a, T>,
    ) -> StoreFuture<'a, T> {
        Box::pin(async move {
            let mut value = call.await?;
            self.codecs
                .decode_all(&mut value)
                .map_err(|e| codec_error("reading", &what, e))?;
            Ok(value)
        })
    }
}

/// A codec failure as a store error: which call, which codec, what to do.
fn codec_error(doing: &str, what: &str, e: PayloadError) -> StoreError {
    StoreError::backend(BackendErrorKind::Codec, format!("{doing} {what}: {e}"))
}

impl Store for EncodedStore {
    fn start_run(&self, req: StartRequest) -> StoreFuture<'_, StartOutcome> {
        let what = format!("the start of workflow {:?}", req.run.workflow_id);
        let call = self.with_encoded(&what, req, |req| self.inner.start_run(req));
        self.decoded(what, call)
    }

    fn start_run_with_task(
        &self,
        mut req: StartRequest,
        mut first: TaskCommit,
    ) -> StoreFuture<'_, (StartOutcome, Option<Result<RunRecord, StoreError>>)> {
        let what = format!("the start of workflow {:?}", req.run.workflow_id);
        let encoded = self
            .encode(&what, &mut req)
            .and_then(|()| self.encode(&what, &mut first));
        Box::pin(async move {
            encoded?;
            let (mut outcome, commit) = self.inner.start_run_with_task(req, first).await?;
            let decode = |e| codec_error("reading", &what, e);
            self.codecs.decode_all(&mut outcome).map_err(decode)?;
            let commit = commit.map(|c| {
                c.and_then(|mut run| {
                    self.codecs.decode_all(&mut run).map_err(decode)?;
                    Ok(run)
                })
            });
            Ok((outcome, commit))
        })
    }

    fn deliver(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome> {
        self.deliver_encoded(workflow_id, run_id, message, now_ms, false)
    }

    fn deliver_durable(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome> {
        self.deliver_encoded(workflow_id, run_id, message, now_ms, true)
    }

    fn poll_workflow_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let call = self
            .inner
            .poll_workflow_tasks(worker_id, now_ms, lease_ms, max);
        self.decoded("workflow tasks".into(), call)
    }

    fn lease_run(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Option<WorkflowTask>> {
        let call = self
            .inner
            .lease_run(run_id, worker_id, now_ms, lease_ms, build_id);
        self.decoded(format!("run {run_id}"), call)
    }

    fn poll_workflow_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        workflow_types: Vec<String>,
        task_queues: Vec<String>,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let call = self.inner.poll_workflow_tasks_of(
            worker_id,
            now_ms,
            lease_ms,
            max,
            workflow_types,
            task_queues,
            build_id,
        );
        self.decoded("workflow tasks".into(), call)
    }

    fn poll_workflow_tasks_on(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        task_queues: Vec<String>,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let call = self.inner.poll_workflow_tasks_on(
            worker_id,
            now_ms,
            lease_ms,
            max,
            task_queues,
            build_id,
        );
        self.decoded("workflow tasks".into(), call)
    }

    fn poll_activity_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
        names: Vec<String>,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let call = self
            .inner
            .poll_activity_tasks_of(worker_id, now_ms, max, names);
        self.decoded("activity tasks".into(), call)
    }

    fn commit_workflow_task(&self, commit: TaskCommit) -> StoreFuture<'_, RunRecord> {
        let what = format!("a workflow task of run {}", commit.run_id);
        let call = self.with_encoded(&what, commit, |commit| {
            self.inner.commit_workflow_task(commit)
        });
        self.decoded(what, call)
    }

    fn fail_workflow_task(
        &self,
        run_id: &str,
        worker_id: &str,
        failure: TaskFailure,
    ) -> StoreFuture<'_, ()> {
        self.inner.fail_workflow_task(run_id, worker_id, failure)
    }

    fn release_workflow_task(&self, run_id: &str, worker_id: &str) -> StoreFuture<'_, ()> {
        self.inner.release_workflow_task(run_id, worker_id)
    }

    fn poll_activity_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let call = self.inner.poll_activity_tasks(worker_id, now_ms, max);
        self.decoded("activity tasks".into(), call)
    }

    fn heartbeat_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        details: Option<Payload>,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let what = format!("a heartbeat of activity {seq} of run {run_id}");
        let run_id = run_id.to_owned();
        self.with_encoded(&what, details, move |details| {
            Box::pin(async move {
                self.inner
                    .heartbeat_activity(&run_id, seq, attempt, details, now_ms)
                    .await
            })
        })
    }

    fn resolve_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        resolution: ActivityResolution,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let what = format!("the result of activity {seq} of run {run_id}");
        let run_id = run_id.to_owned();
        self.with_encoded(&what, resolution, move |resolution| {
            Box::pin(async move {
                self.inner
                    .resolve_activity(&run_id, seq, attempt, resolution, now_ms)
                    .await
            })
        })
    }

    fn retry_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        visible_at_ms: i64,
        failure: ActivityFailure,
    ) -> StoreFuture<'_, bool> {
        self.inner
            .retry_activity(run_id, seq, attempt, visible_at_ms, failure)
    }

    fn hold_activity_for_completion(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        self.inner
            .hold_activity_for_completion(run_id, seq, attempt, now_ms)
    }

    fn release_activity(&self, run_id: &str, seq: u32, attempt: u32) -> StoreFuture<'_, ()> {
        self.inner.release_activity(run_id, seq, attempt)
    }

    fn current_attempts(&self, attempts: Vec<(String, u32, u32)>) -> StoreFuture<'_, Vec<bool>> {
        self.inner.current_attempts(attempts)
    }

    fn expired_activities(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ActivityTask>> {
        let call = self.inner.expired_activities(now_ms, max);
        self.decoded("expired activity tasks".into(), call)
    }

    fn fire_due_timers(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<(String, u32)>> {
        self.inner.fire_due_timers(now_ms, max)
    }

    fn next_wakeup(&self, now_ms: i64) -> StoreFuture<'_, Option<i64>> {
        self.inner.next_wakeup(now_ms)
    }

    fn get_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<RunRecord>> {
        let call = self.inner.get_run(workflow_id, run_id);
        self.decoded(format!("workflow {workflow_id:?}"), call)
    }

    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>> {
        let call = self.inner.read_history(run_id, from_event_id);
        self.decoded(format!("the history of run {run_id}"), call)
    }

    fn pending_messages(
        &self,
        run_id: &str,
        history_from: Option<u64>,
    ) -> StoreFuture<'_, PendingMessages> {
        let call = self.inner.pending_messages(run_id, history_from);
        self.decoded(format!("the inbox of run {run_id}"), call)
    }

    fn list_runs(&self, filter: ListFilter) -> StoreFuture<'_, Vec<RunRecord>> {
        let call = self.inner.list_runs(filter);
        self.decoded("a list of runs".into(), call)
    }

    fn get_update(
        &self,
        workflow_id: &str,
        update_id: &str,
    ) -> StoreFuture<'_, Option<UpdateRecord>> {
        let call = self.inner.get_update(workflow_id, update_id);
        self.decoded(
            format!("update {update_id:?} of workflow {workflow_id:?}"),
            call,
        )
    }

    fn pending_updates(&self, run_id: &str) -> StoreFuture<'_, Vec<UpdateRecord>> {
        let call = self.inner.pending_updates(run_id);
        self.decoded(format!("the updates of run {run_id}"), call)
    }

    fn pending_activities(&self, run_id: &str) -> StoreFuture<'_, Vec<ActivityTask>> {
        let call = self.inner.pending_activities(run_id);
        self.decoded(format!("the activities of run {run_id}"), call)
    }

    fn run_search(&self, run_ids: Vec<String>) -> StoreFuture<'_, Vec<RunSearch>> {
        let call = self.inner.run_search(run_ids);
        self.decoded("run memos".into(), call)
    }

    fn create_schedule(&self, row: ScheduleRow) -> StoreFuture<'_, ()> {
        let what = format!("schedule {:?}", row.schedule_id);
        self.with_encoded(&what, row, |row| self.inner.create_schedule(row))
    }

    fn update_schedule(
        &self,
        schedule_id: &str,
        expected_version: u64,
        data: Payload,
        next_check_ms: Option<i64>,
    ) -> StoreFuture<'_, bool> {
        let what = format!("schedule {schedule_id:?}");
        let schedule_id = schedule_id.to_owned();
        self.with_encoded(&what, data, move |data| {
            Box::pin(async move {
                self.inner
                    .update_schedule(&schedule_id, expected_version, data, next_check_ms)
                    .await
            })
        })
    }

    fn get_schedule(&self, schedule_id: &str) -> StoreFuture<'_, Option<ScheduleRow>> {
        let call = self.inner.get_schedule(schedule_id);
        self.decoded(format!("schedule {schedule_id:?}"), call)
    }

    fn list_schedules(&self) -> StoreFuture<'_, Vec<ScheduleRow>> {
        let call = self.inner.list_schedules();
        self.decoded("schedules".into(), call)
    }

    fn delete_schedule(&self, schedule_id: &str) -> StoreFuture<'_, bool> {
        self.inner.delete_schedule(schedule_id)
    }

    fn due_schedules(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ScheduleRow>> {
        let call = self.inner.due_schedules(now_ms, max);
        self.decoded("due schedules".into(), call)
    }

    fn register_engine(&self, engine: EngineRecord) -> StoreFuture<'_, ()> {
        self.inner.register_engine(engine)
    }

    fn renew_engine(&self, engine_id: &str, lease_until_ms: i64) -> StoreFuture<'_, bool> {
        self.inner.renew_engine(engine_id, lease_until_ms)
    }

    fn remove_engine(&self, engine_id: &str) -> StoreFuture<'_, ()> {
        self.inner.remove_engine(engine_id)
    }

    fn live_engines(&self, now_ms: i64) -> StoreFuture<'_, Vec<EngineRecord>> {
        self.inner.live_engines(now_ms)
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        self.inner.close()
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn metrics(&self) -> Option<Arc<crate::metrics::StoreMetrics>> {
        self.inner.metrics()
    }

    fn takes_assumed_rows(&self) -> bool {
        self.inner.takes_assumed_rows()
    }

    fn terminate(
        &self,
        workflow_id: &str,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, RunRecord> {
        let call = self.inner.terminate(workflow_id, reason, now_ms);
        self.decoded(format!("workflow {workflow_id:?}"), call)
    }

    fn purge_closed_runs(&self, closed_before_ms: i64, max: usize) -> StoreFuture<'_, Vec<String>> {
        self.inner.purge_closed_runs(closed_before_ms, max)
    }

    fn count_closed_runs(&self, closed_before_ms: i64) -> StoreFuture<'_, u64> {
        self.inner.count_closed_runs(closed_before_ms)
    }

    // Run limits and builds carry no user payload.
    fn run_limits(&self, run_id: &str) -> StoreFuture<'_, Option<RunLimits>> {
        self.inner.run_limits(run_id)
    }

    fn set_current_build(&self, task_queue: &str, build_id: &str) -> StoreFuture<'_, ()> {
        self.inner.set_current_build(task_queue, build_id)
    }

    fn build_ids(&self, task_queue: Option<&str>) -> StoreFuture<'_, Vec<BuildIdStatus>> {
        self.inner.build_ids(task_queue)
    }

    fn move_to_build(&self, workflow_id: &str, build_id: &str) -> StoreFuture<'_, RunRecord> {
        let call = self.inner.move_to_build(workflow_id, build_id);
        self.decoded(format!("workflow {workflow_id:?}"), call)
    }
}

/// The visitor's signature, for the impls below.
type Visit<'a> = &'a mut dyn FnMut(&mut Payload) -> Result<(), PayloadError>;

impl HasPayloads for RunRecord {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // `summary` is the engine's bookkeeping, read by the store: it stays clear.
        self.result.for_each_payload(f)
    }
}

impl HasPayloads for NewRun {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        f(&mut self.input)?;
        self.memo.for_each_payload(f)
    }
}

impl HasPayloads for StartRequest {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.run.for_each_payload(f)?;
        self.messages.for_each_payload(f)
    }
}

impl HasPayloads for StartOutcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.messages.for_each_payload(f)
    }
}

impl HasPayloads for DeliverOutcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            DeliverOutcome::DuplicateUpdate(record) => record.for_each_payload(f),
            DeliverOutcome::Enqueued { .. } | DeliverOutcome::DuplicateSignal { .. } => Ok(()),
        }
    }
}

impl HasPayloads for NewActivityTask {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        f(&mut self.input)
    }
}

impl HasPayloads for RunClose {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            RunClose::Completed(result) => f(result),
            RunClose::ContinuedAsNew(run) => run.for_each_payload(f),
            RunClose::Failed(_) | RunClose::Cancelled(_) => Ok(()),
        }
    }
}

impl HasPayloads for TaskCommit {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // Exhaustive on purpose: a new field must say whether it carries user payloads.
        let TaskCommit {
            run_id: _,
            worker_id: _,
            without_lease: _,
            expected_next_event_id: _,
            events,
            consumed_through: _,
            new_activities,
            lease_activities_to: _,
            cancel_activities: _,
            resolve_activities: _,
            new_timers: _,
            cancel_timers: _,
            updates,
            close,
            start_children,
            deliver,
            terminate: _,
            notify,
            summary: _,
            sync: _,
            now_ms: _,
            failure_type: _,
            build: _,
            assumed,
        } = self;
        if let Some(assumed) = assumed {
            assumed.for_each_payload(f)?;
        }
        events
            .iter_mut()
            .try_for_each(|(_, kind)| kind.for_each_payload(f))?;
        new_activities.for_each_payload(f)?;
        updates
            .iter_mut()
            .try_for_each(|(_, _, state)| state.for_each_payload(f))?;
        close.for_each_payload(f)?;
        start_children
            .iter_mut()
            .try_for_each(|(_, run)| run.for_each_payload(f))?;
        deliver
            .iter_mut()
            .try_for_each(|(_, _, message)| message.for_each_payload(f))?;
        notify
            .iter_mut()
            .try_for_each(|(_, message)| message.for_each_payload(f))
    }
}

impl HasPayloads for ActivityTask {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        f(&mut self.input)?;
        self.heartbeat.for_each_payload(f)
    }
}

impl HasPayloads for WorkflowTask {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.run.for_each_payload(f)?;
        self.messages.for_each_payload(f)
    }
}

impl HasPayloads for PendingMessages {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.inbox.for_each_payload(f)?;
        self.history.for_each_payload(f)
    }
}

impl HasPayloads for RunSearch {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // Search attributes stay clear: the store filters on them.
        self.memo.for_each_payload(f)
    }
}

impl HasPayloads for ScheduleRow {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // The whole schedule state: it holds the input of the workflows it starts.
        f(&mut self.data)
    }
}
