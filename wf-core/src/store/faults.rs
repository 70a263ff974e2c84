//! A store wrapper that injects faults (feature `fault-injection`, for tests): chosen
//! operations fail with an I/O error, a full disk or a busy database, or are delayed; or the
//! process "crashes" at a chosen commit, the way SQLite's own crash tests stop a process at
//! each write.
//!
//! [`FaultStore`] wraps any [`Store`], at the seam every call passes ([`Store::execute`]: one
//! operation at a time, classed by [`Op`]), and numbers its *commits*: the calls that change durable
//! state (a start, a delivery, a workflow task's commit or failure, an activity's result or
//! retry, a heartbeat, a termination, a schedule change), and the polls that leased or fired
//! something (a poll that found nothing changed nothing and is not counted). Liveness
//! renewals (periodic, so their number depends on timing) and reads are never counted. A test
//! runs a scenario once to count its commits, then once per commit `k` with
//! [`crash_at`](FaultStore::crash_at)`(k, ..)`: commit `k` then ends in one of the three
//! [`Crash`] ways, and every later call fails with `Closed`, as the calls of a dead process
//! never reach the disk. Drop the engine on it and open a fresh one on the inner store: it
//! must finish the work.
//!
//! ```
//! use std::sync::Arc;
//! use wf_core::store::faults::{Fault, FaultStore, Target};
//! use wf_core::store::MemoryStore;
//! let store = FaultStore::new(Arc::new(MemoryStore::new()));
//! store.inject(Fault::Full, Target::Writes); // every write: "database or disk is full"
//! store.clear(); // the disk has room again
//! ```

pub use super::operation::Op;
use super::operation::{Operation, Outcome};
use super::{BackendErrorKind, Store, StoreError, StoreFuture};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

impl Op {
    /// Whether the operation writes.
    pub fn is_write(self) -> bool {
        self != Op::Read
    }

    /// Whether a call counts as a commit whatever it returns (polls count only when they
    /// leased or fired something, purges when they deleted something; engine renewals and reads never do).
    fn always_counted(self) -> bool {
        !matches!(
            self,
            Op::LeaseWorkflowTask
                | Op::LeaseActivity
                | Op::FireTimers
                | Op::Purge
                | Op::Engine
                | Op::Close
                | Op::Read
        )
    }
}

/// What an injected fault does to a call it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails with an I/O error (retryable), changing nothing.
    Io,
    /// Fails with a full disk (retryable), changing nothing.
    Full,
    /// Fails with a busy database (retryable), changing nothing.
    Busy,
    /// Waits this long, then runs the call.
    Delay(Duration),
}

/// Which calls a fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every write (reads go through).
    Writes,
    /// Only these operations.
    Ops(Vec<Op>),
}

impl Target {
    fn hits(&self, op: Op) -> bool {
        match self {
            Target::Writes => op.is_write(),
            Target::Ops(ops) => ops.contains(&op),
        }
    }
}

/// How the process dies at the chosen commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Crash {
    /// The commit is durable and answered; the process dies right after.
    AfterCommit,
    /// The commit is durable but the process dies before the fsync returns: its caller gets
    /// an I/O error (and the process is gone).
    AppliedUnacked,
    /// The process dies before the commit reaches the disk: nothing of it is applied, the
    /// caller gets an I/O error. (For a poll, which only the store can tell would lease
    /// something, this is the same as [`AppliedUnacked`](Crash::AppliedUnacked): its lease
    /// is held by a dead process until it expires.)
    NotApplied,
}

/// Every crash variant, for tests that try each.
pub const CRASHES: [Crash; 3] = [Crash::AfterCommit, Crash::AppliedUnacked, Crash::NotApplied];

#[derive(Default)]
struct Plan {
    faults: Vec<(Fault, Target)>,
    crash: Option<(u64, Crash)>,
}

