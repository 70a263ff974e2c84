//! The batcher: carries out batches (see `crate::batch`). A batch's row sits in the schedule
//! table, due when its lease runs out; the time keeper hands due rows to [`claim`], which
//! takes the lease by a version-checked save and drives the batch on a task of its own.
//!
//! The drive loop, per chunk: act on the chunk's runs; list the next page after the cursor;
//! save the counts, the next chunk and the renewed lease in one version-checked save. A save
//! that loses (the batch was cancelled, or another engine took it over after this one stalled)
//! ends the loop. An engine that stops mid-chunk leaves the chunk recorded: the engine that
//! takes over acts on it again, which a signal's dedupe id (the batch's) makes a no-op for the
//! runs already signalled, and which counts a run already closed the batch's way as done, or
//! already reset by the batch (a reset names the run it resets: a run whose chain went on
//! without it is not reset again).

use super::core::Core;
use super::in_process::{repair_run, InProcessTransport};
use crate::batch::state::{batch_id_of, row_id, BatchState, ChunkRun, ROW_PREFIX};
use crate::batch::{BatchAction, BatchDescription, BatchRequest, BatchStatus, StoredFilter};
use crate::client::{Client, RepairAction, RepairRequest, SignalRequest};
use crate::data::ids::new_id;
use crate::data::limits::{check_reason, Ident};
use crate::data::repair::{RepairKind, ResetPoint};
use crate::data::run::RunStatus;
use crate::error::{StoreError, WfError};
use crate::store::{ScheduleRow, ScheduleUpdate};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a claim on a batch lasts without a save (engine-clock ms).
const LEASE_MS: i64 = 10_000;
/// The most runs acted on between two saves.
const MAX_CHUNK: usize = 100;
/// How many times cancel retries a save that lost a race with the batch's progress.
const SAVE_ATTEMPTS: usize = 20;

/// Whether a schedule-table row is a batch's.
pub(crate) fn is_batch_row(schedule_id: &str) -> bool {
    schedule_id.starts_with(ROW_PREFIX)
}

fn client(core: &Arc<Core>) -> Client {
    Client::from_transport(Arc::new(InProcessTransport::new(core.clone())))
}

fn not_found(batch_id: &str) -> WfError {
    WfError::Unknown {
        kind: "batch",
        name: batch_id.to_string(),
        hint: "wf batch list shows the batches".to_string(),
    }
}

/// Counts the runs `filter` selects (the store counts them, without listing).
async fn count(client: &Client, filter: &StoredFilter) -> Result<u64, WfError> {
    client.count(filter.to_filter(None, 0)).await
}

/// Starts a batch: counts the runs its filter selects, stores it, and wakes the time keeper,
/// which claims it.
pub(crate) async fn start(
    core: &Arc<Core>,
    request: BatchRequest,
) -> Result<BatchDescription, WfError> {
    let batch_id = request.batch_id.unwrap_or_else(new_id);
    Ident::BatchId.check(&batch_id)?;
    check_reason("batch reason", &request.reason)?;
    match &request.action {
        BatchAction::Signal { name, .. } => Ident::SignalName.check(name)?,
        BatchAction::Reset {
            to: ResetPoint::Event(n),
            ..
        } => {
            return Err(WfError::InvalidArgument(format!(
                "a batch resets each run to first-task or last-good-task, not to event {n}: an \
                 event id names a point of one run's history (reset that run alone)"
            )))
        }
        _ => {}
    }
    if request.rate_per_s == Some(0) {
        return Err(WfError::InvalidArgument(
            "a batch's rate must be at least 1 run per second (leave it out for no limit)".into(),
        ));
    }
    let filter = StoredFilter::from_filter(&request.filter);
    let selected = count(&client(core), &filter).await?;
    let now = core.now_ms();
    let state = BatchState {
        action: request.action,
        filter,
        reason: request.reason,
        rate_per_s: request.rate_per_s,
        status: BatchStatus::Running,
        selected,
        done: 0,
        failed: 0,
        last_error: None,
        created_ms: now,
        closed_ms: None,
        cursor: None,
        chunk: Vec::new(),
        chunk_taken_over: false,
        owner: None,
    };
    let row = ScheduleRow {
        schedule_id: row_id(&batch_id),
        data: state.encode()?,
        version: 1,
        next_check_ms: Some(now),
    };
    core.store
        .admin()
        .create_schedule(row)
        .await
        .map_err(|e| match e {
            StoreError::ScheduleExists(_) => WfError::InvalidArgument(format!(
                "a batch with id {batch_id:?} already exists; pick another id"
            )),
            other => other.into(),
        })?;
    core.wake.timer.notify_one();
    Ok(state.describe(&batch_id))
}

async fn row(core: &Core, batch_id: &str) -> Result<ScheduleRow, WfError> {
    core.store
        .admin()
        .get_schedule(&row_id(batch_id))
        .await?
        .ok_or_else(|| not_found(batch_id))
}

