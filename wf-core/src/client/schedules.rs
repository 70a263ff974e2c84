//! Schedules as a client sees them: create, list, and handles to pause, unpause, trigger,
//! delete and describe one. The engine that owns the store runs them (see the runtime's
//! scheduler).

use super::transport::{NewSchedule, ScheduleChange};
use super::Client;
use crate::error::WfError;
use crate::schedule::{ScheduleAction, ScheduleDescription, SchedulePolicies, ScheduleSpec};

/// Schedules of one store: `client.schedules()`.
#[derive(Clone, Debug)]
pub struct Schedules {
    client: Client,
}

/// A handle on one schedule.
#[derive(Clone, Debug)]
pub struct ScheduleHandle {
    client: Client,
    schedule_id: String,
}

impl Schedules {
    pub(super) fn new(client: Client) -> Self {
        Schedules { client }
    }

    /// Creates a schedule; `InvalidArgument` for a bad spec or an id that exists. The input is
    /// checked against the workflow type's when this engine registers the type; an engine
    /// that runs no workflows (`client_only`) stores a type it does not know, for the engines
    /// that run it.
    pub async fn create(
        &self,
        schedule_id: impl Into<String>,
        spec: ScheduleSpec,
        action: ScheduleAction,
        policies: SchedulePolicies,
    ) -> Result<ScheduleHandle, WfError> {
        let schedule_id = schedule_id.into();
        let schedule = NewSchedule {
            spec,
            action,
            policies,
        };
        self.client
            .transport()
            .create_schedule(&schedule_id, schedule)
            .await?;
        Ok(self.handle(schedule_id))
    }

    /// A handle on schedule `schedule_id`.
    pub fn handle(&self, schedule_id: impl Into<String>) -> ScheduleHandle {
        ScheduleHandle {
            client: self.client.clone(),
            schedule_id: schedule_id.into(),
        }
    }

    /// Every schedule, described, by id.
    pub async fn list(&self) -> Result<Vec<ScheduleDescription>, WfError> {
        self.client.transport().list_schedules().await
    }
}

impl ScheduleHandle {
    /// The schedule id.
    pub fn schedule_id(&self) -> &str {
        &self.schedule_id
    }

    /// Stops firing until [`unpause`](Self::unpause); fire times while paused are not caught
    /// up.
    pub async fn pause(&self, note: &str) -> Result<(), WfError> {
        self.change(ScheduleChange::Pause(note.to_string())).await
    }

    /// Resumes firing from now.
    pub async fn unpause(&self, note: &str) -> Result<(), WfError> {
        self.change(ScheduleChange::Unpause(note.to_string())).await
    }

    /// Takes an action now (the overlap policy applies), paused or not.
    pub async fn trigger(&self) -> Result<(), WfError> {
        self.change(ScheduleChange::Trigger).await
    }

    /// Deletes the schedule (its running actions go on).
    pub async fn delete(&self) -> Result<(), WfError> {
        self.client
            .transport()
            .delete_schedule(&self.schedule_id)
            .await
    }

    /// Its spec, policies, progress and next fire times.
    pub async fn describe(&self) -> Result<ScheduleDescription, WfError> {
        self.client
            .transport()
            .describe_schedule(&self.schedule_id)
            .await
    }

    async fn change(&self, change: ScheduleChange) -> Result<(), WfError> {
        self.client
            .transport()
            .change_schedule(&self.schedule_id, change)
            .await
    }
}
