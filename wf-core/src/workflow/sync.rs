//! Deterministic synchronization for workflow code: an async [`Mutex`] and a [`Queue`], both
//! granted in request order (never by wake-up order), so replay does what the run did.

use super::blocked::{polled_run, BlockSlot, Wait};
use super::commands::Commands;
use crate::data::blocked::BlockKind;
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
    #[track_caller]
    pub fn lock(&self) -> Lock {
        Lock {
            mutex: self.clone(),
            ticket: None,
            block: BlockSlot::at(std::panic::Location::caller()),
            run: None,
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
    /// Its entry in what the run is blocked on, and that run (see `blocked.rs`).
    block: BlockSlot,
    run: Option<std::rc::Weak<RefCell<Commands>>>,
}

impl Future for Lock {
    type Output = MutexGuard;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard> {
        let poll = self.poll_lock(cx);
        let this = &mut *self;
        if this.run.is_none() {
            this.run = polled_run();
        }
        if let Some(run) = this.run.as_ref().and_then(|r| r.upgrade()) {
            if let Ok(mut core) = run.try_borrow_mut() {
                return this
                    .block
                    .track(&mut core, poll, || Wait::of(BlockKind::Mutex));
            }
        }
        poll
    }
}

impl Lock {
    fn poll_lock(&mut self, cx: &mut Context<'_>) -> Poll<MutexGuard> {
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
        if let Some(run) = self.run.as_ref().and_then(|r| r.upgrade()) {
            self.block.release(&run);
        }
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

/// A first-in first-out queue for workflow code (asyncio's `Queue` pattern): signal and update
/// handlers [`push`](Queue::push) work, the main method [`recv`](Queue::recv)s it in order.
/// Replay-safe: it lives in the workflow's state, handlers push in history order, and waiting
/// receivers are served in the order they called `recv`.
///
/// Keep one in the workflow struct (it is `Clone`; clones share the queue):
///
/// ```ignore
/// #[derive(Default)]
/// struct Orders { work: Queue<Order> }
///
/// #[signal] fn submit(&mut self, order: Order) { self.work.push(order); }
///
/// // in `run`:
/// let work = ctx.state(|s| s.work.clone());
/// loop {
///     let order = work.recv().await;
///     ctx.activity(Shop::ship, order).await?;
/// }
/// ```
pub struct Queue<T> {
    inner: Rc<RefCell<QueueState<T>>>,
}

struct QueueState<T> {
    items: VecDeque<T>,
    next_ticket: u64,
    /// Waiting receivers in `recv` order, with their wakers.
    waiting: VecDeque<(u64, Option<Waker>)>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Queue {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            inner: Rc::new(RefCell::new(QueueState {
                items: VecDeque::new(),
                next_ticket: 0,
                waiting: VecDeque::new(),
            })),
        }
    }
}

impl<T> std::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.inner.borrow();
        f.debug_struct("Queue")
            .field("len", &s.items.len())
            .field("receivers_waiting", &s.waiting.len())
            .finish()
    }
}

impl<T> Queue<T> {
    /// A new, empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `item` at the back and wakes the receiver waiting longest, if any.
    pub fn push(&self, item: T) {
        let mut s = self.inner.borrow_mut();
        s.items.push_back(item);
        wake_first_receiver(&s);
    }

    /// Waits for the front item and takes it; receivers are served in the order they called
    /// `recv`.
    pub fn recv(&self) -> Recv<T> {
        Recv {
            queue: self.clone(),
            ticket: None,
        }
    }

    /// Takes the front item if there is one and nobody is waiting ahead.
    pub fn try_recv(&self) -> Option<T> {
        let mut s = self.inner.borrow_mut();
        if s.waiting.is_empty() {
            s.items.pop_front()
        } else {
            None
        }
    }

    /// How many items wait in the queue.
    pub fn len(&self) -> usize {
        self.inner.borrow().items.len()
    }

    /// Whether no item waits in the queue.
    pub fn is_empty(&self) -> bool {
        self.inner.borrow().items.is_empty()
    }
}

fn wake_first_receiver<T>(s: &QueueState<T>) {
    if !s.items.is_empty() {
        if let Some((_, Some(w))) = s.waiting.front() {
            w.wake_by_ref();
        }
    }
}

/// Future of [`Queue::recv`].
pub struct Recv<T> {
    queue: Queue<T>,
    ticket: Option<u64>,
}

impl<T> Unpin for Recv<T> {}

impl<T> Future for Recv<T> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let queue = self.queue.clone();
        let mut s = queue.inner.borrow_mut();
        let ticket = match self.ticket {
            Some(t) => t,
            None => {
                let t = s.next_ticket;
                s.next_ticket += 1;
                s.waiting.push_back((t, None));
                self.ticket = Some(t);
                t
            }
        };
        if s.waiting.front().map(|(t, _)| *t) == Some(ticket) {
            if let Some(item) = s.items.pop_front() {
                s.waiting.pop_front();
                self.ticket = None;
                wake_first_receiver(&s);
                return Poll::Ready(item);
            }
        }
        if let Some(entry) = s.waiting.iter_mut().find(|(t, _)| *t == ticket) {
            entry.1 = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<T> Drop for Recv<T> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket {
            if let Ok(mut s) = self.queue.inner.try_borrow_mut() {
                s.waiting.retain(|(t, _)| *t != ticket);
                wake_first_receiver(&s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn items_come_out_in_push_order() {
        let q = Queue::new();
        let noop = Waker::noop();
        q.push(1);
        q.push(2);
        assert_eq!(q.len(), 2);
        assert_eq!(poll(&mut q.recv(), noop), Poll::Ready(1));
        assert_eq!(q.try_recv(), Some(2));
        assert!(q.is_empty());
        assert_eq!(q.try_recv(), None);
    }

    #[test]
    fn a_push_wakes_the_receiver_waiting_longest_and_receivers_are_served_in_order() {
        let q = Queue::new();
        let (first, second) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let (w1, w2) = (Waker::from(first.clone()), Waker::from(second.clone()));
        let (mut r1, mut r2) = (q.recv(), q.recv());
        assert!(poll(&mut r1, &w1).is_pending());
        assert!(poll(&mut r2, &w2).is_pending());
        q.push("a");
        assert_eq!(first.0.load(Ordering::SeqCst), 1);
        assert_eq!(second.0.load(Ordering::SeqCst), 0);
        // The second receiver is polled first (wake-up order is not service order): it waits.
        assert!(poll(&mut r2, &w2).is_pending());
        assert_eq!(q.try_recv(), None, "someone waits ahead");
        assert_eq!(poll(&mut r1, &w1), Poll::Ready("a"));
        q.push("b");
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut r2, &w2), Poll::Ready("b"));
    }

    #[test]
    fn a_dropped_receiver_gives_its_turn_to_the_next() {
        let q = Queue::new();
        let next = Arc::new(Count::default());
        let waker = Waker::from(next.clone());
        let mut r1 = q.recv();
        let mut r2 = q.recv();
        assert!(poll(&mut r1, Waker::noop()).is_pending());
        assert!(poll(&mut r2, &waker).is_pending());
        q.push(7);
        drop(r1);
        assert_eq!(
            next.0.load(Ordering::SeqCst),
            1,
            "the next receiver is woken"
        );
        assert_eq!(poll(&mut r2, &waker), Poll::Ready(7));
    }
}