/// Describes a batch.
pub(crate) async fn describe(core: &Core, batch_id: &str) -> Result<BatchDescription, WfError> {
    let row = row(core, batch_id).await?;
    Ok(BatchState::decode(&row.data)?.describe(batch_id))
}

/// Every batch, newest first.
pub(crate) async fn list(core: &Core) -> Result<Vec<BatchDescription>, WfError> {
    let rows = core.store.admin().list_schedules().await?;
    let mut out = Vec::new();
    for row in rows {
        if let Some(id) = batch_id_of(&row.schedule_id) {
            out.push(BatchState::decode(&row.data)?.describe(id));
        }
    }
    out.sort_by(|a, b| (b.created_ms, &b.batch_id).cmp(&(a.created_ms, &a.batch_id)));
    Ok(out)
}

/// Cancels a running batch; a finished one is left as it is. Returns its description.
pub(crate) async fn cancel(core: &Core, batch_id: &str) -> Result<BatchDescription, WfError> {
    for _ in 0..SAVE_ATTEMPTS {
        let row = row(core, batch_id).await?;
        let mut st = BatchState::decode(&row.data)?;
        if st.status != BatchStatus::Running {
            return Ok(st.describe(batch_id));
        }
        st.status = BatchStatus::Cancelled;
        st.closed_ms = Some(core.now_ms());
        if save(core, &row.schedule_id, row.version, &st, None).await? {
            return Ok(st.describe(batch_id));
        }
    }
    Err(WfError::Conflict(format!(
        "batch {batch_id:?} kept changing while it was being cancelled; try again"
    )))
}

/// Writes a batch's new state if its row is still at `version`; false if it changed.
async fn save(
    core: &Core,
    schedule_id: &str,
    version: u64,
    st: &BatchState,
    next_check_ms: Option<i64>,
) -> Result<bool, WfError> {
    Ok(core
        .store
        .admin()
        .update_schedule(ScheduleUpdate {
            schedule_id: schedule_id.to_string(),
            expected_version: version,
            data: st.encode()?,
            next_check_ms,
        })
        .await?)
}

/// Claims a due batch row (its lease ran out, or it was just started) and drives it on a task
/// of its own. A row that another engine claimed first is left to it.
pub(crate) async fn claim(core: &Arc<Core>, row: ScheduleRow, now: i64) -> Result<(), WfError> {
    let mut st = BatchState::decode(&row.data)?;
    if st.status != BatchStatus::Running {
        save(core, &row.schedule_id, row.version, &st, None).await?;
        return Ok(());
    }
    st.chunk_taken_over = !st.chunk.is_empty();
    st.owner = Some(core.worker_id.clone());
    if !save(
        core,
        &row.schedule_id,
        row.version,
        &st,
        Some(now + LEASE_MS),
    )
    .await?
    {
        return Ok(());
    }
    let drive = Drive {
        core: core.clone(),
        client: client(core),
        schedule_id: row.schedule_id,
        version: row.version + 1,
        st,
    };
    tokio::spawn(drive.run());
    Ok(())
}

/// One engine's hold on one batch.
struct Drive {
    core: Arc<Core>,
    client: Client,
    schedule_id: String,
    /// The row's version after this engine's last save.
    version: u64,
    st: BatchState,
}

impl Drive {
    fn batch_id(&self) -> &str {
        batch_id_of(&self.schedule_id).unwrap_or(&self.schedule_id)
    }

    async fn run(mut self) {
        if let Err(e) = self.drive().await {
            tracing::warn!(batch_id = %self.batch_id(), error = %e, "driving a batch stopped; the next engine to claim it goes on");
        }
    }

    /// Saves the state with a renewed lease (or none, once finished); false if it lost.
    async fn save(&mut self, next_check_ms: Option<i64>) -> Result<bool, WfError> {
        let saved = save(
            &self.core,
            &self.schedule_id,
            self.version,
            &self.st,
            next_check_ms,
        )
        .await?;
        if saved {
            self.version += 1;
        } else {
            tracing::debug!(batch_id = %self.batch_id(), "the batch changed (cancelled, or taken over): this engine stops driving it");
        }
        Ok(saved)
    }

    fn chunk_size(&self) -> usize {
        self.st
            .rate_per_s
            .map_or(MAX_CHUNK, |r| (r as usize).clamp(1, MAX_CHUNK))
    }