/// A [`Store`] that injects faults into the calls it passes to the store it wraps (see the
/// module documentation).
pub struct FaultStore {
    inner: Arc<dyn Store>,
    plan: Mutex<Plan>,
    commits: AtomicU64,
    injected: AtomicU64,
    dead: watch::Sender<bool>,
}

impl FaultStore {
    /// Wraps `inner`, injecting nothing until told to.
    pub fn new(inner: Arc<dyn Store>) -> Arc<FaultStore> {
        Arc::new(FaultStore {
            inner,
            plan: Mutex::new(Plan::default()),
            commits: AtomicU64::new(0),
            injected: AtomicU64::new(0),
            dead: watch::channel(false).0,
        })
    }

    /// The wrapped store (a fresh engine after a crash opens on it).
    pub fn inner(&self) -> Arc<dyn Store> {
        self.inner.clone()
    }

    /// From now on, the calls `target` names fail (or wait) with `fault`, until
    /// [`clear`](Self::clear). Faults added earlier stay; the first that hits a call applies.
    pub fn inject(&self, fault: Fault, target: Target) {
        self.plan().faults.push((fault, target));
    }

    /// Removes every injected fault (not a planned crash): the disk is well again.
    pub fn clear(&self) {
        self.plan().faults.clear();
    }

    /// Plans a crash at commit `k` (1-based, counted from this store's creation).
    pub fn crash_at(&self, k: u64, how: Crash) {
        self.plan().crash = Some((k, how));
    }

    /// Commits counted so far (see the module documentation).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// Calls failed (or delayed) by an injected fault so far, crashes not included.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// Whether the planned crash happened.
    pub fn is_crashed(&self) -> bool {
        *self.dead.borrow()
    }

    /// Waits until the planned crash happens.
    pub async fn crashed(&self) {
        let mut dead = self.dead.subscribe();
        // The sender lives in `self`: the channel cannot close while this borrows it.
        let _ = dead.wait_for(|d| *d).await;
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.plan
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn die(&self) {
        self.dead.send_replace(true);
    }

    /// The error of every call after the crash.
    fn dead_error() -> StoreError {
        StoreError::closed("the process crashed (fault injection): the store takes no more calls")
    }

    /// The fault that hits a call of `op`, if any.
    fn fault_for(&self, op: Op) -> Option<Fault> {
        let plan = self.plan();
        let fault = plan
            .faults
            .iter()
            .find(|(_, t)| t.hits(op))
            .map(|(f, _)| *f);
        if fault.is_some() {
            self.injected.fetch_add(1, Ordering::SeqCst);
        }
        fault
    }

    /// Counts a commit; the crash planned at it, if this is the one.
    fn count(&self) -> Option<Crash> {
        let n = self.commits.fetch_add(1, Ordering::SeqCst) + 1;
        match self.plan().crash {
            Some((k, how)) if k == n => Some(how),
            _ => None,
        }
    }

    /// Runs `call` (which calls the inner store) under the faults and the planned crash.
    fn run<'a>(
        &'a self,
        op: Op,
        call: impl FnOnce() -> StoreFuture<'a, Outcome> + Send + 'a,
    ) -> StoreFuture<'a, Outcome> {
        Box::pin(async move {
            if self.is_crashed() {
                return Err(Self::dead_error());
            }
            match self.fault_for(op) {
                Some(Fault::Io) => return Err(injected(BackendErrorKind::Io, op)),
                Some(Fault::Full) => return Err(injected(BackendErrorKind::Full, op)),
                Some(Fault::Busy) => return Err(injected(BackendErrorKind::Busy, op)),
                Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
                None => {}
            }
            let crash = if op.always_counted() {
                self.count()
            } else {
                None
            };
            if crash == Some(Crash::NotApplied) {
                self.die();
                return Err(unacked(op));
            }
            let result = call().await;
            let crash = match &result {
                Ok(v)
                    if matches!(
                        op,
                        Op::LeaseWorkflowTask | Op::LeaseActivity | Op::FireTimers | Op::Purge
                    ) =>
                {
                    if did_work(v) {
                        self.count()
                    } else {
                        None
                    }
                }
                _ => crash,
            };
            match crash {
                None => result,
                Some(Crash::AfterCommit) => {
                    self.die();
                    result
                }
                Some(Crash::AppliedUnacked | Crash::NotApplied) => {
                    self.die();
                    Err(unacked(op))
                }
            }
        })
    }
}

