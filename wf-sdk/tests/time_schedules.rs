//! Schedules: interval and calendar specs, every overlap policy, the catch-up window after an
//! outage, pause/unpause/trigger/delete, list and describe. All on the test clock.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::schedule::{
    CalendarSpec, OverlapPolicy, ScheduleAction, SchedulePolicies, ScheduleSpec,
};

/// Runs until told it is done.
#[derive(Default)]
pub struct Ticket {
    done: bool,
}

#[workflow]
impl Ticket {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, label: String) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(label)
    }

    #[signal]
    fn done(&mut self) {
        self.done = true;
    }
}

const HOUR: Duration = Duration::from_secs(3600);

struct Setup {
    engine: Engine,
    clock: TestClock,
}

async fn setup(backend: Backend, tag: &str) -> Setup {
    let clock = TestClock::new();
    let engine = builder(backend, tag)
        .clock(clock.clone())
        .workflow::<Ticket>()
        .build()
        .await
        .unwrap();
    Setup { engine, clock }
}

fn hourly(policy: OverlapPolicy) -> (ScheduleSpec, ScheduleAction, SchedulePolicies) {
    (
        ScheduleSpec::every(HOUR),
        ScheduleAction::start::<Ticket>("ticket", &"hourly".to_string()).unwrap(),
        SchedulePolicies {
            overlap: policy,
            ..Default::default()
        },
    )
}

/// Advances the clock and waits until the schedule has taken `actions` actions in all.
async fn tick(
    s: &Setup,
    id: &str,
    by: Duration,
    actions: usize,
) -> wf_sdk::schedule::ScheduleDescription {
    s.clock.advance(by);
    let h = s.engine.client().schedules().handle(id);
    eventually("the schedule to act", || async {
        let d = h.describe().await.ok()?;
        (d.recent_actions.len() >= actions).then_some(d)
    })
    .await
}

async fn finish(s: &Setup, workflow_id: &str) {
    let h = s.engine.client().handle::<Ticket>(workflow_id);
    h.done().await.unwrap();
    h.result().await.unwrap();
}

async fn skip_policy_skips_while_an_action_runs(backend: Backend) {
    let s = setup(backend, "skip").await;
    let (spec, action, policies) = hourly(OverlapPolicy::Skip);
    s.engine
        .client()
        .schedules()
        .create("hourly", spec, action, policies)
        .await
        .unwrap();
    let d = tick(&s, "hourly", HOUR, 1).await;
    assert_eq!(
        d.recent_actions[0].workflow_id,
        "ticket-2026-01-01T01:00:00Z"
    );
    s.clock.advance(HOUR);
    let d = eventually("the skip", || async {
        let d = s
            .engine
            .client()
            .schedules()
            .handle("hourly")
            .describe()
            .await
            .ok()?;
        (d.skipped == 1).then_some(d)
    })
    .await;
    assert_eq!(d.recent_actions.len(), 1);
    finish(&s, "ticket-2026-01-01T01:00:00Z").await;
    let d = tick(&s, "hourly", HOUR, 2).await;
    assert_eq!(
        d.recent_actions[1].workflow_id,
        "ticket-2026-01-01T03:00:00Z"
    );
    assert_eq!(d.running, vec!["ticket-2026-01-01T03:00:00Z".to_string()]);
}

