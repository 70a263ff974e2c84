//! How the parts of one engine wake each other, and what they tell other engines on the same
//! store: a [`Wake`] per worker, per-workflow-id wake-ups for clients waiting on a result or an
//! update, and the shutdown signal.
//!
//! A wake-up that follows a store commit (`notify_one`, `publish`) also marks the [`Outbox`],
//! which the peer sender (`peers.rs`) turns into one small datagram per live peer engine, so
//! that a message, a timer, a task or an outcome committed here is seen at once by the engine
//! that runs it or waits for it. Wake-ups that only concern this engine (`notify_local`,
//! `publish_local`: re-polls, time-keeper passes, pokes received from peers) stay here. With no
//! peer the outbox costs one atomic load per wake-up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::futures::Notified;
use tokio::sync::{watch, Notify};

/// What a poke says (bits of one byte): which of the receiver's loops may have work.
pub(crate) mod flag {
    /// Workflow tasks may be ready.
    pub const WORKFLOW: u8 = 1;
    /// Activity tasks may be visible.
    pub const ACTIVITY: u8 = 2;
    /// The time keeper's next deadline may have moved earlier.
    pub const TIMER: u8 = 4;
    /// The workflow ids that follow had an outcome committed (a result, an update's state).
    pub const WAITERS: u8 = 8;
    /// Every waiter should look again (too many ids to name, or a poke may have been lost).
    pub const ALL_WAITERS: u8 = 16;
    /// The set of live engines changed: look it up again.
    pub const PEERS: u8 = 32;
    /// Activities were cancelled (or their runs closed): attempts running here may no longer
    /// be current. (Engines that predate this bit drop it.)
    pub const CANCELLED: u8 = 64;
    /// A run closed that may have held a slot of a queue of workflow starts: the queue
    /// dispatcher should run an admission pass. (Engines that predate this bit drop it.)
    pub const QUEUES: u8 = 128;
    /// Every bit a receiver understands.
    pub const ALL: u8 =
        WORKFLOW | ACTIVITY | TIMER | WAITERS | ALL_WAITERS | PEERS | CANCELLED | QUEUES;
}

/// The waiters key of feed readers (`client.events`): no workflow id is empty, and a poke
/// names it as it names a workflow id, so that peers' feed readers look again too.
pub(crate) const FEED_WAITERS: &str = "";

/// At most this many workflow ids are named in one poke; past it the poke says `ALL_WAITERS`.
pub(crate) const MAX_POKE_IDS: usize = 32;

/// A mark made this long after the last poke sent from a marking thread is sent from that
/// thread at once (a quiet engine: it saves the wake-up of the peer sender's task, tens of
/// microseconds); closer marks are left to the task, which sends them together.
const QUIET: Duration = Duration::from_micros(500);

/// Where pokes go: the peers (see `peers.rs`).
pub(crate) trait PokeSink: Send + Sync {
    /// Sends one poke to every peer, never blocking; whether any peer is left.
    fn poke(&self, bits: u8, ids: &[String]) -> bool;
}

/// What this engine has to tell its peers, gathered until the peer sender takes it.
pub(crate) struct Outbox {
    /// Whether any peer listens; until one does, marking costs one load.
    active: AtomicBool,
    flags: AtomicU8,
    ids: Mutex<Vec<String>>,
    /// Wakes the peer sender.
    pub kick: Notify,
    /// Set when the peer sender is to send what is left and stop.
    closed: AtomicBool,
    /// Set when a peer announced itself: the peer sender reads the live engines again.
    refresh: AtomicBool,
    /// Sends pokes from a marking thread (set once the peer sender runs).
    sink: OnceLock<Arc<dyn PokeSink>>,
    /// Whether a marking thread is sending.
    flushing: AtomicBool,
    /// When a marking thread last sent (ns after `epoch`).
    last_inline_ns: AtomicU64,
    epoch: Instant,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox {
            active: AtomicBool::new(false),
            flags: AtomicU8::new(0),
            ids: Mutex::default(),
            kick: Notify::new(),
            closed: AtomicBool::new(false),
            refresh: AtomicBool::new(false),
            sink: OnceLock::new(),
            flushing: AtomicBool::new(false),
            last_inline_ns: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }
}

impl Outbox {
    /// Whether peers are listening (set by the peer sender when it finds some).
    pub fn set_active(&self, on: bool) {
        self.active.store(on, Ordering::Release);
    }

    fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Has the peer sender send what is left and stop.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.kick.notify_one();
    }

    /// Has the peer sender read the live engines again (a peer announced itself).
    pub fn request_refresh(&self) {
        self.refresh.store(true, Ordering::Release);
        self.kick.notify_one();
    }

    /// Whether a refresh was requested since the last call.
    pub fn take_refresh(&self) -> bool {
        self.refresh.swap(false, Ordering::AcqRel)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Lets marking threads send pokes themselves through `sink` when the engine is quiet.
    pub fn set_sink(&self, sink: Arc<dyn PokeSink>) {
        let _ = self.sink.set(sink);
    }

    /// Marks `bits` for the peers.
    pub fn mark(&self, bits: u8) {
        if !self.is_active() {
            return;
        }
        // Bits already marked are on their way: whoever set them sends them or kicked the task.
        if self.flags.fetch_or(bits, Ordering::AcqRel) & bits != bits && !self.send_here() {
            self.kick.notify_one();
        }
    }

    /// Sends what is marked from this thread if the engine is quiet and no other thread is
    /// sending; false to leave it to the peer sender's task.
    fn send_here(&self) -> bool {
        let Some(sink) = self.sink.get() else {
            return false;
        };
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let last = self.last_inline_ns.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < QUIET.as_nanos() as u64 {
            return false;
        }
        if self.flushing.swap(true, Ordering::Acquire) {
            return false;
        }
        self.last_inline_ns.store(now.max(1), Ordering::Relaxed);
        let (bits, ids) = self.take();
        // (Whether peers are left is the peer task's to settle: it alone sets `active`.)
        if bits != 0 {
            sink.poke(bits, &ids);
        }
        self.flushing.store(false, Ordering::Release);
        true
    }

    /// Marks workflow id `workflow_id`'s waiters for the peers.
    fn mark_waiters(&self, workflow_id: &str) {
        if !self.is_active() {
            return;
        }
        let named = {
            let mut ids = self.ids.lock().expect("outbox lock is never poisoned");
            if ids.iter().any(|id| id == workflow_id) {
                true
            } else if ids.len() < MAX_POKE_IDS {
                ids.push(workflow_id.to_string());
                true
            } else {
                false
            }
        };
        self.mark(if named {
            flag::WAITERS
        } else {
            flag::ALL_WAITERS
        });
    }

    /// Takes what was marked: the flags and the workflow ids named. The flags first: an id
    /// named after that comes with a new flag, which sends it (or sends nothing new).
    pub fn take(&self) -> (u8, Vec<String>) {
        let mut bits = self.flags.swap(0, Ordering::AcqRel);
        let ids = std::mem::take(&mut *self.ids.lock().expect("outbox lock is never poisoned"));
        if !ids.is_empty() {
            bits |= flag::WAITERS;
        }
        (bits, ids)
    }
}

/// One of the engine's loops' wake-ups.
pub(crate) struct Wake {
    local: Notify,
    /// What the peers are told when this wakes after a commit.
    bit: u8,
    outbox: Arc<Outbox>,
    /// Long polls waiting on the same wake-up besides the loop (outside workers polling
    /// activity tasks over HTTP): all woken, and none takes the loop's wake-up.
    pollers: Notify,
    /// How many long polls wait; with none, a wake-up does not touch `pollers`.
    polling: AtomicUsize,
}

/// A long poll's place among a [`Wake`]'s pollers, until dropped.
pub(crate) struct Polling<'a> {
    wake: &'a Wake,
}

impl Polling<'_> {
    /// Completes at the next wake-up after this call.
    pub fn notified(&self) -> Notified<'_> {
        self.wake.pollers.notified()
    }
}

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        self.wake.polling.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Wake {
    fn new(bit: u8, outbox: Arc<Outbox>) -> Self {
        Wake {
            local: Notify::new(),
            bit,
            outbox,
            pollers: Notify::new(),
            polling: AtomicUsize::new(0),
        }
    }

    /// Joins the long polls woken with this loop (see `pollers`).
    pub fn poller(&self) -> Polling<'_> {
        self.polling.fetch_add(1, Ordering::SeqCst);
        Polling { wake: self }
    }

    fn wake_pollers(&self) {
        // SeqCst with the poller's increment: a poll that registered before a commit it did
        // not see is counted here.
        if self.polling.load(Ordering::SeqCst) > 0 {
            self.pollers.notify_waiters();
        }
    }

    /// Wakes this engine's loop and, through the outbox, the peers': call it after a commit
    /// that may have made work for any engine on the store.
    pub fn notify_one(&self) {
        self.local.notify_one();
        self.wake_pollers();
        self.outbox.mark(self.bit);
    }

    /// Wakes this engine's loop only (nothing new was committed, or only this engine cares).
    pub fn notify_local(&self) {
        self.local.notify_one();
        self.wake_pollers();
    }

    /// Completes at the next wake-up (or at once if one is pending).
    pub fn notified(&self) -> Notified<'_> {
        self.local.notified()
    }
}