fn injected(kind: BackendErrorKind, op: Op) -> StoreError {
    let what = match kind {
        BackendErrorKind::Full => "database or disk is full",
        BackendErrorKind::Busy => "database is locked",
        _ => "disk I/O error",
    };
    StoreError::backend(kind, format!("{what} (injected fault on {op:?})"))
}

fn unacked(op: Op) -> StoreError {
    StoreError::backend(
        BackendErrorKind::Io,
        format!("disk I/O error: the process crashed during {op:?} (fault injection)"),
    )
}

/// Whether an operation counted only when it does something (a poll, a purge) did: it leased,
/// fired or deleted something.
fn did_work(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::WorkflowTasks(tasks) => !tasks.is_empty(),
        Outcome::WorkflowTask(task) => task.is_some(),
        Outcome::ActivityTasks(tasks) => !tasks.is_empty(),
        Outcome::ActivityLeases(leases) => !leases.tasks.is_empty(),
        Outcome::FiredTimers(timers) => !timers.is_empty(),
        Outcome::RunIds(purged) => !purged.is_empty(),
        _ => true,
    }
}

impl Store for FaultStore {
    fn execute(&self, op: Operation) -> StoreFuture<'_, Outcome> {
        match op.fault_class() {
            // Operators' calls, never faulted.
            None => self.inner.execute(op),
            Some(class) => self.run(class, move || self.inner.execute(op)),
        }
    }

    fn wrapped(&self) -> Option<&dyn Store> {
        Some(&*self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use crate::store::{Payload, RunStart};

    fn start(id: &str) -> RunStart {
        RunStart {
            run: crate::store::NewRun {
                workflow_id: id.into(),
                run_id: format!("run-{id}"),
                workflow_type: "t".into(),
                input: Payload::encode(&()).expect("unit encodes"),
                random_seed: 1,
                continued_from: None,
                parent: None,
                task_queue: "default".into(),
                memo: Default::default(),
                limits: None,
            },
            policy: Default::default(),
            reuse: Default::default(),
            request_id: None,
            messages: Vec::new(),
            now_ms: 0,
            start_at_ms: None,
            debounce: None,
            queue: None,
        }
    }

    #[tokio::test]
    async fn an_injected_full_disk_fails_writes_only_until_cleared() {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let store = FaultStore::new(inner.clone());
        store.inject(Fault::Full, Target::Writes);
        let e = store.start_run(start("a")).await.unwrap_err();
        assert!(e.is_retryable(), "{e}");
        assert!(e.to_string().contains("full"), "{e}");
        assert!(store.get_run("a", None).await.unwrap().is_none());
        assert_eq!((store.injected(), store.commits()), (1, 0));
        store.clear();
        store.start_run(start("a")).await.unwrap();
        assert_eq!(store.commits(), 1);
    }

    #[tokio::test]
    async fn each_crash_variant_applies_or_not_then_refuses_everything() {
        for how in CRASHES {
            let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
            let store = FaultStore::new(inner.clone());
            store.crash_at(2, how);
            store.start_run(start("a")).await.unwrap();
            let second = store.start_run(start("b")).await;
            assert_eq!(second.is_ok(), how == Crash::AfterCommit, "{how:?}");
            assert!(store.is_crashed());
            let applied = inner.get_run("b", None).await.unwrap().is_some();
            assert_eq!(applied, how != Crash::NotApplied, "{how:?}");
            let later = store.get_run("a", None).await.unwrap_err();
            assert!(later.to_string().contains("crashed"), "{later}");
            assert!(!later.is_retryable());
            store.crashed().await;
        }
    }
}