async fn buffer_policies_start_buffered_actions_in_turn(backend: Backend) {
    for (policy, expected_starts, expected_skipped) in [
        (OverlapPolicy::BufferOne, 2, 1),
        (OverlapPolicy::BufferAll, 3, 0),
    ] {
        let s = setup(backend, "buffer").await;
        let (spec, action, policies) = hourly(policy);
        let schedules = s.engine.client().schedules();
        schedules.create("b", spec, action, policies).await.unwrap();
        tick(&s, "b", HOUR, 1).await;
        // Two more fires while the first action runs, each handled in its hour (an outage
        // longer than the catch-up window would drop them instead).
        let mut d = None;
        for handled in 1..=2usize {
            s.clock.advance(HOUR);
            d = Some(
                eventually("a fire handled", || async {
                    let d = schedules.handle("b").describe().await.ok()?;
                    (d.buffered + d.skipped as usize == handled).then_some(d)
                })
                .await,
            );
        }
        let d = d.expect("two fires");
        assert_eq!(d.skipped, expected_skipped, "{policy:?}");
        // Finishing the running action lets the buffered ones start, one at a time.
        let mut started = d.recent_actions.len();
        while started < expected_starts {
            let running = d_running(&schedules).await;
            finish(&s, &running).await;
            s.clock.advance(Duration::from_secs(1));
            started = eventually("the next buffered start", || async {
                let d = schedules.handle("b").describe().await.ok()?;
                (d.recent_actions.len() > started).then_some(d.recent_actions.len())
            })
            .await;
        }
        let d = schedules.handle("b").describe().await.unwrap();
        assert_eq!(d.recent_actions.len(), expected_starts, "{policy:?}");
        assert_eq!(d.buffered, 0);
    }
}

async fn d_running(schedules: &wf_sdk::schedule::Schedules) -> String {
    eventually("a running action", || async {
        let d = schedules.handle("b").describe().await.ok()?;
        d.running.first().cloned()
    })
    .await
}

async fn allow_all_and_cancel_other(backend: Backend) {
    let s = setup(backend, "allow-cancel").await;
    let schedules = s.engine.client().schedules();
    let (spec, action, policies) = hourly(OverlapPolicy::AllowAll);
    schedules
        .create("all", spec, action.clone(), policies)
        .await
        .unwrap();
    tick(&s, "all", HOUR, 1).await;
    let d = tick(&s, "all", HOUR, 2).await;
    assert_eq!(d.running.len(), 2, "both run concurrently: {d:?}");
    schedules.handle("all").delete().await.unwrap();

    let a2 = ScheduleAction::start::<Ticket>("other", &"x".to_string()).unwrap();
    let p2 = SchedulePolicies {
        overlap: OverlapPolicy::CancelOther,
        ..Default::default()
    };
    schedules
        .create("cancel", ScheduleSpec::every(HOUR), a2, p2)
        .await
        .unwrap();
    let d = tick(&s, "cancel", HOUR, 1).await;
    let first = d.recent_actions[0].workflow_id.clone();
    s.clock.advance(HOUR);
    // The running action is cancelled (its wait on a condition is interrupted and it ends as
    // cancelled) and the new one starts after it.
    let h = s.engine.client().handle::<Ticket>(first.clone());
    let r = h.result().await;
    assert!(matches!(r, Err(WfError::Cancelled(_))), "{r:?}");
    let d = tick(&s, "cancel", Duration::from_secs(1), 2).await;
    assert_eq!(d.running.len(), 1);
    assert_ne!(d.running[0], first);
}

async fn catchup_window_bounds_what_an_outage_replays(backend: Backend) {
    let clock = TestClock::new();
    let engines = shared_store(backend, "catchup");
    // Create with a client-only engine: no scheduler runs during the "outage".
    let creator = engines()
        .clock(clock.clone())
        .workflow::<Ticket>()
        .client_only()
        .build()
        .await
        .unwrap();
    let action = ScheduleAction::start::<Ticket>("c", &"c".to_string()).unwrap();
    let policies = SchedulePolicies {
        overlap: OverlapPolicy::AllowAll,
        catchup_window: Duration::from_secs(90 * 60),
    };
    creator
        .client()
        .schedules()
        .create("c", ScheduleSpec::every(HOUR), action, policies)
        .await
        .unwrap();
    clock.advance(5 * HOUR);
    let worker = engines()
        .clock(clock.clone())
        .workflow::<Ticket>()
        .build()
        .await
        .unwrap();
    let d = eventually("the catch-up", || async {
        let d = worker
            .client()
            .schedules()
            .handle("c")
            .describe()
            .await
            .ok()?;
        (d.recent_actions.len() + d.missed_catchup as usize == 5).then_some(d)
    })
    .await;
    let ids: Vec<&str> = d
        .recent_actions
        .iter()
        .map(|a| a.workflow_id.as_str())
        .collect();
    assert_eq!(
        ids,
        vec!["c-2026-01-01T04:00:00Z", "c-2026-01-01T05:00:00Z"]
    );
    assert_eq!(d.missed_catchup, 3);
}

