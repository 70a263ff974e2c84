//! The scheduler: carries out schedules. The time keeper hands it every schedule whose next
//! check is due; it starts the actions whose fire times came (per the overlap policy and the
//! catch-up window) and saves the schedule's new state, version-checked. It also runs the
//! schedule operations of this engine's client (create, describe, pause, trigger...).
//!
//! Each action's workflow id is derived from the schedule id and the fire time. Engines that
//! share a store start each action once: the due fire times are claimed by a version-checked
//! save before any is started (see `process_one`).

use super::core::Core;
use super::in_process::InProcessTransport;
use crate::client::{Client, NewSchedule, ScheduleChange, StartOptions};
use crate::data::run::{IdConflictPolicy, RunStatus};
use crate::error::{StoreError, WfError};
use crate::schedule::state::ScheduleState;
use crate::schedule::{format_utc, OverlapPolicy, ScheduleDescription};
use crate::store::{ScheduleRow, ScheduleUpdate};
use std::sync::Arc;

/// How many times an operation retries a save that lost a race with another change.
const SAVE_ATTEMPTS: usize = 10;

/// Handles every due schedule (called by the time keeper).
pub(crate) async fn process_due(core: &Arc<Core>, now: i64) {
    let due = match core.store.admin().due_schedules(now, 256).await {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(error = %e, "reading due schedules failed");
            return;
        }
    };
    let scheduler = Scheduler::new(core);
    for row in due {
        if super::batcher::is_batch_row(&row.schedule_id) {
            if let Err(e) = super::batcher::claim(core, row, now).await {
                tracing::warn!(error = %e, "claiming a batch failed");
            }
            continue;
        }
        if let Err(e) = scheduler.process_one(row, now).await {
            tracing::warn!(error = %e, "processing a schedule failed");
        }
    }
}

/// Carries out schedules on one engine.
pub(crate) struct Scheduler<'a> {
    core: &'a Arc<Core>,
    /// Starts and cancels actions through this engine's own client.
    client: Client,
}

impl<'a> Scheduler<'a> {
    pub fn new(core: &'a Arc<Core>) -> Self {
        Scheduler {
            core,
            client: Client::from_transport(Arc::new(InProcessTransport::new(core.clone()))),
        }
    }

    /// Creates a schedule.
    pub async fn create(&self, schedule_id: &str, new: NewSchedule) -> Result<(), WfError> {
        new.spec.check().map_err(WfError::InvalidArgument)?;
        let catalog = &self.core.catalog;
        match catalog.get(&new.action.workflow_type) {
            Some(def) => def.check_input(&new.action.input)?,
            // A client-only engine (`wf schedule create --db`) knows no workflow type: the
            // engine that fires the schedule checks the input as it starts each run.
            None if !self.core.config.run_workers => {}
            None => {
                catalog.definition(&new.action.workflow_type)?;
            }
        }
        let now = self.core.now_ms();
        let state = ScheduleState::new(new.spec, new.action, new.policies, now);
        let row = ScheduleRow {
            schedule_id: schedule_id.to_string(),
            data: state.encode()?,
            version: 1,
            next_check_ms: state.next_check(now),
        };
        self.core
            .store
            .admin()
            .create_schedule(row)
            .await
            .map_err(|e| match e {
                StoreError::ScheduleExists(id) => {
                    WfError::InvalidArgument(format!("a schedule with id {id:?} already exists"))
                }
                other => other.into(),
            })?;
        self.core.wake.timer.notify_one();
        Ok(())
    }

    /// Describes a schedule.
    pub async fn describe(&self, schedule_id: &str) -> Result<ScheduleDescription, WfError> {
        self.describe_row(self.row(schedule_id).await?).await
    }

    /// Every schedule, described, by id.
    pub async fn list(&self) -> Result<Vec<ScheduleDescription>, WfError> {
        let rows = self.core.store.admin().list_schedules().await?;
        let mut out = Vec::with_capacity(rows.len());
        // (Batches keep their rows in the same table, under ids no schedule can have.)
        for row in rows
            .into_iter()
            .filter(|r| !super::batcher::is_batch_row(&r.schedule_id))
        {
            out.push(self.describe_row(row).await?);
        }
        Ok(out)
    }