/// The wake-ups of one engine.
pub(crate) struct Wakeups {
    /// Work for the workflow worker may be in the store.
    pub workflow: Wake,
    /// Activity tasks may be visible.
    pub activity: Wake,
    /// The time keeper's next deadline may have moved earlier.
    pub timer: Wake,
    /// Activity attempts running here may have been cancelled (see `activity_worker::cancel`).
    pub cancelled: Wake,
    /// Clients waiting for an outcome on a workflow id: a run closing (or continuing as new),
    /// an update's state moving. Woken here and in the peers.
    pub waiters: Waiters,
    /// Queries waiting for this engine's cached run to catch up: woken by every commit, here
    /// only (`publish_local`).
    pub progress: Waiters,
    /// What the peers are to be told.
    pub outbox: Arc<Outbox>,
    /// This engine put a start on a queue that holds it, or changed a queue's settings: its
    /// queue dispatcher looks at once (here only).
    pub queues: Notify,
    /// Whether this engine's last admission pass left runs held on their queues: only then
    /// does a run closing wake the dispatchers ([`slot_freed`](Self::slot_freed)).
    pub queues_held: AtomicBool,
    /// Set once the engine stops.
    pub shutdown: watch::Sender<bool>,
    /// Set when the engine is dropped rather than shut down: workers stop without releasing
    /// anything, as a crashed process would (leases expire instead).
    crashed: AtomicBool,
}

impl Wakeups {
    pub fn new() -> Self {
        let outbox = Arc::new(Outbox::default());
        Wakeups {
            workflow: Wake::new(flag::WORKFLOW, outbox.clone()),
            activity: Wake::new(flag::ACTIVITY, outbox.clone()),
            timer: Wake::new(flag::TIMER, outbox.clone()),
            cancelled: Wake::new(flag::CANCELLED, outbox.clone()),
            queues: Notify::new(),
            queues_held: AtomicBool::new(false),
            waiters: Waiters {
                map: Mutex::default(),
                outbox: outbox.clone(),
            },
            progress: Waiters {
                map: Mutex::default(),
                outbox: outbox.clone(),
            },
            outbox,
            shutdown: watch::channel(false).0,
            crashed: AtomicBool::new(false),
        }
    }

    pub fn is_shutdown(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Stops every loop of the engine.
    pub fn stop(&self) {
        self.shutdown.send_replace(true);
        self.workflow.notify_local();
        self.activity.notify_local();
        self.timer.notify_local();
        self.cancelled.notify_local();
    }

    /// A run closed (completed, failed, cancelled, terminated, continued as new): if runs
    /// wait on their queues, the one it may have admitted frees its slot, so the queue
    /// dispatcher here and, through the outbox, the peers' run an admission pass at once.
    pub fn slot_freed(&self) {
        if self.queues_held.load(Ordering::SeqCst) {
            self.queues.notify_one();
            self.outbox.mark(flag::QUEUES);
        }
    }

    /// A commit wrote rows of the feed of what runs do: its readers look again, here and in
    /// the peers.
    pub fn feed_changed(&self) {
        self.waiters.publish(FEED_WAITERS);
    }

    /// Marks the stop as a crash (see `crashed`).
    pub fn mark_crashed(&self) {
        self.crashed.store(true, Ordering::SeqCst);
    }

    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    /// Applies a poke received from a peer: wakes the loops and waiters it names, here only.
    pub fn apply_poke(&self, bits: u8, ids: &[&str]) {
        if bits & flag::WORKFLOW != 0 {
            self.workflow.notify_local();
        }
        if bits & flag::ACTIVITY != 0 {
            self.activity.notify_local();
        }
        if bits & flag::TIMER != 0 {
            self.timer.notify_local();
        }
        if bits & flag::CANCELLED != 0 {
            self.cancelled.notify_local();
        }
        if bits & flag::QUEUES != 0 {
            self.queues.notify_one();
        }
        if bits & flag::ALL_WAITERS != 0 {
            self.waiters.publish_all_local();
        } else if bits & flag::WAITERS != 0 {
            for id in ids {
                self.waiters.publish_local(id);
            }
        }
    }
}

/// Per-workflow-id wake-ups for clients waiting on a result or an update.
pub(crate) struct Waiters {
    map: Mutex<HashMap<String, Arc<Notify>>>,
    outbox: Arc<Outbox>,
}

/// A client's wake-up for one workflow id; dropping it removes the id's entry when no other
/// client holds one (a wait that ends without a publish, e.g. a result read from a run that
/// had closed already, must not leave an entry behind: a million of them held ~180 MB).
pub(crate) struct Subscription<'a> {
    waiters: &'a Waiters,
    workflow_id: String,
    notify: Arc<Notify>,
}

