//! Wake-ups between engines on PostgreSQL that cannot poke each other's sockets (engines on
//! other machines): the store's `LISTEN/NOTIFY` alone brings a client-only engine's update to
//! the worker at once, though both poll only once a minute. Skipped (loudly) without
//! `WF_POSTGRES_URL`.

mod common;

use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;

/// Far longer than the test may take: a poll never stands in for a wake-up.
const NO_POLL: Duration = Duration::from_secs(60);
/// The failure detector.
const LIMIT: Duration = Duration::from_secs(10);

#[derive(Default)]
pub struct Tally {
    count: u64,
}

#[workflow]
impl Tally {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u64, WorkflowError> {
        ctx.wait_condition(|s| s.count >= 100).await;
        Ok(ctx.state(|s| s.count))
    }

    #[update]
    fn add(&mut self, by: u64) -> Result<u64, UpdateError> {
        self.count += by;
        Ok(self.count)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_from_another_machines_client_reaches_the_worker_through_notify() {
    if !postgres_available() {
        return;
    }
    let (url, options) = postgres_schema("pg_wakeups");
    let engine = || {
        Engine::builder()
            .postgres_with(url.clone(), options.clone())
            .poll_interval(NO_POLL)
            .liveness_lease(NO_POLL)
            .workflow::<Tally>()
    };
    let worker = engine().build().await.unwrap();
    worker.client().start::<Tally>("t", ()).await.unwrap();
    // As if the worker were on another machine: its socket address is unknown to the client.
    let db = wf_postgres::connect_raw(&url).await.unwrap();
    let blanked = db
        .execute(
            &format!("UPDATE {}.engines SET wake_address = NULL", options.schema),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(blanked, 1, "the worker is registered");
    let client = engine().client_only().build().await.unwrap();
    // Let the worker go idle: its own look at the store after the start is over.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let h = client.client().handle::<Tally>("t");
    for i in 1..=3u64 {
        let v = tokio::time::timeout(LIMIT, h.add(1))
            .await
            .unwrap_or_else(|_| {
                panic!("update {i}: not within {LIMIT:?} though the poll is {NO_POLL:?}")
            })
            .unwrap();
        assert_eq!(v, i);
    }
}
