//! How a SQLite store is set up.

use std::time::Duration;

/// How [`SqliteStore::open_with`](super::SqliteStore::open_with) sets up the database.
///
/// ```
/// use wf_core::store::SqliteOptions;
/// let fast_but_not_crash_safe = SqliteOptions { synchronous_full: false, ..Default::default() };
/// # let _ = fast_but_not_crash_safe;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// `synchronous=FULL` (the default): a commit survives power loss. `false` gives
    /// `synchronous=NORMAL`: in WAL mode the database stays consistent, but the last commits
    /// may be lost on power loss (not on a process crash).
    pub synchronous_full: bool,
    /// How long a connection waits for a lock held by another process before failing.
    pub busy_timeout: Duration,
    /// Most requests folded into one write transaction.
    pub max_batch: usize,
    /// Reader threads (each with its own connection); at least one is started.
    pub readers: usize,
    /// Whether the writer looks for the next request for up to 200 µs after a lone one before
    /// it parks (default `true`): requests that come one at a time then find it awake, which
    /// saves a thread wake-up each (tens of microseconds on a virtual machine) for that much
    /// busy CPU. An engine built with `poll_when_quiet(false)` turns it off.
    pub poll_when_quiet: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous_full: true,
            busy_timeout: Duration::from_secs(5),
            max_batch: 512,
            readers: 2,
            poll_when_quiet: true,
        }
    }
}