async fn pause_unpause_trigger_delete_list(backend: Backend) {
    let s = setup(backend, "manage").await;
    let schedules = s.engine.client().schedules();
    let action = ScheduleAction::start::<Ticket>("daily", &"d".to_string()).unwrap();
    let h = schedules
        .create(
            "daily",
            ScheduleSpec::calendar(CalendarSpec::daily_at(9, 30)),
            action,
            SchedulePolicies::default(),
        )
        .await
        .unwrap();
    let d = h.describe().await.unwrap();
    assert_eq!(
        d.next_fires[0],
        std::time::UNIX_EPOCH + Duration::from_millis(1_767_225_600_000 + 34_200_000)
    );
    h.pause("maintenance").await.unwrap();
    s.clock.advance(10 * HOUR);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let d = h.describe().await.unwrap();
    assert!(
        d.paused && d.recent_actions.is_empty() && d.note == "maintenance",
        "{d:?}"
    );
    // A manual trigger acts even while paused.
    h.trigger().await.unwrap();
    assert_eq!(h.describe().await.unwrap().recent_actions.len(), 1);
    let triggered = h.describe().await.unwrap().recent_actions[0]
        .workflow_id
        .clone();
    finish(&s, &triggered).await;
    h.unpause("back").await.unwrap();
    // Unpaused at 10:00: the next fire is tomorrow 09:30.
    let d = tick(&s, "daily", Duration::from_secs(23 * 3600 + 30 * 60), 2).await;
    assert!(!d.paused);
    assert_eq!(
        d.recent_actions[1].workflow_id,
        "daily-2026-01-02T09:30:00Z"
    );
    assert_eq!(schedules.list().await.unwrap().len(), 1);
    assert!(matches!(
        schedules
            .create(
                "daily",
                ScheduleSpec::every(HOUR),
                d.action.clone(),
                SchedulePolicies::default()
            )
            .await,
        Err(WfError::InvalidArgument(_))
    ));
    h.delete().await.unwrap();
    assert!(schedules.list().await.unwrap().is_empty());
    assert!(h.describe().await.is_err());
    // A bad spec is refused.
    assert!(matches!(
        schedules
            .create(
                "bad",
                ScheduleSpec::calendar(CalendarSpec::daily_at(25, 0)),
                d.action,
                SchedulePolicies::default()
            )
            .await,
        Err(WfError::InvalidArgument(_))
    ));
}

async fn an_interval_too_long_to_represent_is_refused(backend: Backend) {
    let s = setup(backend, "interval-2-64").await;
    // 2^64 ms: once truncated to a period of 0, which panicked while computing the first fire.
    let spec = ScheduleSpec::every(Duration::new(18_446_744_073_709_551, 616_000_000));
    let action = ScheduleAction::start::<Ticket>("t", &"t".to_string()).unwrap();
    let created = s
        .engine
        .client()
        .schedules()
        .create("too-long", spec, action, SchedulePolicies::default())
        .await;
    let Err(err) = created else {
        panic!("an interval of 2^64 ms was accepted")
    };
    assert!(
        matches!(&err, WfError::InvalidArgument(m) if m.contains("at most")),
        "{err}"
    );
    assert!(s
        .engine
        .client()
        .schedules()
        .list()
        .await
        .unwrap()
        .is_empty());
}

both!(
    an_interval_too_long_to_represent_is_refused,
    skip_policy_skips_while_an_action_runs,
    buffer_policies_start_buffered_actions_in_turn,
    allow_all_and_cancel_other,
    catchup_window_bounds_what_an_outage_replays,
    pause_unpause_trigger_delete_list,
);
