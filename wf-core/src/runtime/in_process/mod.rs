//! The engine's own [`Transport`]: client calls served in this process. Each call goes the
//! fastest way that is safe — a message for a run this engine holds in memory is handed to its
//! workflow worker (one commit records it), a query on a cached run reads memory — and
//! otherwise through the store, like a client of another process. `start.rs`, `signal.rs`,
//! `update.rs`, `query.rs` hold those paths; `reads.rs` the waits and reads; `control.rs`
//! cancellation, termination and schedules; `activities.rs` completion by task token.

mod activities;
mod control;
mod query;
mod reads;
mod signal;
mod start;
mod update;

use super::core::Core;
use super::worker::{Direct, DirectReply};
use crate::client::{
    ActivityResponse, CallFuture, Description, NewSchedule, PurgeReport, PurgeRequest, RunInfo,
    ScheduleChange, SignalRequest, SignalStatus, StartRequest, Started, Transport, UpdateRequest,
    UpdateStage,
};
use crate::data::history::HistoryEvent;
use crate::data::limits::Ident;
use crate::data::message::Message;
use crate::data::payload::{Payload, PayloadError, MAX_PAYLOAD_BYTES};
use crate::data::run::{ListFilter, RunStatus};
use crate::data::versioning::BuildIdStatus;
use crate::error::WfError;
use crate::metrics::MetricsSnapshot;
use crate::replay::ErasedDefinition;
use crate::schedule::ScheduleDescription;
use crate::store::RunRecord;
use crate::workflow::Role;
use std::sync::Arc;

/// Client calls served by the engine in this process.
pub(crate) struct InProcessTransport {
    core: Arc<Core>,
}

impl InProcessTransport {
    pub fn new(core: Arc<Core>) -> Self {
        InProcessTransport { core }
    }

    /// The latest run of `workflow_id`.
    async fn latest(&self, workflow_id: &str) -> Result<RunRecord, WfError> {
        self.core
            .store
            .get_run(workflow_id, None)
            .await?
            .ok_or_else(|| WfError::NotFound {
                workflow_id: workflow_id.to_string(),
                update_id: None,
            })
    }

    /// Checks a message for `run` against its type's handlers, when this engine knows the
    /// type (clients of other processes may not: then the worker checks).
    fn check(
        &self,
        run: &RunRecord,
        role: Role,
        name: &str,
        args: &Payload,
    ) -> Result<(), WfError> {
        match self.core.catalog.get(run.workflow_type.as_str()) {
            Some(def) => def.check_message(role, name, args),
            None => Ok(()),
        }
    }

    /// The running run of `workflow_id` held in this engine's cache, with its definition: a
    /// message for it needs no store read to be checked and handed to the worker.
    fn hot_run(&self, workflow_id: &str) -> Option<(String, Arc<dyn ErasedDefinition>)> {
        let (run_id, workflow_type) = self.core.worker.hot(workflow_id)?;
        let def = self.core.catalog.get(workflow_type.as_str())?;
        Some((run_id, def.clone()))
    }

    /// Whether this engine's workflow worker runs `run` (running, of a registered type, on this
    /// engine's task queue).
    fn runs_here(&self, run: &RunRecord) -> bool {
        let core = &self.core;
        core.config.run_workers
            && run.status == RunStatus::Running
            && run.task_queue == core.config.task_queue
            && core.catalog.get(&run.workflow_type).is_some()
    }

    /// Hands a message to this engine's own workflow worker in memory (one commit records it),
    /// when this engine runs workers for the run's type. `None`: use the store.
    async fn hand_over(&self, run: &RunRecord, message: Message) -> Option<DirectReply> {
        if !self.runs_here(run) {
            return None;
        }
        self.hand_over_to(&run.run_id, &run.workflow_id, Some(run), message)
            .await
    }

    /// Hands a message for run `run_id` to this engine's workflow worker (`known`: the run's
    /// row as just read, which lets the worker run it without a lease if it is not in memory);
    /// `None` if the worker is gone (or went away without answering).
    async fn hand_over_to(
        &self,
        run_id: &str,
        workflow_id: &str,
        known: Option<&RunRecord>,
        message: Message,
    ) -> Option<DirectReply> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let direct = Direct::Message {
            run_id: run_id.to_string(),
            workflow_id: workflow_id.to_string(),
            known: known.cloned().map(Box::new),
            message,
            reply,
        };
        self.core.worker.hand_over(direct).ok()?;
        answer.await.ok()
    }
}

/// Checks a signal's name and signal id against their limits (`data::limits`).
fn check_signal(name: &str, signal_id: Option<&str>) -> Result<(), WfError> {
    Ident::SignalName.check(name)?;
    if let Some(id) = signal_id {
        Ident::SignalId.check(id)?;
    }
    Ok(())
}

