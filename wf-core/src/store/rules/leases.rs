//! Workflow task leases: polling ready runs, leasing one run at once, failing and releasing a
//! task, and the checks a commit makes of the lease (its owner, or no live lease at all).

use super::tx::{RunLease, RunRow, TaskQuery, Tx};
use crate::data::run::{RunStatus, TaskFailure};
use crate::error::StoreError;
use crate::store::records::{TaskFilter, WorkflowTask};

/// [`Store::poll_workflow_tasks`](crate::store::Store::poll_workflow_tasks).
pub(crate) async fn poll_workflow_tasks<X: Tx>(
    tx: &mut X,
    worker_id: String,
    now_ms: i64,
    lease_ms: i64,
    max: usize,
    filters: TaskFilter,
) -> Result<Vec<WorkflowTask>, StoreError> {
    let query = TaskQuery {
        now_ms,
        max,
        names: filters.workflow_types.as_deref(),
        queues: filters.task_queues.as_deref(),
        poller: &worker_id,
        build_id: filters.build_id.as_deref(),
        blocked: None,
    };
    let ids = tx.ready_runs(&query).await?;
    let mut tasks = Vec::with_capacity(ids.len());
    for run_id in ids {
        let lease = RunLease {
            run_id: &run_id,
            owner: &worker_id,
            until_ms: now_ms + lease_ms,
            build_id: filters.build_id.as_deref(),
        };
        tx.set_lease(&lease).await?;
        tasks.push(leased_task(tx, &run_id).await?);
    }
    Ok(tasks)
}

/// [`Store::lease_run`](crate::store::Store::lease_run).
pub(crate) async fn lease_run<X: Tx>(
    tx: &mut X,
    run_id: String,
    worker_id: String,
    now_ms: i64,
    lease_ms: i64,
    build_id: Option<String>,
) -> Result<Option<WorkflowTask>, StoreError> {
    let lease = RunLease {
        run_id: &run_id,
        owner: &worker_id,
        until_ms: now_ms + lease_ms,
        build_id: build_id.as_deref(),
    };
    if !tx.lease_if_free(&lease, now_ms).await? {
        return Ok(None);
    }
    Ok(Some(leased_task(tx, &run_id).await?))
}

/// A leased run with its inbox.
async fn leased_task<X: Tx>(tx: &mut X, run_id: &str) -> Result<WorkflowTask, StoreError> {
    let run = tx
        .load_run(run_id)
        .await?
        .ok_or_else(|| StoreError::bug(format!("run {run_id} vanished mid-transaction")))?;
    let messages = tx.inbox(run_id).await?;
    Ok(WorkflowTask {
        run: run.record,
        messages,
    })
}

/// [`Store::fail_workflow_task`](crate::store::Store::fail_workflow_task).
pub(crate) async fn fail_workflow_task<X: Tx>(
    tx: &mut X,
    run_id: String,
    worker_id: String,
    failure: TaskFailure,
) -> Result<(), StoreError> {
    let run = tx
        .load_run(&run_id)
        .await?
        .ok_or_else(|| StoreError::conflict(&run_id, "no such run"))?;
    check_task_owner(&run, &worker_id)?;
    tx.record_task_failure(&run_id, &failure).await
}

/// [`Store::release_workflow_task`](crate::store::Store::release_workflow_task).
pub(crate) async fn release_workflow_task<X: Tx>(
    tx: &mut X,
    run_id: String,
    worker_id: String,
) -> Result<(), StoreError> {
    // A leased run was ready when it was polled, and its ready time only moves earlier while
    // leased: the store makes it ready at once (the trait gives no clock here).
    tx.release_lease(&run_id, &worker_id).await
}

/// A `Conflict` unless the run is running: workflow tasks commit only to running runs.
fn check_running(run: &RunRow) -> Result<(), StoreError> {
    if run.record.status == RunStatus::Running {
        return Ok(());
    }
    Err(StoreError::conflict(
        &run.record.run_id,
        format!("the run is {:?}, not running", run.record.status),
    ))
}

/// Checks that `worker_id` holds the workflow task lease of a running run.
pub(crate) fn check_task_owner(run: &RunRow, worker_id: &str) -> Result<(), StoreError> {
    let run_id = &run.record.run_id;
    check_running(run)?;
    match &run.lease_owner {
        Some(owner) if owner == worker_id => Ok(()),
        Some(owner) => Err(StoreError::conflict(
            run_id,
            format!(
                "worker {worker_id:?} lost the workflow task lease to {owner:?}; drop the task"
            ),
        )),
        None => Err(StoreError::conflict(
            run_id,
            format!("worker {worker_id:?} holds no workflow task lease on this run; drop the task"),
        )),
    }
}

/// Checks that a running run is free of leases (or its lease expired), for a commit without
/// one.
pub(crate) fn check_unleased(run: &RunRow, now_ms: i64) -> Result<(), StoreError> {
    check_running(run)?;
    if let Some(at) = run.record.start_at_ms.filter(|&at| at > now_ms) {
        return Err(StoreError::conflict(
            &run.record.run_id,
            format!("the run's start is delayed until {at} ms; drop the task"),
        ));
    }
    match (&run.lease_owner, run.lease_until) {
        (Some(owner), Some(until)) if until > now_ms => Err(StoreError::conflict(
            &run.record.run_id,
            format!("worker {owner:?} holds the workflow task lease; drop the task"),
        )),
        _ => Ok(()),
    }
}
