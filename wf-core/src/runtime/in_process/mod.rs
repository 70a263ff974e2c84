//! The engine's own [`Transport`]: client calls served in this process. Each call goes the
//! fastest way that is safe — a message for a run this engine runs is handed to its workflow
//! worker (one commit records it), a query on a cached run reads memory — and otherwise
//! through the store, like a client of another process. One file per operation, each a free
//! function over the engine's [`Core`] that the one `Transport` impl below calls: `start.rs`,
//! `signal.rs`, `update.rs` (sending and waiting), `query.rs`, `reads.rs` (results, histories,
//! descriptions, lists), `streams.rs` (stream reads), `control.rs` (cancellation, termination), `repair.rs` (reset, fork, resume, delete), `schedules.rs`,
//! `builds.rs`, `activities.rs` (completion by task token). `route.rs` decides where a
//! signal, an update or a cancellation request goes, and reads the answer.

mod activities;
mod builds;
mod control;
mod flow;
mod query;
mod reads;
mod repair;
mod route;
mod schedules;
mod signal;
mod start;
mod streams;
mod update;

pub(super) use repair::repair_run;

use super::batcher;
use super::core::Core;
use crate::batch::{BatchDescription, BatchRequest};
use crate::client::{
    ActivityResponse, CallFuture, Description, NewSchedule, PurgeReport, PurgeRequest, RunInfo,
    ScheduleChange, SignalRequest, SignalStatus, StartRequest, Started, StreamRead, Transport,
    UpdateRequest, UpdateStage,
};
use crate::data::flow::{FlowKind, FlowLimit, FlowScope, FlowUsage};
use crate::data::history::HistoryEvent;
use crate::data::limits::Ident;
use crate::data::payload::{Payload, PayloadError, MAX_PAYLOAD_BYTES};
use crate::data::run::ListFilter;
use crate::data::versioning::BuildIdStatus;
use crate::error::WfError;
use crate::metrics::MetricsSnapshot;
use crate::schedule::ScheduleDescription;
use crate::store::RunRecord;
use std::sync::Arc;

/// Client calls served by the engine in this process.
pub(crate) struct InProcessTransport {
    core: Arc<Core>,
}

impl InProcessTransport {
    pub fn new(core: Arc<Core>) -> Self {
        InProcessTransport { core }
    }
}

/// The latest run of `workflow_id`.
async fn latest(core: &Core, workflow_id: &str) -> Result<RunRecord, WfError> {
    core.store
        .get_run(workflow_id, None)
        .await?
        .ok_or_else(|| no_run(workflow_id))
}