    async fn drive(&mut self) -> Result<(), WfError> {
        loop {
            if self.core.is_shutdown() {
                // Hand the batch back at once: the next engine need not wait out the lease.
                let now = self.core.now_ms();
                self.save(Some(now)).await?;
                return Ok(());
            }
            let began = Instant::now();
            let acted = self.st.chunk.len();
            self.act_on_chunk().await;
            let limit = self.chunk_size();
            let page = self
                .client
                .list(self.st.filter.to_filter(self.st.cursor.clone(), limit))
                .await;
            let now = self.core.now_ms();
            let page = match page {
                Ok(page) => page,
                Err(e) if e.is_retryable() => {
                    self.st.last_error = Some(format!("listing the batch's next runs: {e}"));
                    if !self.save(Some(now + LEASE_MS)).await? {
                        return Ok(());
                    }
                    tokio::time::sleep(self.core.config.poll_interval).await;
                    continue;
                }
                Err(e) => {
                    self.st.status = BatchStatus::Failed;
                    self.st.closed_ms = Some(now);
                    self.st.last_error = Some(format!("listing the batch's next runs: {e}"));
                    self.save(None).await?;
                    return Ok(());
                }
            };
            if let Some(last) = page.last() {
                self.st.cursor = Some(last.run_id.clone());
            }
            self.st.chunk = page
                .into_iter()
                .map(|r| ChunkRun {
                    run_id: r.run_id,
                    workflow_id: r.workflow_id,
                })
                .collect();
            let finished = self.st.chunk.is_empty();
            if finished {
                self.st.status = BatchStatus::Completed;
                self.st.closed_ms = Some(now);
            }
            if !self.save((!finished).then_some(now + LEASE_MS)).await? {
                return Ok(());
            }
            if finished {
                return Ok(());
            }
            if let Some(rate) = self.st.rate_per_s {
                let due = Duration::from_secs_f64(acted as f64 / f64::from(rate.max(1)));
                if let Some(wait) = due.checked_sub(began.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Acts on every run of the chunk in hand and counts the outcomes.
    async fn act_on_chunk(&mut self) {
        let chunk = std::mem::take(&mut self.st.chunk);
        for run in &chunk {
            match self.act(run).await {
                Ok(()) => self.st.done += 1,
                Err(e) => {
                    self.st.failed += 1;
                    self.st.last_error = Some(format!(
                        "workflow {:?} (run {}): {e}",
                        run.workflow_id, run.run_id
                    ));
                }
            }
        }
        self.st.chunk_taken_over = false;
    }

    async fn act(&self, run: &ChunkRun) -> Result<(), WfError> {
        let reason = self.st.reason.as_str();
        let outcome = match &self.st.action {
            BatchAction::Signal { name, args } => self
                .client
                .send_signal(SignalRequest {
                    workflow_id: &run.workflow_id,
                    name,
                    args: args.clone(),
                    signal_id: Some(signal_id(self.batch_id())),
                    handled: None,
                })
                .await
                .map(drop),
            BatchAction::Cancel => self.client.cancel(&run.workflow_id, reason).await,
            BatchAction::Terminate => self.client.terminate(&run.workflow_id, reason).await,
            BatchAction::Reset { to, drop_messages } => {
                return self.reset(run, *to, *drop_messages).await;
            }
            BatchAction::Pause => {
                let by = format!("batch {}", self.batch_id());
                let transport = self.client.transport();
                transport.pause(&run.workflow_id, reason, &by).await
            }
            BatchAction::Unpause => self.client.unpause(&run.workflow_id).await,
            BatchAction::Delete => self
                .client
                .delete_run(&run.workflow_id, reason)
                .await
                .map(drop),
        };
        match outcome {
            // Taken over mid-chunk: the engine before may have closed this run already.
            Err(WfError::RunFinished { status, .. })
                if self.st.chunk_taken_over && closed_by(&self.st.action, status) =>
            {
                Ok(())
            }
            // Taken over mid-chunk: the engine before may have deleted this run already.
            Err(WfError::NotFound { .. })
                if self.st.chunk_taken_over && self.st.action == BatchAction::Delete =>
            {
                Ok(())
            }
            other => other,
        }
    }

    /// Resets `run` itself (not a later run of its chain) to `to`.
    async fn reset(
        &self,
        run: &ChunkRun,
        to: ResetPoint,
        drop_messages: bool,
    ) -> Result<(), WfError> {
        let action = RepairAction::Reset { to, drop_messages };
        let request = RepairRequest::new(run.workflow_id.clone(), action)
            .reason(self.st.reason.clone())
            .identity(format!("batch {}", self.batch_id()));
        match repair_run(&self.core, request, Some(run.run_id.clone())).await {
            Ok(_) => Ok(()),
            // Taken over mid-chunk: the engine before may have reset this run already.
            Err(e @ WfError::Conflict(_)) if self.st.chunk_taken_over => {
                match self.client.describe(&run.workflow_id).await {
                    Ok(latest)
                        if latest.repaired_from.as_ref().is_some_and(|o| {
                            o.kind == RepairKind::Reset && o.run_id == run.run_id
                        }) =>
                    {
                        Ok(())
                    }
                    _ => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }
}

/// The dedupe id of the signals batch `batch_id` sends.
pub(crate) fn signal_id(batch_id: &str) -> String {
    format!("batch:{batch_id}")
}

/// Whether a run closed with `status` is what `action` leaves behind.
fn closed_by(action: &BatchAction, status: RunStatus) -> bool {
    match action {
        BatchAction::Signal { .. }
        | BatchAction::Reset { .. }
        | BatchAction::Pause
        | BatchAction::Unpause
        | BatchAction::Delete => false,
        BatchAction::Cancel => status == RunStatus::Cancelled,
        BatchAction::Terminate => status == RunStatus::Terminated,
    }
}
