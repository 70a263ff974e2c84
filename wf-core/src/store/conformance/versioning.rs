//! Worker versioning: a run on a build is leased (by a poll or by `lease_run`) and committed
//! without a lease only by engines of that build; a current build routes new runs and the
//! runs that follow it, not pinned ones; runs are counted and listed by build; an operator
//! moves a run to another build.

use super::fixtures::*;
use crate::data::versioning::{BuildIdStatus, VersioningBehavior};
use crate::store::{
    Delivery, LeaseRequest, ListFilter, Store, StoreError, TaskBuild, TaskFilter, TaskPoll,
    WorkflowTask,
};
use std::sync::Arc;

/// Polls as an engine of `build` (`None`: no build id) would.
async fn poll_as(store: &dyn Store, build: Option<&str>, now_ms: i64) -> Vec<WorkflowTask> {
    let worker = format!("engine-{}", build.unwrap_or("unversioned"));
    store
        .poll_workflow_tasks(TaskPoll {
            worker_id: String::from(&worker),
            now_ms,
            lease_ms: 10_000,
            max: 10,
            filter: TaskFilter {
                workflow_types: Some(vec!["order".into()]),
                task_queues: Some(vec!["default".into()]),
                build_id: build.map(String::from),
            },
        })
        .await
        .expect("poll")
}

/// Commits `task` as an engine of `build` with `behavior` for the type.
async fn commit_as(
    store: &dyn Store,
    task: &WorkflowTask,
    build: Option<&str>,
    behavior: VersioningBehavior,
    now_ms: i64,
) {
    let worker = format!("engine-{}", build.unwrap_or("unversioned"));
    let mut c = commit_for(task, &worker, now_ms);
    c.build = build.map(|b| TaskBuild {
        build_id: b.to_string(),
        behavior,
    });
    store.commit_workflow_task(c).await.expect("commit");
}

/// Makes the run ready with a signal.
async fn poke(store: &dyn Store, workflow_id: &str, now_ms: i64) {
    store
        .deliver(Delivery::new(workflow_id, signal("go", None), now_ms))
        .await
        .expect("deliver");
}

fn ids(tasks: &[WorkflowTask]) -> Vec<&str> {
    tasks.iter().map(|t| t.run.run_id.as_str()).collect()
}

/// The build a pinned run's first task ran on is the only one that leases it afterwards:
/// polls and `lease_run` by other builds (or by an engine without one) pass it by, and a
/// lease-free commit from another build conflicts. Unversioned runs stay anyone's.
pub async fn a_pinned_run_is_leased_only_by_its_build(store: Arc<dyn Store>) {
    let s = &*store;
    start(s, "pinned", "run-p", T0).await;
    let first = poll_as(s, Some("A"), T0 + 1).await;
    assert_eq!(
        ids(&first),
        ["run-p"],
        "a new run without a build is anyone's"
    );
    commit_as(s, &first[0], Some("A"), VersioningBehavior::Pinned, T0 + 1).await;
    let run = s.get_run("pinned", None).await.unwrap().unwrap();
    assert_eq!(run.build_id.as_deref(), Some("A"));
    assert_eq!(run.versioning, Some(VersioningBehavior::Pinned));

    poke(s, "pinned", T0 + 2).await;
    assert!(poll_as(s, Some("B"), T0 + 3).await.is_empty());
    assert!(poll_as(s, None, T0 + 3).await.is_empty());
    let leased = s
        .lease_run(LeaseRequest {
            run_id: String::from("run-p"),
            worker_id: String::from("engine-B"),
            now_ms: T0 + 3,
            lease_ms: 10_000,
            build_id: Some("B".into()),
        })
        .await
        .unwrap();
    assert!(leased.is_none(), "lease_run by another build: {leased:?}");

    // A lease-free commit by another build (an engine holding the run in memory) conflicts.
    let mut stale = commit_for(&first[0], "engine-B", T0 + 3);
    stale.without_lease = true;
    stale.expected_next_event_id = run.next_event_id;
    stale.consumed_through = None;
    stale.build = Some(TaskBuild {
        build_id: "B".into(),
        behavior: VersioningBehavior::Pinned,
    });
    match s.commit_workflow_task(stale).await {
        Err(StoreError::Conflict { .. }) => {}
        other => panic!("a lease-free commit by another build: {other:?}"),
    }

    let again = poll_as(s, Some("A"), T0 + 4).await;
    assert_eq!(ids(&again), ["run-p"]);
    // Later tasks keep the build, whatever they say.
    commit_as(
        s,
        &again[0],
        Some("A"),
        VersioningBehavior::AutoUpgrade,
        T0 + 4,
    )
    .await;
    let run = s.get_run("pinned", None).await.unwrap().unwrap();
    assert_eq!(run.build_id.as_deref(), Some("A"));
    assert_eq!(run.versioning, Some(VersioningBehavior::Pinned));

    // A run first run by an engine without a build stays anyone's.
    start(s, "free", "run-u", T0 + 5).await;
    let first = poll_as(s, None, T0 + 6).await;
    assert_eq!(ids(&first), ["run-u"]);
    commit_as(s, &first[0], None, VersioningBehavior::Pinned, T0 + 6).await;
    poke(s, "free", T0 + 7).await;
    assert_eq!(ids(&poll_as(s, Some("B"), T0 + 8).await), ["run-u"]);
}

