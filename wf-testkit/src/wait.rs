//! Waiting for an outcome in tests: polls with a limit that detects a failure, not a timing
//! assertion.

use std::future::Future;
use std::time::{Duration, Instant};
use wf_sdk::prelude::*;
use wf_sdk::{history::EventKind, workflow::WorkflowDefinition};

/// Polls `f` every 5 ms until it returns `Some`, 2,000 times at most (10 s on an idle machine;
/// a count, not a deadline, so that a loaded machine slows the wait instead of failing it).
pub async fn eventually<T, F, Fut>(what: &str, f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let mut left = 2000u32;
    poll(what, Duration::from_millis(5), f, move || {
        left -= 1;
        left > 0
    })
    .await
}

/// Polls `f` every 10 ms until it returns `Some`, for at most `limit` of real time.
pub async fn eventually_for<T, F, Fut>(limit: Duration, what: &str, f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let until = Instant::now() + limit;
    poll(what, Duration::from_millis(10), f, move || {
        Instant::now() < until
    })
    .await
}

/// Calls `f` until it returns `Some`, sleeping `interval` between calls while `more()` says
/// so; panics naming `what` once it does not.
async fn poll<T, F, Fut>(
    what: &str,
    interval: Duration,
    mut f: F,
    mut more: impl FnMut() -> bool,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(more(), "timed out waiting for {what}");
        tokio::time::sleep(interval).await;
    }
}

/// Waits until the history of `h`'s latest run holds an event matching `pred`.
pub async fn until_recorded<W: WorkflowDefinition>(
    h: &WorkflowHandle<W>,
    what: &str,
    pred: impl Fn(&EventKind) -> bool,
) {
    eventually(what, || async {
        let history = h.history().await.ok()?;
        history.iter().any(|e| pred(&e.kind)).then_some(())
    })
    .await
}
