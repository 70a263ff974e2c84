//! The schedule operations, carried out by the engine's scheduler once their ids, names and
//! notes passed their limits.

use super::Core;
use crate::client::{NewSchedule, ScheduleChange};
use crate::data::limits::{check_reason, Ident};
use crate::error::WfError;
use crate::runtime::scheduler::Scheduler;
use crate::schedule::ACTION_ID_SUFFIX_BYTES;
use std::sync::Arc;

/// Creates a schedule. Its actions' workflow ids are the prefix and a fire time, so the prefix
/// leaves room for the time under the id limit.
pub(super) async fn create(
    core: &Arc<Core>,
    schedule_id: &str,
    schedule: NewSchedule,
) -> Result<(), WfError> {
    Ident::ScheduleId.check(schedule_id)?;
    let action = &schedule.action;
    Ident::WorkflowType.check(&action.workflow_type)?;
    Ident::WorkflowId.check_prefix(&action.workflow_id_prefix, ACTION_ID_SUFFIX_BYTES)?;
    if let Some(queue) = &action.task_queue {
        Ident::TaskQueue.check(queue)?;
    }
    scheduler(core).create(schedule_id, schedule).await
}

/// Pauses, unpauses or triggers a schedule.
pub(super) async fn change(
    core: &Arc<Core>,
    schedule_id: &str,
    change: ScheduleChange,
) -> Result<(), WfError> {
    if let ScheduleChange::Pause(note) | ScheduleChange::Unpause(note) = &change {
        check_reason("schedule note", note)?;
    }
    scheduler(core).change(schedule_id, change).await
}

/// The engine's scheduler, which reads and writes schedules.
pub(super) fn scheduler(core: &Arc<Core>) -> Scheduler<'_> {
    Scheduler::new(core)
}
