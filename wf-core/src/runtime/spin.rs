//! Every quiet-engine spin in one place. Waking a parked thread costs 20 – 40 µs on a virtual
//! machine, more than most steps take; when steps come one at a time, the threads that will be
//! needed next poll briefly instead of parking. Under load none of this runs (the threads are
//! busy anyway). `EngineBuilder::poll_when_quiet(false)` turns it all off.
//!
//! (The SQLite writer's own spin after a lone request is the store's: see its writer.)

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, Notify};

/// How long the query loop stays awake for the next query after answering one.
pub(crate) const QUERY_AWAKE: Duration = Duration::from_micros(200);

/// How long the loop taking in-memory messages stays awake for the next one after a run's
/// messages were all handled: a caller sending one update or signal after another answers and
/// sends within tens of microseconds, about what waking the parked thread would cost.
pub(crate) const DIRECT_AWAKE: Duration = Duration::from_micros(200);

/// How long a task waits for its commit's answer without parking the thread, when it is the
/// only commit in flight: an answer that arrives to a parked thread costs a wake-up, often
/// more than the commit itself.
const SOLO_COMMIT_SPIN: Duration = Duration::from_millis(1);

/// How long a client waits for a cached query's answer before parking its thread: the answer
/// takes a few microseconds when the worker thread is awake.
const QUERY_ANSWER_SPIN: Duration = Duration::from_micros(50);

/// The next item of `rx`, or `None` once it is closed. While `awake_until` is in the future the
/// thread polls instead of parking, yielding to its other tasks and to the core (the caller's
/// thread may share the core, and would otherwise wait for this loop to give up). A window
/// opened by another task while this one waits is announced on `opened`.
pub(crate) async fn next_awake<T>(
    rx: &mut mpsc::UnboundedReceiver<T>,
    awake_until: impl Fn() -> Option<Instant>,
    opened: Option<&Notify>,
) -> Option<T> {
    loop {
        match rx.try_recv() {
            Ok(item) => return Some(item),
            Err(mpsc::error::TryRecvError::Disconnected) => return None,
            Err(mpsc::error::TryRecvError::Empty) => {
                if awake_until().is_some_and(|t| Instant::now() < t) {
                    std::thread::yield_now();
                    tokio::task::yield_now().await;
                    continue;
                }
                let Some(opened) = opened else {
                    return rx.recv().await;
                };
                tokio::select! {
                    item = rx.recv() => return item,
                    () = opened.notified() => {}
                }
            }
        }
    }
}

/// Awaits `fut`, polling it without parking the thread for up to [`SOLO_COMMIT_SPIN`] while
/// `solo()` holds (it is the only commit in flight), yielding to this thread's other tasks and
/// to the core between polls.
pub(crate) async fn await_solo<T>(
    mut fut: Pin<Box<dyn Future<Output = T> + Send + '_>>,
    solo: impl Fn() -> bool,
) -> T {
    let until = Instant::now() + SOLO_COMMIT_SPIN;
    while Instant::now() < until && solo() {
        let poll = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx)));
        if let Poll::Ready(result) = poll.await {
            return result;
        }
        std::thread::yield_now();
        tokio::task::yield_now().await;
    }
    fut.await
}

/// The answer on `rx`, waited for without parking this thread for up to
/// [`QUERY_ANSWER_SPIN`]; `None` if the sender went away.
pub(crate) async fn answer_soon<T>(mut rx: oneshot::Receiver<T>) -> Option<T> {
    let spin_until = Instant::now() + QUERY_ANSWER_SPIN;
    while Instant::now() < spin_until {
        match rx.try_recv() {
            Ok(answer) => return Some(answer),
            Err(oneshot::error::TryRecvError::Closed) => return None,
            // Yield the CPU: the worker thread may be waiting for this very core.
            Err(oneshot::error::TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
    rx.await.ok()
}
