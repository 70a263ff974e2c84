//! Which user payloads an [`Operation`] and an [`Outcome`] carry (for the payload codec).

use super::*;

impl HasPayloads for Operation {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        use Operation::*;
        // Exhaustive on purpose: a new operation must say whether it carries user payloads.
        match self {
            StartRun(req) => req.for_each_payload(f),
            StartRunWithTask { start, first } => {
                start.for_each_payload(f)?;
                first.for_each_payload(f)
            }
            Deliver(d) | DeliverDurable(d) => d.message.for_each_payload(f),
            CommitWorkflowTask(c) => c.for_each_payload(f),
            HeartbeatActivity { details, .. } => details.for_each_payload(f),
            ResolveActivity { resolution, .. } => resolution.for_each_payload(f),
            CreateSchedule(row) => row.for_each_payload(f),
            UpdateSchedule(update) => f(&mut update.data),
            AppendStream { value, .. } => f(value),
            // Failures, filters, ids and builds carry none.
            PollWorkflowTasks(_)
            | LeaseRun(_)
            | FailWorkflowTask { .. }
            | ReleaseWorkflowTask { .. }
            | PollActivityTasks(_)
            | RetryActivity { .. }
            | HoldActivityForCompletion { .. }
            | ReleaseActivity(_)
            | CurrentAttempts(_)
            | ExpiredActivities { .. }
            | FireDueTimers { .. }
            | NextWakeup { .. }
            | GetRun { .. }
            | RunLimits { .. }
            | ReadHistory { .. }
            | PendingMessages { .. }
            | GetUpdate { .. }
            | PendingUpdates { .. }
            | PendingActivities { .. }
            | Terminate { .. }
            | Close
            | ListRuns(_)
            | RunSearch(_)
            | CountRuns(_)
            | PauseRun { .. }
            | UnpauseRun { .. }
            | RunPauses(_)
            | LatestRunPaused { .. }
            | CountClosedRuns { .. }
            | PurgeClosedRuns { .. }
            | ResetRun(_)
            | DeleteRun { .. }
            | RepairOrigin { .. }
            | GetSchedule { .. }
            | ListSchedules
            | DeleteSchedule { .. }
            | DueSchedules { .. }
            | RegisterEngine(_)
            | RenewEngine { .. }
            | RemoveEngine { .. }
            | LiveEngines { .. }
            | SetCurrentBuild { .. }
            | BuildIds { .. }
            | MoveToBuild { .. }
            | SetFlowLimit { .. }
            | FlowLimits
            | ReadFlowUsage { .. }
            | RemoveFlowLimit { .. }
            | SetWorkflowQueue { .. }
            | WorkflowQueues
            | RemoveWorkflowQueue { .. }
            | AdmitQueued { .. }
            | QueueSpot { .. }
            | ReadQueueUsage { .. }
            | QueueSpots { .. }
            | ReadStream { .. }
            | ListStreams { .. }
            | ReadEvent { .. }
            | ReadFeed(..) => Ok(()),
        }
    }
}

impl HasPayloads for Outcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        use Outcome::*;
        match self {
            Started(outcome) => outcome.for_each_payload(f),
            StartedWithTask(StartWithTask { start, first_task }) => {
                start.for_each_payload(f)?;
                match first_task {
                    Some(Ok(run)) => run.for_each_payload(f),
                    _ => Ok(()),
                }
            }
            Delivered(outcome) => outcome.for_each_payload(f),
            WorkflowTasks(tasks) => tasks.for_each_payload(f),
            WorkflowTask(task) => task.for_each_payload(f),
            Run(run) => run.for_each_payload(f),
            Committed(committed) => committed.run.for_each_payload(f),
            MaybeRun(run) => run.for_each_payload(f),
            RunPaused(run) => match run {
                Some((run, _)) => run.for_each_payload(f),
                None => Ok(()),
            },
            Runs(runs) => runs.for_each_payload(f),
            ActivityTasks(tasks) => tasks.for_each_payload(f),
            ActivityLeases(leases) => leases.tasks.for_each_payload(f),
            History(events) => events.for_each_payload(f),
            Pending(pending) => pending.for_each_payload(f),
            Update(update) => update.for_each_payload(f),
            Updates(updates) => updates.for_each_payload(f),
            Searches(searches) => searches.for_each_payload(f),
            Schedule(row) => row.for_each_payload(f),
            Schedules(rows) => rows.for_each_payload(f),
            StreamPage(Some(page)) => page
                .entries
                .iter_mut()
                .try_for_each(|e| e.value.for_each_payload(f)),
            EventValue(value) => value.for_each_payload(f),
            StreamPage(None) | StreamAppended(_) => Ok(()),
            // Run limits and builds carry no user payload.
            Unit(_) | Bool(_) | Bools(_) | FiredTimers(_) | Time(_) | Limits(_) | Engines(_)
            | RunIds(_) | Count(_) | Builds(_) | Origin(_) | Pauses(_) | FlowLimits(_)
            | FlowUsages(_) | WorkflowQueues(_) | QueueAdmission(_) | QueueSpot(_)
            | QueueUsages(_) | QueueSpots(_) | StreamList(_) | FeedPage(_) => Ok(()),
        }
    }
}
