//! Signals this engine put in the inbox of a run it runs: a query answered from the worker's
//! cache must not miss them (read your writes), yet a cached query should not read the store
//! when nothing was put there. So each inbox delivery of a signal marks its workflow id, and a
//! query on a marked run first reads the run's inbox (see `local/query.rs`).
//!
//! A mark is removed only when that is safe: once a read of the inbox that began after every
//! delivery to it had finished found no signal waiting, or once a task that closed the run
//! (which consumes every message) was sent after they had all finished. A mark of a running
//! run that no query reads stays until the run closes. A delivery is
//! counted from before it is sent to the store until after it is answered, and each finished
//! delivery takes a number from one counter: a read that saw the counter at `n` proves nothing
//! about a delivery numbered above `n` or still in flight.

use std::collections::HashMap;
use std::sync::Mutex;

/// A workflow id's deliveries to the inbox: how many are under way, and the number of the
/// last one that finished.
#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    in_flight: u32,
    last: u64,
}

/// The marks of one engine, by workflow id.
#[derive(Default)]
pub(crate) struct InboxMarks {
    inner: Mutex<Marks>,
}

#[derive(Default)]
struct Marks {
    by_workflow: HashMap<String, Mark>,
    /// Numbers finished deliveries.
    finished: u64,
}

/// A delivery under way; dropping it records the delivery as finished (sent or failed).
pub(crate) struct Delivery<'a> {
    marks: &'a InboxMarks,
    workflow_id: String,
}

impl Drop for Delivery<'_> {
    fn drop(&mut self) {
        self.marks.with(|m| {
            m.finished += 1;
            let finished = m.finished;
            let mark = m.by_workflow.entry(self.workflow_id.clone()).or_default();
            mark.in_flight = mark.in_flight.saturating_sub(1);
            mark.last = finished;
        });
    }
}

impl InboxMarks {
    fn with<T>(&self, f: impl FnOnce(&mut Marks) -> T) -> T {
        // A poisoned lock only means a panic elsewhere while it was held: the counters are
        // still consistent (each change is one statement).
        let mut marks = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut marks)
    }

    /// Marks `workflow_id` before a signal is sent to its inbox; keep the returned value until
    /// the store answered.
    pub fn deliver(&self, workflow_id: &str) -> Delivery<'_> {
        self.with(|m| {
            m.by_workflow
                .entry(workflow_id.to_string())
                .or_default()
                .in_flight += 1;
        });
        Delivery {
            marks: self,
            workflow_id: workflow_id.to_string(),
        }
    }

    /// If `workflow_id` is marked, the number to hand back to
    /// [`clear_if_settled`](Self::clear_if_settled) after reading its inbox (taken before
    /// the read); `None` when this engine put nothing in its inbox.
    pub fn check(&self, workflow_id: &str) -> Option<u64> {
        self.with(|m| {
            m.by_workflow
                .contains_key(workflow_id)
                .then_some(m.finished)
        })
    }

    /// Removes the mark after a read of the inbox, begun when the counter stood at `seen`,
    /// found no signal waiting: unless a delivery is under way or finished after `seen`.
    pub fn clear_if_settled(&self, workflow_id: &str, seen: u64) {
        self.with(|m| {
            if m.by_workflow
                .get(workflow_id)
                .is_some_and(|mark| mark.in_flight == 0 && mark.last <= seen)
            {
                m.by_workflow.remove(workflow_id);
            }
        });
    }

    /// The number of deliveries finished so far, for
    /// [`clear_if_settled`](Self::clear_if_settled) after a store operation begun now.
    pub fn finished(&self) -> u64 {
        self.with(|m| m.finished)
    }
}

#[cfg(test)]
mod tests {
    use super::InboxMarks;

    #[test]
    fn a_mark_stays_until_a_read_after_its_last_delivery() {
        let marks = InboxMarks::default();
        assert_eq!(marks.check("a"), None, "nothing delivered");
        let early = marks.check("a");
        let d = marks.deliver("a");
        let during = marks.check("a").expect("marked while in flight");
        marks.clear_if_settled("a", during);
        assert!(marks.check("a").is_some(), "a delivery under way keeps it");
        drop(d);
        marks.clear_if_settled("a", during);
        assert!(
            marks.check("a").is_some(),
            "a read begun before the delivery finished proves nothing"
        );
        assert_eq!(early, None);
        let after = marks.check("a").expect("still marked");
        marks.clear_if_settled("a", after);
        assert_eq!(marks.check("a"), None, "a read after it settles it");
    }

    #[test]
    fn a_commit_sent_before_a_delivery_finished_does_not_clear_it() {
        let marks = InboxMarks::default();
        let d = marks.deliver("a");
        let sent = marks.finished();
        drop(d);
        marks.clear_if_settled("a", sent);
        assert!(marks.check("a").is_some());
        let sent = marks.finished();
        marks.clear_if_settled("a", sent);
        assert_eq!(marks.check("a"), None);
    }
}