/// The error for a workflow id without a run.
fn no_run(workflow_id: &str) -> WfError {
    WfError::NotFound {
        workflow_id: workflow_id.to_string(),
        update_id: None,
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
        Box::pin(start::start_run(&self.core, request))
    }

    fn signal<'a>(&'a self, request: SignalRequest<'a>) -> CallFuture<'a, SignalStatus> {
        Box::pin(signal::send_signal(&self.core, request))
    }

    fn query<'a>(
        &'a self,
        workflow_id: &'a str,
        name: &'a str,
        args: Payload,
    ) -> CallFuture<'a, Payload> {
        Box::pin(query::ask(&self.core, workflow_id, name, args))
    }

    fn query_at<'a>(
        &'a self,
        workflow_id: &'a str,
        name: &'a str,
        args: Payload,
        at_event: u64,
    ) -> CallFuture<'a, Payload> {
        Box::pin(query::ask_at(&self.core, workflow_id, name, args, at_event))
    }

    fn update<'a>(&'a self, request: UpdateRequest<'a>) -> CallFuture<'a, (String, Payload)> {
        Box::pin(update::send_update(&self.core, request))
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
        Box::pin(update::wait_for_stage(
            &self.core,
            workflow_id,
            update_id,
            stage,
        ))
    }

    fn result<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Payload> {
        Box::pin(reads::wait_result(&self.core, workflow_id))
    }

    fn read_stream(&self, read: StreamRead) -> CallFuture<'_, crate::data::stream::StreamPage> {
        Box::pin(streams::read_stream(&self.core, read))
    }

    fn list_streams<'a>(
        &'a self,
        workflow_id: &'a str,
        run_id: Option<&'a str>,
    ) -> CallFuture<'a, crate::data::stream::StreamList> {
        Box::pin(streams::list_streams(&self.core, workflow_id, run_id))
    }

    fn get_event<'a>(
        &'a self,
        workflow_id: &'a str,
        key: &'a str,
        timeout: std::time::Duration,
    ) -> CallFuture<'a, Option<Payload>> {
        Box::pin(streams::get_event(&self.core, workflow_id, key, timeout))
    }

    fn history<'a>(
        &'a self,
        workflow_id: &'a str,
        run_id: Option<&'a str>,
    ) -> CallFuture<'a, Vec<HistoryEvent>> {
        Box::pin(reads::read_history(&self.core, workflow_id, run_id))
    }

    fn describe<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Description> {
        Box::pin(reads::describe_run(&self.core, workflow_id))
    }

    fn list(&self, filter: ListFilter) -> CallFuture<'_, Vec<RunInfo>> {
        Box::pin(reads::list_runs(&self.core, filter))
    }

    fn count(&self, filter: ListFilter) -> CallFuture<'_, u64> {
        Box::pin(reads::count_runs(&self.core, filter))
    }

    fn pause<'a>(
        &'a self,
        workflow_id: &'a str,
        reason: &'a str,
        by: &'a str,
    ) -> CallFuture<'a, ()> {
        Box::pin(control::pause_run(&self.core, workflow_id, reason, by))
    }

    fn unpause<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(control::unpause_run(&self.core, workflow_id))
    }

    fn cancel<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()> {
        Box::pin(control::request_cancel(&self.core, workflow_id, reason))
    }

    fn terminate<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()> {
        Box::pin(control::terminate_run(&self.core, workflow_id, reason))
    }

    fn create_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        schedule: NewSchedule,
    ) -> CallFuture<'a, ()> {
        Box::pin(schedules::create(&self.core, schedule_id, schedule))
    }

    fn describe_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
    ) -> CallFuture<'a, ScheduleDescription> {
        Box::pin(async move { schedules::scheduler(&self.core).describe(schedule_id).await })
    }

    fn list_schedules(&self) -> CallFuture<'_, Vec<ScheduleDescription>> {
        Box::pin(async move { schedules::scheduler(&self.core).list().await })
    }

    fn change_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        change: ScheduleChange,
    ) -> CallFuture<'a, ()> {
        Box::pin(schedules::change(&self.core, schedule_id, change))
    }

    fn delete_schedule<'a>(&'a self, schedule_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(async move { schedules::scheduler(&self.core).delete(schedule_id).await })
    }

    fn repair(
        &self,
        request: crate::client::RepairRequest,
    ) -> CallFuture<'_, crate::client::RepairReport> {
        Box::pin(repair::repair(&self.core, request))
    }

    fn start_batch(&self, request: BatchRequest) -> CallFuture<'_, BatchDescription> {
        Box::pin(batcher::start(&self.core, request))
    }

    fn list_batches(&self) -> CallFuture<'_, Vec<BatchDescription>> {
        Box::pin(batcher::list(&self.core))
    }

    fn describe_batch<'a>(&'a self, batch_id: &'a str) -> CallFuture<'a, BatchDescription> {
        Box::pin(batcher::describe(&self.core, batch_id))
    }

    fn cancel_batch<'a>(&'a self, batch_id: &'a str) -> CallFuture<'a, BatchDescription> {
        Box::pin(batcher::cancel(&self.core, batch_id))
    }

    fn purge(&self, request: PurgeRequest) -> CallFuture<'_, PurgeReport> {
        Box::pin(super::retention::purge(&self.core, request))
    }

    fn respond_activity<'a>(
        &'a self,
        token: &'a str,
        response: ActivityResponse,
    ) -> CallFuture<'a, ()> {
        Box::pin(activities::respond(&self.core, token, response))
    }

    fn set_current_build<'a>(
        &'a self,
        task_queue: &'a str,
        build_id: &'a str,
    ) -> CallFuture<'a, ()> {
        Box::pin(builds::make_current(&self.core, task_queue, build_id))
    }

    fn build_ids<'a>(&'a self, task_queue: Option<&'a str>) -> CallFuture<'a, Vec<BuildIdStatus>> {
        Box::pin(builds::list(&self.core, task_queue))
    }

    fn move_to_build<'a>(&'a self, workflow_id: &'a str, build_id: &'a str) -> CallFuture<'a, ()> {
        Box::pin(builds::move_run(&self.core, workflow_id, build_id))
    }

    fn set_flow_limit(&self, limit: FlowLimit) -> CallFuture<'_, ()> {
        Box::pin(flow::set(&self.core, limit))
    }

    fn flow_limits(&self) -> CallFuture<'_, Vec<FlowLimit>> {
        Box::pin(flow::list(&self.core))
    }

    fn remove_flow_limit(&self, scope: FlowScope, kind: FlowKind) -> CallFuture<'_, bool> {
        Box::pin(flow::remove(&self.core, scope, kind))
    }

    fn flow_usage(&self) -> CallFuture<'_, Vec<FlowUsage>> {
        Box::pin(flow::usage(&self.core))
    }

    fn set_workflow_queue(&self, queue: crate::data::queue::WorkflowQueue) -> CallFuture<'_, ()> {
        Box::pin(flow::set_queue(&self.core, queue))
    }

    fn workflow_queues(&self) -> CallFuture<'_, Vec<crate::data::queue::WorkflowQueue>> {
        Box::pin(async move { Ok(self.core.store.admin().workflow_queues().await?) })
    }

    fn remove_workflow_queue<'a>(&'a self, name: &'a str) -> CallFuture<'a, bool> {
        Box::pin(flow::remove_queue(&self.core, name))
    }

    fn workflow_queue_usage(&self) -> CallFuture<'_, Vec<crate::data::queue::QueueUsage>> {
        Box::pin(flow::queue_usage(&self.core))
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
