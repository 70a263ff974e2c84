//! The long-lived local tasks ("lanes") that run this thread's workflow tasks, one job after
//! another.
//!
//! Why not a task spawned per job: the future of a job holds a workflow task and its commit
//! inline (~11.6 KB), so each spawn allocated a block above glibc's per-thread cache sizes.
//! While the cache filled, the small allocations of the runs it keeps were carved out of the
//! blocks freed by earlier jobs, the next job's block no longer fit there, and the heap grew
//! by ~10 KB per run entering the cache: ~100 MB of free but unreturned memory at 10,000
//! cached runs (workload (f) of the bench). A lane allocates its future once.
//!
//! As many jobs run at once as before: a job goes to an idle lane, or to a new one when none
//! is idle. A lane that finds no job waits for one, unless enough lanes wait already: then it
//! ends (a burst's lanes do not stay allocated).

use super::{handoff, task, Mode, Worker};
use crate::runtime::spin::DIRECT_AWAKE;
use crate::store::WorkflowTask;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use tokio::sync::Notify;

/// At most this many lanes wait for a job; one more ends when it finds none.
const IDLE_LANES: usize = 64;

/// What a lane runs. The caller counted it in `in_flight`; the lane uncounts it when done.
pub(super) enum Job {
    /// Tasks for the messages handed over for this run, until none is left (the run is in
    /// `busy` meanwhile).
    Direct(String),
    /// A task leased from the store (boxed: a queued job stays small).
    Leased(Box<WorkflowTask>),
}

/// The jobs waiting for a lane and the lanes waiting for a job.
#[derive(Default)]
pub(super) struct Lanes {
    queue: RefCell<VecDeque<Job>>,
    /// Lanes waiting on `wake` and not woken yet.
    idle: Cell<usize>,
    wake: Notify,
}

/// Runs `job` on an idle lane, or on a new one if none is idle.
pub(super) fn run_job(w: &Rc<Worker>, job: Job) {
    let lanes = &w.lanes;
    lanes.queue.borrow_mut().push_back(job);
    match lanes.idle.get() {
        0 => {
            tokio::task::spawn_local(lane(w.clone()));
        }
        n => {
            // Uncounted here, not by the lane when it wakes: the next job must not count
            // on the same lane.
            lanes.idle.set(n - 1);
            lanes.wake.notify_one();
        }
    }
}

async fn run_one(w: &Worker, job: Job) {
    match job {
        Job::Direct(run_id) => {
            handoff::drain_direct(w, &run_id).await;
            w.busy.borrow_mut().remove(&run_id);
            w.in_flight.set(w.in_flight.get() - 1);
            // Only on a quiet engine: a busy thread is awake anyway.
            if w.in_flight.get() == 0 && w.core.config.poll_when_quiet {
                w.direct_awake_until
                    .set(Some(std::time::Instant::now() + DIRECT_AWAKE));
                // The loop is waiting on the channel (this thread is awake: the wake-up
                // is a local one).
                w.direct_awake.notify_one();
            }
        }
        Job::Leased(task) => {
            task::process(w, *task, Vec::new(), Mode::Leased).await;
            w.in_flight.set(w.in_flight.get() - 1);
            w.core.wake.workflow.notify_local();
        }
    }
}

/// One lane: runs jobs until none is left and enough lanes wait already.
async fn lane(me: Rc<Worker>) {
    loop {
        let next = me.lanes.queue.borrow_mut().pop_front();
        match next {
            Some(job) => run_one(&me, job).await,
            None if me.lanes.idle.get() >= IDLE_LANES => return,
            None => {
                // Counted before the wait registers (in this same poll): a job queued from
                // now on wakes this lane.
                me.lanes.idle.set(me.lanes.idle.get() + 1);
                me.lanes.wake.notified().await;
            }
        }
    }
}
