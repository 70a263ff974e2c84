//! What each part of a run waits on (its "stack trace", shown by describe): every wait future
//! (condition, signal wait, timer, activity, child, mutex) notes itself here when a poll leaves
//! it pending, under the part being polled (the main method, or the async handler whose task
//! the executor is running), and removes itself once it resolves or is dropped. Source
//! locations come from `#[track_caller]` on the context's public methods.

use super::commands::{Commands, LiveHandler};
use crate::data::blocked::{BlockKind, BlockedOn, BlockedPart, SourceLocation};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// The part id of the main method; handlers have their `LiveHandler::id` (from 1).
const MAIN: u64 = 0;

/// One noted wait.
#[derive(Debug)]
struct Entry {
    part: u64,
    kind: BlockKind,
    name: String,
    location: Option<&'static Location<'static>>,
    deadline_ms: Option<i64>,
    seq: Option<u32>,
}

/// The waits pending in a run, by the key their future holds.
#[derive(Debug, Default)]
pub(crate) struct Blocked {
    /// The part being polled now.
    part: u64,
    next_key: u64,
    waits: BTreeMap<u64, Entry>,
}

impl Blocked {
    /// The parts of the run with their waits: `run` first (if it still runs), then each live
    /// handler in the order it started.
    pub fn parts(&self, main_running: bool, handlers: &[LiveHandler]) -> Vec<BlockedPart> {
        let waits_of = |part: u64| -> Vec<BlockedOn> {
            self.waits
                .values()
                .filter(|e| e.part == part)
                .map(|e| BlockedOn {
                    kind: e.kind,
                    name: e.name.clone(),
                    location: e.location.map(SourceLocation::of),
                    deadline_ms: e.deadline_ms,
                    attempt: None,
                    seq: e.seq,
                })
                .collect()
        };
        let mut parts = Vec::with_capacity(handlers.len() + 1);
        if main_running {
            parts.push(BlockedPart {
                part: "run".to_string(),
                waits: waits_of(MAIN),
            });
        }
        parts.extend(handlers.iter().map(|h| BlockedPart {
            part: h.description.clone(),
            waits: waits_of(h.id),
        }));
        parts
    }
}

/// The signal waits pending in a run: their keys (a wait made again after it resolved is a
/// new one), the signals' names (sorted, once each) and the earliest deadline among them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SignalWaits {
    pub keys: Vec<u64>,
    pub names: Vec<String>,
    pub deadline_ms: Option<i64>,
}

impl Blocked {
    /// The signal waits pending now (see [`SignalWaits`]).
    pub fn signal_waits(&self) -> SignalWaits {
        let mut waits = SignalWaits::default();
        for (key, e) in &self.waits {
            if e.kind != BlockKind::Signal {
                continue;
            }
            waits.keys.push(*key);
            waits.names.push(e.name.clone());
            if let Some(d) = e.deadline_ms {
                waits.deadline_ms = Some(waits.deadline_ms.map_or(d, |m: i64| m.min(d)));
            }
        }
        waits.names.sort();
        waits.names.dedup();
        waits
    }
}

/// A wait future's place in [`Blocked`]: where it was called, and its key once noted.
#[derive(Debug, Default)]
pub(crate) struct BlockSlot {
    key: u64,
    location: Option<&'static Location<'static>>,
    /// Internal waits (the timer of a timed condition) are not shown: their owner is.
    off: bool,
}

/// What a wait says of itself when it is noted.
pub(crate) struct Wait {
    pub kind: BlockKind,
    pub name: String,
    pub deadline_ms: Option<i64>,
    pub seq: Option<u32>,
}

impl Wait {
    /// A wait of `kind` with nothing else to say.
    pub fn of(kind: BlockKind) -> Self {
        Wait {
            kind,
            name: String::new(),
            deadline_ms: None,
            seq: None,
        }
    }
}

