//! The engine clock: real time in production, a manually advanced clock in tests (time
//! skipping), so timer and timeout tests take milliseconds.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of time for the engine: timers, timeouts, leases and `ctx.now()`.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    /// Resolves once `now_ms() >= deadline_ms`.
    fn sleep_until(&self, deadline_ms: i64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// Wall-clock time, with tokio timers.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }

    fn sleep_until(&self, deadline_ms: i64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let wait = (deadline_ms - self.now_ms()).max(0) as u64;
        Box::pin(tokio::time::sleep(Duration::from_millis(wait)))
    }
}

/// A clock that only moves when a test calls [`TestClock::advance`]: durable timers, activity
/// timeouts and retry backoffs then fire at once.
///
/// ```
/// # use wf_core::TestClock;
/// let clock = TestClock::new();
/// let t0 = clock.now_ms();
/// clock.advance(std::time::Duration::from_secs(3600));
/// assert_eq!(clock.now_ms() - t0, 3_600_000);
/// ```
#[derive(Clone, Debug)]
pub struct TestClock {
    inner: Arc<TestClockInner>,
}

#[derive(Debug)]
struct TestClockInner {
    now_ms: AtomicI64,
    moved: tokio::sync::Notify,
}

impl Default for TestClock {
    fn default() -> Self {
        Self::new()
    }
}

impl TestClock {
    /// A clock starting at 2026-01-01T00:00:00Z.
    pub fn new() -> Self {
        Self::starting_at(1_767_225_600_000)
    }

    /// A clock starting at `ms` since the Unix epoch.
    pub fn starting_at(ms: i64) -> Self {
        TestClock {
            inner: Arc::new(TestClockInner {
                now_ms: AtomicI64::new(ms),
                moved: tokio::sync::Notify::new(),
            }),
        }
    }

    /// Moves time forward; everything due fires.
    pub fn advance(&self, by: Duration) {
        self.inner
            .now_ms
            .fetch_add(by.as_millis() as i64, Ordering::SeqCst);
        self.inner.moved.notify_waiters();
    }

    /// The current time in ms since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        self.inner.now_ms.load(Ordering::SeqCst)
    }
}

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        TestClock::now_ms(self)
    }

    fn sleep_until(&self, deadline_ms: i64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            loop {
                let moved = self.inner.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if self.now_ms() >= deadline_ms {
                    return;
                }
                moved.await;
            }
        })
    }
}
