//! Timers and schedules fire once across processes: three worker engines on one store (one
//! SQLite file, one in-memory store, or one PostgreSQL schema: each engine with connections of
//! its own, as separate processes), each racing to fire what falls due when the shared test
//! clock moves. Every timer fires exactly once, and every scheduled action starts exactly one
//! run.

mod common;
use common::*;
use std::collections::HashSet;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::ListFilter,
    history::EventKind,
    schedule::{OverlapPolicy, ScheduleAction, SchedulePolicies, ScheduleSpec},
};

/// Naps of a minute each.
const NAPS: u32 = 3;
const NAP: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// Sleeps [`NAPS`] times, then returns how many naps it took.
#[derive(Default)]
pub struct Napper;

#[workflow]
impl Napper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        for _ in 0..NAPS {
            ctx.sleep(NAP).await?;
        }
        Ok(NAPS)
    }
}

/// What a schedule starts: returns its label at once.
#[derive(Default)]
pub struct Chime;

#[workflow]
impl Chime {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, label: String) -> Result<String, WorkflowError> {
        Ok(label)
    }
}

async fn timers_and_schedules_fire_once_across_engines(backend: Backend) {
    const RUNS: u32 = 30;
    const CHIMES: usize = 4;
    let clock = TestClock::new();
    let engines = shared_store(backend, "fire-once");
    let mut workers = Vec::new();
    for _ in 0..3 {
        let engine = engines()
            .clock(clock.clone())
            .workflow::<Napper>()
            .workflow::<Chime>()
            .build()
            .await
            .unwrap();
        workers.push(engine);
    }
    let client = workers[0].client();
    let mut handles = Vec::new();
    for i in 0..RUNS {
        handles.push(
            client
                .start::<Napper>(&format!("nap-{i}"), ())
                .await
                .unwrap(),
        );
    }
    let action = ScheduleAction::start::<Chime>("chime", &"ding".to_string()).unwrap();
    // The naps move the clock off the hour: each action is a few minutes late.
    let policies = SchedulePolicies {
        overlap: OverlapPolicy::AllowAll,
        catchup_window: HOUR,
    };
    client
        .schedules()
        .create("hourly", ScheduleSpec::every(HOUR), action, policies)
        .await
        .unwrap();

    // Each nap's timers: every engine sees them fall due at once.
    for nap in 1..=NAPS as usize {
        eventually("every run's next timer", || async {
            for h in &handles {
                let history = h.history().await.ok()?;
                let started = count(&history, |k| matches!(k, EventKind::TimerStarted { .. }));
                (started >= nap).then_some(())?;
            }
            Some(())
        })
        .await;
        clock.advance(NAP);
    }
    for h in &handles {
        assert_eq!(h.result().await.unwrap(), NAPS);
        let history = h.history().await.unwrap();
        let mut fired = Vec::new();
        for e in &history {
            if let EventKind::TimerFired { seq } = &e.kind {
                fired.push(*seq);
            }
        }
        let distinct: HashSet<u32> = fired.iter().copied().collect();
        assert_eq!(fired.len(), NAPS as usize, "timers fired: {fired:?}");
        assert_eq!(
            distinct.len(),
            fired.len(),
            "a timer fired twice: {fired:?}"
        );
    }

    // The schedule's actions: an hour at a time.
    let schedule = client.schedules().handle("hourly");
    for n in 1..=CHIMES {
        clock.advance(HOUR);
        eventually("the schedule's action", || async {
            let d = schedule.describe().await.ok()?;
            (d.recent_actions.len() >= n).then_some(())
        })
        .await;
    }
    // Every engine had its look at the store after the last hour (a second one would show).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let d = schedule.describe().await.unwrap();
    let ids: Vec<&str> = d
        .recent_actions
        .iter()
        .map(|a| a.workflow_id.as_str())
        .collect();
    assert_eq!(ids.len(), CHIMES, "one action an hour: {ids:?}");
    assert_eq!(d.missed_catchup, 0);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), CHIMES, "{ids:?}");
    let chimes = client
        .list(ListFilter {
            workflow_type: Some("Chime".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(chimes.len(), CHIMES, "one run per action: {chimes:?}");
    for id in ids {
        let h = client.handle::<Chime>(id);
        assert_eq!(h.result().await.unwrap(), "ding");
        let history = h.history().await.unwrap();
        let starts = count(&history, |k| matches!(k, EventKind::WorkflowStarted { .. }));
        assert_eq!(starts, 1, "{id}");
    }
    for w in workers {
        w.shutdown().await;
    }
}

both!(timers_and_schedules_fire_once_across_engines);