    /// Deletes a schedule (its running actions go on).
    pub async fn delete(&self, schedule_id: &str) -> Result<(), WfError> {
        if super::batcher::is_batch_row(schedule_id) {
            return Err(not_found(schedule_id));
        }
        if self.core.store.admin().delete_schedule(schedule_id).await? {
            Ok(())
        } else {
            Err(not_found(schedule_id))
        }
    }

    /// Pauses, unpauses or triggers a schedule, retrying a save that lost a race.
    pub async fn change(&self, schedule_id: &str, change: ScheduleChange) -> Result<(), WfError> {
        for _ in 0..SAVE_ATTEMPTS {
            let row = self.row(schedule_id).await?;
            let mut st = ScheduleState::decode(&row.data)?;
            let now = self.core.now_ms();
            match &change {
                ScheduleChange::Pause(note) => {
                    st.paused = true;
                    st.note = note.clone();
                }
                ScheduleChange::Unpause(note) => {
                    st.paused = false;
                    st.note = note.clone();
                    st.processed_until_ms = now;
                }
                ScheduleChange::Trigger => {
                    self.refresh_active(&mut st).await?;
                    self.take_action(&mut st, now).await;
                    self.drain_buffer(&mut st).await;
                }
            }
            if self.save(&row, &st, now).await? {
                return Ok(());
            }
        }
        Err(WfError::Conflict(format!(
            "schedule {schedule_id:?} kept changing; try again"
        )))
    }

    async fn row(&self, schedule_id: &str) -> Result<ScheduleRow, WfError> {
        if super::batcher::is_batch_row(schedule_id) {
            return Err(not_found(schedule_id));
        }
        self.core
            .store
            .admin()
            .get_schedule(schedule_id)
            .await?
            .ok_or_else(|| not_found(schedule_id))
    }

    /// Saves a changed schedule (version-checked) and tells the time keeper, whose next
    /// wake-up may have moved.
    async fn save(&self, row: &ScheduleRow, st: &ScheduleState, now: i64) -> Result<bool, WfError> {
        let saved = self.store_state(row, st, now).await?;
        self.core.wake.timer.notify_one();
        Ok(saved)
    }

    /// Writes a schedule's new state if its version is still `row`'s; false if it changed.
    async fn store_state(
        &self,
        row: &ScheduleRow,
        st: &ScheduleState,
        now: i64,
    ) -> Result<bool, WfError> {
        let (data, next) = (st.encode()?, st.next_check(now));
        let store = &self.core.store;
        Ok(store
            .admin()
            .update_schedule(ScheduleUpdate {
                schedule_id: row.schedule_id.clone(),
                expected_version: row.version,
                data,
                next_check_ms: next,
            })
            .await?)
    }

    async fn describe_row(&self, row: ScheduleRow) -> Result<ScheduleDescription, WfError> {
        let mut st = ScheduleState::decode(&row.data)?;
        self.refresh_active(&mut st).await?;
        Ok(st.describe(row.schedule_id, self.core.now_ms()))
    }

