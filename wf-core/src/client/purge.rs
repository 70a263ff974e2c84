//! Retention on demand: [`Client::purge`] deletes closed runs older than a time, one bounded
//! batch per call; [`Client::purge_closed_before`] purges them all, batch after batch.

use super::Client;
use crate::error::WfError;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Runs a purge call deletes at most, when its request names no batch size: one transaction
/// of this many runs takes milliseconds, so commits queued behind it wait that long at most.
pub const DEFAULT_PURGE_BATCH: usize = 500;

/// A purge of closed runs: see [`Client::purge`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeRequest {
    /// Runs closed (completed, failed, cancelled, terminated, continued as new) before this
    /// time go; running runs never do.
    pub closed_before: SystemTime,
    /// At most this many runs in this call, in one transaction (0: [`DEFAULT_PURGE_BATCH`]).
    pub batch: usize,
    /// Only count the runs that would go; delete nothing.
    pub dry_run: bool,
}

impl PurgeRequest {
    /// Purge runs closed before `closed_before`, one batch of the default size.
    pub fn closed_before(closed_before: SystemTime) -> PurgeRequest {
        PurgeRequest {
            closed_before,
            batch: DEFAULT_PURGE_BATCH,
            dry_run: false,
        }
    }

    /// Purge runs closed more than `age` ago (by this machine's clock).
    pub fn older_than(age: Duration) -> PurgeRequest {
        let now = SystemTime::now();
        PurgeRequest::closed_before(now.checked_sub(age).unwrap_or(UNIX_EPOCH))
    }

    /// The cutoff in engine-clock milliseconds (since the Unix epoch; a time before the epoch
    /// is the epoch, before which nothing closed).
    pub fn closed_before_ms(&self) -> i64 {
        let since = self.closed_before.duration_since(UNIX_EPOCH);
        since.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// The batch size to use ([`DEFAULT_PURGE_BATCH`] for 0).
    pub fn batch_size(&self) -> usize {
        if self.batch == 0 {
            DEFAULT_PURGE_BATCH
        } else {
            self.batch
        }
    }
}

/// What a purge call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PurgeReport {
    /// Runs purged (for a dry run: every run that a purge would delete).
    pub runs: u64,
    /// Whether more runs closed before the time may remain: call again. Always `false` for a
    /// dry run.
    pub more: bool,
}

impl Client {
    /// Purges one batch of closed runs older than `request.closed_before` (at most
    /// `request.batch` runs, oldest close first, in one transaction), or with `dry_run` counts
    /// every run that would go. A purged run is gone with its history, its updates and its
    /// dedupe ids: describe, history, signals and queries answer `NotFound`, and its workflow id
    /// may be started again. Running runs are never purged. See
    /// [`purge_closed_before`](Self::purge_closed_before) to purge them all.
    ///
    /// Dedupe ids (signal ids, update ids, the ids of starts with messages) live as long as
    /// their run is retained, across continue-as-new as long as a run of the chain is: a retry
    /// with the same id after its run was purged is applied again.
    pub async fn purge(&self, request: PurgeRequest) -> Result<PurgeReport, WfError> {
        self.transport.purge(request).await
    }

    /// Purges every run closed before `closed_before`, batch after batch (each its own
    /// transaction, so that the commits of live runs go on between them); returns how many
    /// went.
    ///
    /// ```no_run
    /// # async fn demo(client: wf_core::Client) -> Result<(), wf_core::WfError> {
    /// use std::time::{Duration, SystemTime};
    /// let month_ago = SystemTime::now() - Duration::from_secs(30 * 86_400);
    /// let purged = client.purge_closed_before(month_ago).await?;
    /// println!("{purged} runs purged");
    /// # Ok(()) }
    /// ```
    pub async fn purge_closed_before(&self, closed_before: SystemTime) -> Result<u64, WfError> {
        let request = PurgeRequest::closed_before(closed_before);
        let mut total = 0;
        loop {
            let report = self.purge(request.clone()).await?;
            total += report.runs;
            if !report.more {
                return Ok(total);
            }
            tokio::task::yield_now().await;
        }
    }
}