/// Checks an update's name and update id against their limits (`data::limits`).
fn check_update(name: &str, update_id: Option<&str>) -> Result<(), WfError> {
    Ident::UpdateName.check(name)?;
    if let Some(id) = update_id {
        Ident::UpdateId.check(id)?;
    }
    Ok(())
}

/// Refuses payloads over the limit (a `Payload` built by hand may skip `Payload::encode`).
fn check_size(what: &str, payload: &Payload) -> Result<(), WfError> {
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(WfError::PayloadError(PayloadError::TooLarge {
            what: format!("{what} arguments"),
            size: payload.len(),
            limit: MAX_PAYLOAD_BYTES,
        }));
    }
    Ok(())
}

impl Transport for InProcessTransport {
    fn start(&self, request: StartRequest) -> CallFuture<'_, Started> {
        Box::pin(self.start(request))
    }

    fn signal<'a>(&'a self, request: SignalRequest<'a>) -> CallFuture<'a, SignalStatus> {
        Box::pin(self.signal(request))
    }

    fn query<'a>(
        &'a self,
        workflow_id: &'a str,
        name: &'a str,
        args: Payload,
    ) -> CallFuture<'a, Payload> {
        Box::pin(self.query(workflow_id, name, args))
    }

    fn update<'a>(&'a self, request: UpdateRequest<'a>) -> CallFuture<'a, (String, Payload)> {
        Box::pin(self.update(request))
    }

    fn update_timeout(&self) -> std::time::Duration {
        self.core.config.update_timeout
    }

    fn wait_update<'a>(
        &'a self,
        workflow_id: &'a str,
        update_id: &'a str,
        stage: UpdateStage,
    ) -> CallFuture<'a, Payload> {
        Box::pin(self.wait_update(workflow_id, update_id, stage))
    }

    fn result<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Payload> {
        Box::pin(self.result(workflow_id))
    }

    fn history<'a>(
        &'a self,
        workflow_id: &'a str,
        run_id: Option<&'a str>,
    ) -> CallFuture<'a, Vec<HistoryEvent>> {
        Box::pin(self.history(workflow_id, run_id))
    }

    fn describe<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Description> {
        Box::pin(self.describe(workflow_id))
    }

    fn list(&self, filter: ListFilter) -> CallFuture<'_, Vec<RunInfo>> {
        Box::pin(self.list(filter))
    }

    fn cancel<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()> {
        Box::pin(self.cancel(workflow_id, reason))
    }

    fn terminate<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()> {
        Box::pin(self.terminate(workflow_id, reason))
    }

    fn create_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        schedule: NewSchedule,
    ) -> CallFuture<'a, ()> {
        Box::pin(self.create_schedule(schedule_id, schedule))
    }

    fn describe_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
    ) -> CallFuture<'a, ScheduleDescription> {
        Box::pin(async move { self.scheduler().describe(schedule_id).await })
    }

    fn list_schedules(&self) -> CallFuture<'_, Vec<ScheduleDescription>> {
        Box::pin(async move { self.scheduler().list().await })
    }

    fn change_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        change: ScheduleChange,
    ) -> CallFuture<'a, ()> {
        Box::pin(self.change_schedule(schedule_id, change))
    }

    fn delete_schedule<'a>(&'a self, schedule_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(async move { self.scheduler().delete(schedule_id).await })
    }

    fn purge(&self, request: PurgeRequest) -> CallFuture<'_, PurgeReport> {
        Box::pin(super::retention::purge(&self.core, request))
    }

    fn respond_activity<'a>(
        &'a self,
        token: &'a str,
        response: ActivityResponse,
    ) -> CallFuture<'a, ()> {
        Box::pin(self.respond_activity(token, response))
    }

    fn set_current_build<'a>(
        &'a self,
        task_queue: &'a str,
        build_id: &'a str,
    ) -> CallFuture<'a, ()> {
        Box::pin(self.set_current_build(task_queue, build_id))
    }

    fn build_ids<'a>(&'a self, task_queue: Option<&'a str>) -> CallFuture<'a, Vec<BuildIdStatus>> {
        Box::pin(async move { Ok(self.core.store.admin().build_ids(task_queue).await?) })
    }

    fn move_to_build<'a>(&'a self, workflow_id: &'a str, build_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(self.move_to_build(workflow_id, build_id))
    }

    fn ready(&self) -> CallFuture<'_, ()> {
        Box::pin(async move {
            // An engine on its way out takes no more work, even while its store still answers.
            if self.core.wake.is_shutdown() && self.core.config.run_workers {
                return Err(WfError::Shutdown);
            }
            // A lookup by primary key of an id no run can have (ids are never empty): the
            // cheapest read every store has, through the same connections the calls use.
            self.core.store.get_run("", None).await?;
            Ok(())
        })
    }

    fn metrics(&self) -> Option<MetricsSnapshot> {
        Some(self.core.metrics_snapshot())
    }
}
