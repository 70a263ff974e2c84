//! Worker versioning: each task queue's current build, the counts operators drain old builds
//! by, moving a run to another build, and what a workflow task records of its build.
//!
//! A run's `build_id` column says which engines take its workflow tasks (`None`: any): the
//! lease query compares it with the poller's build on the row it reads anyway. A new run gets
//! its queue's current build; its first task fixes its behaviour (and a pinned run's build
//! if it had none); making a build current moves the runs that follow it.

use super::tx::{RunVersioning, Tx};
use crate::data::run::RunStatus;
use crate::data::versioning::{BuildIdStatus, VersioningBehavior, UNVERSIONED};
use crate::error::StoreError;
use crate::store::records::{RunRecord, TaskBuild};
use std::collections::BTreeMap;

/// [`StoreAdmin::set_current_build`](crate::store::StoreAdmin::set_current_build).
pub(crate) async fn set_current_build<X: Tx>(
    tx: &mut X,
    task_queue: String,
    build_id: String,
) -> Result<(), StoreError> {
    tx.put_current_build(&task_queue, &build_id).await?;
    tx.route_to_build(&task_queue, &build_id).await
}

/// [`StoreAdmin::build_ids`](crate::store::StoreAdmin::build_ids).
pub(crate) async fn build_ids<X: Tx>(
    tx: &mut X,
    task_queue: Option<String>,
) -> Result<Vec<BuildIdStatus>, StoreError> {
    let queue = task_queue.as_deref();
    let mut builds: BTreeMap<String, BuildIdStatus> = BTreeMap::new();
    fn entry(builds: &mut BTreeMap<String, BuildIdStatus>, build_id: String) -> &mut BuildIdStatus {
        builds
            .entry(build_id.clone())
            .or_insert_with(|| BuildIdStatus {
                build_id,
                ..BuildIdStatus::default()
            })
    }
    for (queue, build_id) in tx.current_builds(queue).await? {
        entry(&mut builds, build_id).current_for.push(queue);
    }
    for (build_id, versioning, count) in tx.count_by_build(queue).await? {
        let b = entry(&mut builds, build_id);
        match versioning.as_deref().and_then(VersioningBehavior::parse) {
            Some(VersioningBehavior::Pinned) => b.pinned += count,
            Some(VersioningBehavior::AutoUpgrade) => b.auto_upgrade += count,
            // No task yet (an unversioned run has no build: counted here if a store had one).
            None => b.not_started += count,
        }
    }
    Ok(builds.into_values().collect())
}

/// [`StoreAdmin::move_to_build`](crate::store::StoreAdmin::move_to_build).
pub(crate) async fn move_to_build<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    build_id: String,
) -> Result<RunRecord, StoreError> {
    let Some(run) = tx.latest_run(&workflow_id).await? else {
        return Err(StoreError::NotFound {
            workflow_id,
            run_id: None,
        });
    };
    let run = run.record;
    if run.status != RunStatus::Running {
        return Err(StoreError::RunFinished {
            workflow_id,
            run_id: run.run_id,
            status: run.status,
        });
    }
    tx.set_run_build(&run.run_id, &build_id).await?;
    Ok(RunRecord {
        build_id: Some(build_id),
        ..run
    })
}

/// What a workflow task of an engine with `build` (build id, the type's behaviour there;
/// `None`: no build id) records on its run.
pub(crate) fn task_versioning(build: &Option<TaskBuild>) -> RunVersioning<'_> {
    match build {
        None => RunVersioning {
            behavior: UNVERSIONED,
            build_id: None,
        },
        Some(build) => RunVersioning {
            behavior: build.behavior.as_str(),
            build_id: (build.behavior == VersioningBehavior::Pinned)
                .then_some(build.build_id.as_str()),
        },
    }
}

/// A `Conflict` unless an engine of `build` may run a task of `run`: the run has no build, or
/// this one. Leases check it in their query; a commit without a lease checks it here.
pub(crate) fn check_build(run: &RunRecord, build: &Option<TaskBuild>) -> Result<(), StoreError> {
    let Some(required) = &run.build_id else {
        return Ok(());
    };
    let mine = build.as_ref().map(|b| b.build_id.as_str());
    if mine == Some(required.as_str()) {
        return Ok(());
    }
    Err(StoreError::conflict(
        &run.run_id,
        format!(
            "the run is on build {required:?}, and this engine's build is {}; an engine of \
             build {required:?} runs it (or move it with Client::move_to_build)",
            mine.map_or("unset".to_string(), |b| format!("{b:?}"))
        ),
    ))
}
