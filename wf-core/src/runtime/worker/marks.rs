//! Signals this engine put in the inbox of a run it runs: a query answered from the worker's
//! cache must not miss them (read your writes), yet a cached query should not read the store
//! when nothing was put there. So each inbox delivery of a signal marks its workflow id, and a
//! query on a marked run first reads the run's inbox (see `in_process/query.rs`).
//!
//! Marks matter only for runs in the worker's cache (a query on any other run reads the store),
//! so they are kept only for the workflow ids whose running run the cache holds: a delivery to
//! any other run leaves no mark once it finished, and memory stays bounded by the cache, not by
//! the number of runs signalled. A run entering the cache may have missed signals delivered
//! while it was out (its task read the inbox before they landed, or did not read it): it enters
//! marked, and a query that checked the marks before it entered does not take the cache's
//! answer (the entry's number is above the one the query saw; it reads the store instead).
//!
//! A mark of a cached run is removed only when that is safe: once a read of the inbox that
//! began after every delivery to it had finished found no signal waiting, or when the run
//! closed or left the cache. A delivery is counted from before it is sent to the store until
//! after it is answered, and each finished delivery takes a number from one counter: a read
//! that saw the counter at `n` proves nothing about a delivery numbered above `n` or still in
//! flight.

use std::collections::{HashMap, HashSet};
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
    /// The workflow ids whose running run the worker's cache holds (or took out for a task).
    cached: HashSet<String>,
    /// Numbers the entries of runs into the cache (see [`InboxMarks::entered`]).
    entries: u64,
}

impl Marks {
    /// Drops `workflow_id`'s mark if nothing is under way and its run is not cached.
    fn forget_if_uncached(&mut self, workflow_id: &str) {
        if !self.cached.contains(workflow_id)
            && self
                .by_workflow
                .get(workflow_id)
                .is_some_and(|mark| mark.in_flight == 0)
        {
            self.by_workflow.remove(workflow_id);
        }
    }
}

/// What a query learns from the marks before it asks the cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Check {
    /// If the workflow id is marked, the number to hand back to
    /// [`InboxMarks::clear_if_settled`] after reading its inbox; `None` when unmarked.
    pub marked: Option<u64>,
    /// The number of the last entry into the cache so far: a cache entry numbered above it
    /// entered after this check, marked, and must not answer.
    pub entries: u64,
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
            m.forget_if_uncached(&self.workflow_id);
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

    /// Whether `workflow_id` is marked (with the number to hand back to
    /// [`clear_if_settled`](Self::clear_if_settled) after reading its inbox, taken before the
    /// read), and the number of the last entry into the cache.
    pub fn check(&self, workflow_id: &str) -> Check {
        self.with(|m| Check {
            marked: m
                .by_workflow
                .contains_key(workflow_id)
                .then_some(m.finished),
            entries: m.entries,
        })
    }

    /// Records that the worker puts a running run of `workflow_id` in its cache. If it was not
    /// there, the run enters marked (it may have missed signals delivered while it was out),
    /// and the entry's number is returned: a query whose [`check`](Self::check) saw a lower
    /// one must not take the cache's answer. `0` when the run stayed in the cache (its marks
    /// were kept all along).
    pub fn entered(&self, workflow_id: &str) -> u64 {
        self.with(|m| {
            if m.cached.contains(workflow_id) {
                return 0;
            }
            m.cached.insert(workflow_id.to_string());
            let finished = m.finished;
            let mark = m.by_workflow.entry(workflow_id.to_string()).or_default();
            mark.last = mark.last.max(finished);
            m.entries += 1;
            m.entries
        })
    }

    /// Records that the running run of `workflow_id` left the cache (evicted, closed, or its
    /// task failed): its mark goes once no delivery to it is under way.
    pub fn left(&self, workflow_id: &str) {
        self.with(|m| {
            m.cached.remove(workflow_id);
            m.forget_if_uncached(workflow_id);
        });
    }

    /// How many workflow ids are marked (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.with(|m| m.by_workflow.len())
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

    /// The marks of an engine whose cache holds run "a".
    fn cached_a() -> InboxMarks {
        let marks = InboxMarks::default();
        marks.entered("a");
        let seen = marks.check("a").marked.expect("a run enters marked");
        marks.clear_if_settled("a", seen);
        assert_eq!(marks.check("a").marked, None);
        marks
    }

    #[test]
    fn a_mark_stays_until_a_read_after_its_last_delivery() {
        let marks = cached_a();
        let early = marks.check("a").marked;
        let d = marks.deliver("a");
        let during = marks.check("a").marked.expect("marked while in flight");
        marks.clear_if_settled("a", during);
        assert!(
            marks.check("a").marked.is_some(),
            "a delivery under way keeps it"
        );
        drop(d);
        marks.clear_if_settled("a", during);
        assert!(
            marks.check("a").marked.is_some(),
            "a read begun before the delivery finished proves nothing"
        );
        assert_eq!(early, None);
        let after = marks.check("a").marked.expect("still marked");
        marks.clear_if_settled("a", after);
        assert_eq!(marks.check("a").marked, None, "a read after it settles it");
    }

    #[test]
    fn a_commit_sent_before_a_delivery_finished_does_not_clear_it() {
        let marks = cached_a();
        let d = marks.deliver("a");
        let sent = marks.finished();
        drop(d);
        marks.clear_if_settled("a", sent);
        assert!(marks.check("a").marked.is_some());
        let sent = marks.finished();
        marks.clear_if_settled("a", sent);
        assert_eq!(marks.check("a").marked, None);
    }

    #[test]
    fn runs_out_of_the_cache_keep_no_mark() {
        let marks = InboxMarks::default();
        for i in 0..1000 {
            drop(marks.deliver(&format!("w{i}")));
        }
        assert_eq!(
            marks.len(),
            0,
            "a finished delivery to an uncached run leaves nothing"
        );
        let d = marks.deliver("b");
        assert!(marks.check("b").marked.is_some(), "marked while under way");
        drop(d);
        assert_eq!(marks.check("b").marked, None);
    }

    #[test]
    fn a_run_entering_the_cache_is_marked_and_numbered() {
        let marks = InboxMarks::default();
        let before = marks.check("a");
        assert_eq!(before.marked, None);
        let entry = marks.entered("a");
        assert!(
            entry > before.entries,
            "a query checked before must not take the cache"
        );
        assert!(
            marks.check("a").marked.is_some(),
            "it may have missed signals"
        );
        assert_eq!(
            marks.entered("a"),
            0,
            "staying in the cache is no new entry"
        );
        let d = marks.deliver("a");
        drop(d);
        marks.left("a");
        assert_eq!(marks.len(), 0, "leaving the cache drops its mark");
        let d = marks.deliver("a");
        marks.left("a");
        assert!(
            marks.check("a").marked.is_some(),
            "not while a delivery is under way"
        );
        drop(d);
        assert_eq!(marks.len(), 0);
    }
}
