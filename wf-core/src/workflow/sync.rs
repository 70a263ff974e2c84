//! Deterministic synchronization for workflow code.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// An async mutex for workflow code, granted in request order and replay-safe: two async
/// handlers that both read-modify-write state across an `.await` take it so their critical
/// sections do not interleave.
///
/// Keep one in the workflow struct (it is `Clone`; clones share the lock) and take it out with
/// `ctx.state(|s| s.lock.clone())`:
///
/// ```ignore
/// let lock = ctx.state(|s| s.lock.clone());
/// let _guard = lock.lock().await;
/// let n = ctx.state(|s| s.counter);
/// ctx.activity(Tools::record, n + 1).await?;
/// ctx.state_mut(|s| s.counter = n + 1);
/// ```
#[derive(Clone, Default)]
pub struct Mutex {
    inner: Rc<RefCell<MutexState>>,
}

#[derive(Default)]
struct MutexState {
    locked: bool,
    next_ticket: u64,
    /// Waiting tickets in request order, with their wakers.
    queue: VecDeque<(u64, Option<Waker>)>,
}

impl std::fmt::Debug for Mutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.inner.borrow();
        f.debug_struct("Mutex")
            .field("locked", &s.locked)
            .field("waiting", &s.queue.len())
            .finish()
    }
}

impl Mutex {
    /// A new, unlocked mutex.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits for the lock; callers are served in the order they called `lock`.
    pub fn lock(&self) -> Lock {
        Lock {
            mutex: self.clone(),
            ticket: None,
        }
    }

    /// Whether someone holds the lock.
    pub fn is_locked(&self) -> bool {
        self.inner.borrow().locked
    }
}

/// Future of [`Mutex::lock`].
pub struct Lock {
    mutex: Mutex,
    ticket: Option<u64>,
}

impl Future for Lock {
    type Output = MutexGuard;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard> {
        let mutex = self.mutex.clone();
        let mut s = mutex.inner.borrow_mut();
        let ticket = match self.ticket {
            Some(t) => t,
            None => {
                let t = s.next_ticket;
                s.next_ticket += 1;
                s.queue.push_back((t, None));
                self.ticket = Some(t);
                t
            }
        };
        if !s.locked && s.queue.front().map(|(t, _)| *t) == Some(ticket) {
            s.queue.pop_front();
            s.locked = true;
            self.ticket = None;
            return Poll::Ready(MutexGuard {
                mutex: self.mutex.clone(),
            });
        }
        if let Some(entry) = s.queue.iter_mut().find(|(t, _)| *t == ticket) {
            entry.1 = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket {
            if let Ok(mut s) = self.mutex.inner.try_borrow_mut() {
                s.queue.retain(|(t, _)| *t != ticket);
                wake_front(&mut s);
            }
        }
    }
}

fn wake_front(s: &mut MutexState) {
    if !s.locked {
        if let Some((_, Some(w))) = s.queue.front() {
            w.wake_by_ref();
        }
    }
}

/// Holds a [`Mutex`] until dropped.
pub struct MutexGuard {
    mutex: Mutex,
}

impl Drop for MutexGuard {
    fn drop(&mut self) {
        if let Ok(mut s) = self.mutex.inner.try_borrow_mut() {
            s.locked = false;
            wake_front(&mut s);
        }
    }
}
