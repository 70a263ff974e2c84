//! The deterministic executor: polls a run's main method and its live handlers, in a fixed
//! order, on the calling thread, until every one of them is blocked.
//!
//! There is no tokio here. Each task has its own waker flag; a round polls every woken handler
//! (in creation order) and then the main method; rounds repeat until nothing is woken. Given
//! the same inputs the same polls happen in the same order, which is what replay relies on.

use super::definition::LocalBoxFuture;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

/// Rounds after which a task that keeps waking itself is reported as a busy loop.
const MAX_ROUNDS: usize = 100_000;

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

struct Task {
    fut: LocalBoxFuture<()>,
    flag: Arc<Flag>,
    waker: Waker,
}

impl Task {
    fn new(fut: LocalBoxFuture<()>) -> Self {
        let flag = Arc::new(Flag(AtomicBool::new(true)));
        let waker = Waker::from(flag.clone());
        Task { fut, flag, waker }
    }

    /// Polls the task if it was woken; returns true when it finished.
    fn poll_if_woken(&mut self, polled: &mut bool) -> bool {
        if !self.flag.0.swap(false, Ordering::AcqRel) {
            return false;
        }
        *polled = true;
        let mut cx = Context::from_waker(&self.waker);
        self.fut.as_mut().poll(&mut cx).is_ready()
    }
}

/// The tasks of one run.
#[derive(Default)]
pub(crate) struct Executor {
    main: Option<Task>,
    handlers: Vec<Task>,
}

/// Workflow code kept waking itself without ever blocking.
#[derive(Debug)]
pub(crate) struct BusyLoop;

impl Executor {
    /// Starts the main method (polled last in each round).
    pub fn spawn_main(&mut self, fut: LocalBoxFuture<()>) {
        self.main = Some(Task::new(fut));
    }

    /// Starts a handler task (polled in creation order, before the main method).
    pub fn spawn_handler(&mut self, fut: LocalBoxFuture<()>) {
        self.handlers.push(Task::new(fut));
    }

    /// Polls until every task is blocked or finished, or `stop()` turns true after a poll (the
    /// run closed). `polling_main(true)` is called before the main method is polled and
    /// `polling_main(false)` after. Panics in workflow code propagate to the caller, which
    /// turns them into a workflow task failure.
    pub fn run_until_blocked(
        &mut self,
        stop: &dyn Fn() -> bool,
        polling_main: &dyn Fn(bool),
    ) -> Result<(), BusyLoop> {
        for _ in 0..MAX_ROUNDS {
            let mut polled = false;
            let mut i = 0;
            while i < self.handlers.len() {
                if self.handlers[i].poll_if_woken(&mut polled) {
                    self.handlers.remove(i);
                } else {
                    i += 1;
                }
                if stop() {
                    return Ok(());
                }
            }
            if let Some(main) = self.main.as_mut() {
                polling_main(true);
                let done = main.poll_if_woken(&mut polled);
                polling_main(false);
                if done {
                    self.main = None;
                }
                if stop() {
                    return Ok(());
                }
            }
            if !polled {
                return Ok(());
            }
        }
        Err(BusyLoop)
    }

    /// Whether the main method is still running.
    pub fn main_running(&self) -> bool {
        self.main.is_some()
    }

    /// Drops the main method's future (the run ends without it returning); true if it was
    /// running.
    pub fn drop_main(&mut self) -> bool {
        self.main.take().is_some()
    }

    /// Drops every task (eviction or close).
    pub fn clear(&mut self) {
        self.handlers.clear();
        self.main = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::task::Poll;

    #[test]
    fn polls_handlers_before_main_and_stops_when_blocked() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut ex = Executor::default();
        let l = log.clone();
        ex.spawn_main(Box::pin(async move { l.borrow_mut().push("main") }));
        let l = log.clone();
        ex.spawn_handler(Box::pin(async move {
            l.borrow_mut().push("handler");
            std::future::pending::<()>().await
        }));
        ex.run_until_blocked(&|| false, &|_| ()).unwrap();
        assert_eq!(*log.borrow(), vec!["handler", "main"]);
        ex.run_until_blocked(&|| false, &|_| ()).unwrap();
        assert_eq!(
            log.borrow().len(),
            2,
            "blocked tasks are not polled again without a wake"
        );
    }

    #[test]
    fn a_task_that_always_wakes_itself_is_a_busy_loop() {
        struct Spin;
        impl std::future::Future for Spin {
            type Output = ();
            fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
        let mut ex = Executor::default();
        ex.spawn_main(Box::pin(Spin));
        assert!(ex.run_until_blocked(&|| false, &|_| ()).is_err());
    }
}