impl std::ops::Deref for Subscription<'_> {
    type Target = Notify;

    fn deref(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Subscription<'_> {
    fn drop(&mut self) {
        let mut map = self
            .waiters
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        // Held by the map and by this subscription only: nobody else waits.
        if map
            .get(&self.workflow_id)
            .is_some_and(|n| Arc::ptr_eq(n, &self.notify) && Arc::strong_count(&self.notify) == 2)
        {
            map.remove(&self.workflow_id);
        }
    }
}

impl Waiters {
    /// A wake-up for `workflow_id`, woken by [`publish`](Self::publish).
    pub fn subscribe(&self, workflow_id: &str) -> Subscription<'_> {
        let mut map = self
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        let notify = map.entry(workflow_id.to_string()).or_default().clone();
        Subscription {
            waiters: self,
            workflow_id: workflow_id.to_string(),
            notify,
        }
    }

    /// How many workflow ids have a wake-up entry (for tests).
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Wakes the clients waiting on `workflow_id`, here and (after a commit) in the peers.
    pub fn publish(&self, workflow_id: &str) {
        self.publish_local(workflow_id);
        self.outbox.mark_waiters(workflow_id);
    }

    /// Wakes the clients of this engine waiting on `workflow_id`.
    pub fn publish_local(&self, workflow_id: &str) {
        let mut map = self
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        if let Some(n) = map.get(workflow_id) {
            n.notify_waiters();
            if Arc::strong_count(n) == 1 {
                map.remove(workflow_id);
            }
        }
    }

    /// Wakes every client of this engine waiting on any workflow id.
    pub fn publish_all_local(&self) {
        let mut map = self
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        map.retain(|_, n| {
            n.notify_waiters();
            Arc::strong_count(n) > 1
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inactive_outbox_gathers_nothing() {
        let wake = Wakeups::new();
        wake.workflow.notify_one();
        wake.waiters.publish("w");
        assert_eq!(wake.outbox.take(), (0, Vec::new()));
    }

    #[test]
    fn an_active_outbox_gathers_flags_and_ids_until_taken() {
        let wake = Wakeups::new();
        wake.outbox.set_active(true);
        wake.workflow.notify_one();
        wake.timer.notify_local();
        wake.waiters.publish("a");
        wake.waiters.publish("a");
        wake.waiters.publish("b");
        assert_eq!(
            wake.outbox.take(),
            (flag::WORKFLOW | flag::WAITERS, vec!["a".into(), "b".into()])
        );
        assert_eq!(wake.outbox.take(), (0, Vec::new()));
    }

    #[test]
    fn too_many_ids_become_all_waiters() {
        let wake = Wakeups::new();
        wake.outbox.set_active(true);
        for i in 0..=MAX_POKE_IDS {
            wake.waiters.publish(&i.to_string());
        }
        let (bits, ids) = wake.outbox.take();
        assert_eq!(bits, flag::WAITERS | flag::ALL_WAITERS);
        assert_eq!(ids.len(), MAX_POKE_IDS);
    }

    #[test]
    fn a_wait_that_ends_without_a_publish_leaves_no_entry() {
        let wake = Wakeups::new();
        for i in 0..100 {
            let sub = wake.waiters.subscribe(&format!("w{i}"));
            drop(sub);
        }
        assert_eq!(wake.waiters.entries(), 0);
        let a = wake.waiters.subscribe("a");
        let b = wake.waiters.subscribe("a");
        drop(a);
        assert_eq!(
            wake.waiters.entries(),
            1,
            "another client still waits on it"
        );
        {
            let notified = b.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            wake.waiters.publish_local("a");
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(
                std::future::Future::poll(notified.as_mut(), &mut cx).is_ready(),
                "the remaining client is woken"
            );
        }
        drop(b);
        assert_eq!(wake.waiters.entries(), 0);
    }
}