    /// Carries out a due schedule. Engines sharing a store race for it: the due fire times
    /// are first claimed by a version-checked save, and only the engine whose save won starts
    /// their actions, then records them (a second save). Fire times claimed by an engine that
    /// crashed before recording them are carried out by the next pass, which starts only those
    /// whose workflow id has no run yet.
    async fn process_one(&self, row: ScheduleRow, now: i64) -> Result<(), WfError> {
        let mut st = ScheduleState::decode(&row.data)?;
        if !st.paused {
            let due = st.take_due_fires(now);
            st.claimed.extend(due);
            if !st.claimed.is_empty() || !st.buffered.is_empty() {
                if !self.store_state(&row, &st, now).await? {
                    tracing::debug!(schedule_id = %row.schedule_id, "another engine carries out this schedule's due actions");
                    return Ok(());
                }
                let row = ScheduleRow {
                    version: row.version + 1,
                    ..row
                };
                self.refresh_active(&mut st).await?;
                for fire_ms in std::mem::take(&mut st.claimed) {
                    let workflow_id = action_id(&st, fire_ms);
                    if self.core.store.get_run(&workflow_id, None).await?.is_some() {
                        st.started(fire_ms, workflow_id);
                    } else {
                        self.take_action(&mut st, fire_ms).await;
                    }
                }
                self.drain_buffer(&mut st).await;
                if !self.store_state(&row, &st, now).await? {
                    tracing::debug!(schedule_id = %row.schedule_id, "schedule changed meanwhile; it is looked at again");
                }
                return Ok(());
            }
        }
        // The time keeper computes its next wake-up right after this pass: no need to tell it.
        if !self.store_state(&row, &st, now).await? {
            tracing::debug!(schedule_id = %row.schedule_id, "schedule changed meanwhile; it is looked at again");
        }
        Ok(())
    }

    /// Keeps only the actions still running.
    async fn refresh_active(&self, st: &mut ScheduleState) -> Result<(), WfError> {
        let mut still = Vec::with_capacity(st.active.len());
        for id in std::mem::take(&mut st.active) {
            if let Some(run) = self.core.store.get_run(&id, None).await? {
                if run.status == RunStatus::Running {
                    still.push(id);
                }
            }
        }
        st.active = still;
        Ok(())
    }

    /// Starts the action for `fire_ms` (idempotently: its workflow id is derived from it).
    async fn start(&self, st: &mut ScheduleState, fire_ms: i64) {
        let workflow_id = action_id(st, fire_ms);
        let options = StartOptions {
            id_conflict: IdConflictPolicy::UseExisting,
            task_queue: st.action.task_queue.clone(),
            ..StartOptions::default()
        };
        let started = self
            .client
            .start_raw(
                &workflow_id,
                &st.action.workflow_type,
                st.action.input.clone(),
                options,
            )
            .await;
        match started {
            Ok(_) => st.started(fire_ms, workflow_id),
            Err(e) => st.last_error = Some(format!("starting {workflow_id}: {e}")),
        }
    }

    /// Applies the overlap policy to an action due at `fire_ms`.
    async fn take_action(&self, st: &mut ScheduleState, fire_ms: i64) {
        let busy = !st.active.is_empty() || !st.buffered.is_empty();
        match st.policies.overlap {
            OverlapPolicy::AllowAll => self.start(st, fire_ms).await,
            _ if !busy => self.start(st, fire_ms).await,
            OverlapPolicy::Skip => st.skipped += 1,
            OverlapPolicy::BufferOne => {
                if st.buffered.is_empty() {
                    st.buffered.push_back(fire_ms);
                } else {
                    st.skipped += 1;
                }
            }
            OverlapPolicy::BufferAll => st.buffered.push_back(fire_ms),
            OverlapPolicy::CancelOther => {
                for id in st.active.clone() {
                    if let Err(e) = self
                        .client
                        .cancel(&id, "cancelled by its schedule's next action")
                        .await
                    {
                        tracing::debug!(workflow_id = %id, error = %e, "cancelling an overlapping action");
                    }
                }
                st.buffered.clear();
                st.buffered.push_back(fire_ms);
            }
        }
    }

    /// Starts buffered actions while nothing runs.
    async fn drain_buffer(&self, st: &mut ScheduleState) {
        while st.active.is_empty() {
            let Some(fire_ms) = st.buffered.pop_front() else {
                break;
            };
            self.start(st, fire_ms).await;
        }
    }
}

/// The workflow id of a schedule's action for `fire_ms`.
fn action_id(st: &ScheduleState, fire_ms: i64) -> String {
    format!("{}-{}", st.action.workflow_id_prefix, format_utc(fire_ms))
}

fn not_found(schedule_id: &str) -> WfError {
    WfError::Unknown {
        kind: "schedule",
        name: schedule_id.to_string(),
        hint: String::new(),
    }
}