impl BlockSlot {
    /// The slot of a wait called from `location`.
    pub fn at(location: &'static Location<'static>) -> Self {
        BlockSlot {
            key: 0,
            location: Some(location),
            off: false,
        }
    }

    /// The slot of a wait that is part of another one, never shown.
    pub fn hidden() -> Self {
        BlockSlot {
            key: 0,
            location: None,
            off: true,
        }
    }

    /// Notes the wait when `poll` is pending (once, under the part polled now), and removes
    /// it when `poll` is ready.
    pub fn track<T>(
        &mut self,
        core: &mut Commands,
        poll: Poll<T>,
        wait: impl FnOnce() -> Wait,
    ) -> Poll<T> {
        if self.off {
            return poll;
        }
        match poll {
            Poll::Pending if self.key == 0 => {
                let blocked = &mut core.blocked;
                blocked.next_key += 1;
                self.key = blocked.next_key;
                let w = wait();
                blocked.waits.insert(
                    self.key,
                    Entry {
                        part: blocked.part,
                        kind: w.kind,
                        name: w.name,
                        location: self.location,
                        deadline_ms: w.deadline_ms,
                        seq: w.seq,
                    },
                );
            }
            Poll::Pending => {}
            Poll::Ready(_) => self.clear(core),
        }
        poll
    }

    /// Removes the wait (its future resolved or is dropped).
    pub fn clear(&mut self, core: &mut Commands) {
        if self.key != 0 {
            core.blocked.waits.remove(&self.key);
            self.key = 0;
        }
    }

    /// [`clear`](Self::clear) from a `Drop` impl: skipped if the run's commands are borrowed
    /// (the run is being torn down).
    pub fn release(&mut self, core: &RefCell<Commands>) {
        if self.key != 0 {
            if let Ok(mut core) = core.try_borrow_mut() {
                self.clear(&mut core);
            }
        }
    }
}

/// A handler's future, polled as part `id`: the waits it makes are noted under it.
pub(crate) struct InPart<F> {
    pub id: u64,
    pub core: Rc<RefCell<Commands>>,
    pub fut: Pin<Box<F>>,
}

impl<F: Future> Future for InPart<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        this.core.borrow_mut().blocked.part = this.id;
        let poll = this.fut.as_mut().poll(cx);
        this.core.borrow_mut().blocked.part = MAIN;
        poll
    }
}

impl<F> InPart<F> {
    /// Wraps `fut`, the task of handler `id`.
    pub fn new(id: u64, core: Rc<RefCell<Commands>>, fut: F) -> Self {
        InPart {
            id,
            core,
            fut: Box::pin(fut),
        }
    }
}

/// The query name describe asks a run's copy (cached or rebuilt) with, to read its
/// [`Blocked`] parts instead of calling a handler; answered as a JSON-encoded
/// `Vec<BlockedPart>`.
pub(crate) const BLOCKED_QUERY: &str = "__wf_blocked_on";

thread_local! {
    /// The commands of the run whose task this thread is polling, for waits that are not
    /// made through the context (`sync::Mutex::lock`).
    static POLLING: RefCell<Option<std::rc::Weak<RefCell<Commands>>>> = const { RefCell::new(None) };
}

/// Marks `core`'s run as the one this thread polls until the returned guard is dropped.
pub(crate) fn polling(core: &Rc<RefCell<Commands>>) -> PollingGuard {
    let previous = POLLING.with(|p| p.replace(Some(Rc::downgrade(core))));
    PollingGuard { previous }
}

/// Restores the run polled before (see [`polling`]).
pub(crate) struct PollingGuard {
    previous: Option<std::rc::Weak<RefCell<Commands>>>,
}

impl Drop for PollingGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        POLLING.with(|p| *p.borrow_mut() = previous);
    }
}

/// The run this thread polls now, if any.
pub(crate) fn polled_run() -> Option<std::rc::Weak<RefCell<Commands>>> {
    POLLING.with(|p| p.borrow().clone())
}
