//! Writes the engine must not drop on a store failure that may clear (an I/O error, a full
//! disk, a busy database): releasing a workflow task's lease after a failed commit, recording
//! an activity's result or its next attempt. Dropping them would leave a run waiting for a
//! lease or an activity timeout to expire (10 s, 5 min); retrying them makes the run go on as
//! soon as a write succeeds again.

use super::core::Core;
use crate::error::StoreError;
use std::future::Future;
use std::time::Duration;

/// The first pause between tries; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(5);
/// The longest pause between tries: how late a run may go on after the store recovers.
const MAX_PAUSE: Duration = Duration::from_millis(200);

/// Runs `call` until it succeeds, fails with an error a retry cannot help, or the engine
/// stops (then the last error is returned: a crashed or stopping engine leaves the write to
/// the lease expiry, as a dead process would). `what` names the write in the log.
pub(crate) async fn until_durable<T, F, Fut>(
    core: &Core,
    what: &str,
    mut call: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut pause = FIRST_PAUSE;
    let mut tries = 0u32;
    loop {
        let error = match call().await {
            Ok(v) => {
                if tries > 0 {
                    tracing::info!(tries = tries + 1, "{what}: done once the store recovered");
                }
                return Ok(v);
            }
            Err(e) => e,
        };
        if !error.is_retryable() || core.is_shutdown() {
            return Err(error);
        }
        if tries == 0 {
            tracing::warn!(error = %error, "{what} failed; retrying until the store recovers");
        }
        tries += 1;
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}