/// Making a build current routes new runs to it and moves the runs that follow it
/// (auto-upgrade ones, and ones that have not run a task yet), never pinned ones; the counts
/// by build show it, lists filter by build, and `move_to_build` moves one run.
pub async fn a_current_build_routes_new_and_auto_upgrade_runs_not_pinned_ones(
    store: Arc<dyn Store>,
) {
    let s = &*store;
    start(s, "pinned", "run-p", T0).await;
    start(s, "auto", "run-a", T0).await;
    start(s, "waiting", "run-w", T0).await;
    let tasks = poll_as(s, Some("A"), T0 + 1).await;
    assert_eq!(tasks.len(), 3);
    for task in &tasks {
        let behavior = match task.run.workflow_id.as_str() {
            "pinned" => VersioningBehavior::Pinned,
            "auto" => VersioningBehavior::AutoUpgrade,
            _ => {
                // Released without a commit: no task has run yet.
                s.release_workflow_task(&task.run.run_id, "engine-A")
                    .await
                    .unwrap();
                continue;
            }
        };
        commit_as(s, task, Some("A"), behavior, T0 + 1).await;
    }

    s.admin().set_current_build("default", "B").await.unwrap();
    start(s, "fresh", "run-f", T0 + 2).await;
    let fresh = s.get_run("fresh", None).await.unwrap().unwrap();
    assert_eq!(
        fresh.build_id.as_deref(),
        Some("B"),
        "a new run starts on the current build"
    );
    let builds = s.admin().build_ids(None).await.unwrap();
    let a = BuildIdStatus {
        build_id: "A".into(),
        current_for: vec![],
        pinned: 1,
        auto_upgrade: 0,
        not_started: 0,
    };
    let b = BuildIdStatus {
        build_id: "B".into(),
        current_for: vec!["default".into()],
        pinned: 0,
        auto_upgrade: 1,
        not_started: 2,
    };
    assert_eq!(builds, [a.clone(), b.clone()]);
    assert_eq!(s.admin().build_ids(Some("other")).await.unwrap(), []);

    let on_b = s
        .admin()
        .list_runs(ListFilter {
            build_id: Some("B".into()),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    let mut on_b: Vec<String> = on_b.into_iter().map(|r| r.run_id).collect();
    on_b.sort();
    assert_eq!(on_b, ["run-a", "run-f", "run-w"]);

    for id in ["pinned", "auto"] {
        poke(s, id, T0 + 3).await;
    }
    let by_a = poll_as(s, Some("A"), T0 + 4).await;
    assert_eq!(ids(&by_a), ["run-p"], "the pinned run stays on A");
    let mut by_b: Vec<&str> = Vec::new();
    let polled_b = poll_as(s, Some("B"), T0 + 4).await;
    by_b.extend(ids(&polled_b));
    by_b.sort();
    assert_eq!(by_b, ["run-a", "run-f", "run-w"]);

    // The operator moves the pinned run to B (its build is gone).
    s.release_workflow_task("run-p", "engine-A").await.unwrap();
    let moved = s.admin().move_to_build("pinned", "B").await.unwrap();
    assert_eq!(moved.build_id.as_deref(), Some("B"));
    assert!(poll_as(s, Some("A"), T0 + 5).await.is_empty());
    for task in polled_b {
        s.release_workflow_task(&task.run.run_id, "engine-B")
            .await
            .unwrap();
    }
    let mut by_b: Vec<String> = poll_as(s, Some("B"), T0 + 6)
        .await
        .into_iter()
        .map(|t| t.run.run_id)
        .collect();
    by_b.sort();
    assert_eq!(by_b, ["run-a", "run-f", "run-p", "run-w"]);
    let drained = s.admin().build_ids(None).await.unwrap();
    assert_eq!(drained.len(), 1, "A runs nothing: {drained:?}");
    assert_eq!(drained[0].pinned, 1);

    match s.admin().move_to_build("nobody", "B").await {
        Err(StoreError::NotFound { .. }) => {}
        other => panic!("moving an unknown workflow: {other:?}"),
    }
}
