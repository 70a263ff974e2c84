//! The engine's flow counters: per flow limit, the attempts this engine leased under it and
//! those it refused (`wf_flow_started_total`, `wf_flow_throttled_total`); per queue of
//! workflow starts, the runs this engine's admission passes admitted and the starts it took
//! that had to wait (`wf_queue_admitted_total`, `wf_queue_throttled_total`).
//!
//! Unlike the other instruments, their labels are names an operator sets at run time (a
//! limit's scope, a queue's name), so each set of counters sits in a map behind a lock, taken
//! once per poll, commit or pass that counted something; the labels stay bounded by the limits
//! and queues the store held while this engine ran. The counts are this engine's: every engine
//! on a store counts its own, and Prometheus sums them.

use super::snapshot::{MetricFamily, MetricKind, Sample, SampleValue};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A flow limit's labels: scope kind, scope name, limit kind.
type LimitKey = (&'static str, String, &'static str);

/// The flow counters of one engine.
#[derive(Debug, Default)]
pub(crate) struct FlowMetrics {
    /// Per limit: `[started, throttled]`.
    limits: Mutex<BTreeMap<LimitKey, [u64; 2]>>,
    /// Per queue: `[admitted, throttled]`.
    queues: Mutex<BTreeMap<String, [u64; 2]>>,
}

impl FlowMetrics {
    /// Counts `started` attempts leased under the limit of kind `kind` of scope
    /// `scope_kind`/`scope`, and `throttled` attempts it refused.
    pub fn limit(
        &self,
        scope_kind: &'static str,
        scope: &str,
        kind: &'static str,
        started: u64,
        throttled: u64,
    ) {
        let mut limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        let c = limits
            .entry((scope_kind, scope.to_string(), kind))
            .or_default();
        c[0] += started;
        c[1] += throttled;
    }

    /// Counts `admitted` runs admitted by queue `queue`, and `throttled` starts that had to
    /// wait on it.
    pub fn queue(&self, queue: &str, admitted: u64, throttled: u64) {
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        let c = queues.entry(queue.to_string()).or_default();
        c[0] += admitted;
        c[1] += throttled;
    }

    /// Appends the four families to `out` (empty until something was counted).
    pub fn families(&self, out: &mut Vec<MetricFamily>) {
        let limits = self
            .limits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let queues = self
            .queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let per_limit = |i: usize| {
            limits
                .iter()
                .map(|((scope_kind, scope, kind), c)| Sample {
                    labels: vec![
                        ("scope_kind", scope_kind.to_string()),
                        ("scope", scope.clone()),
                        ("kind", kind.to_string()),
                    ],
                    value: SampleValue::Number(c[i] as f64),
                })
                .collect()
        };
        let per_queue = |i: usize| {
            queues
                .iter()
                .map(|(queue, c)| Sample {
                    labels: vec![("queue", queue.clone())],
                    value: SampleValue::Number(c[i] as f64),
                })
                .collect()
        };
        let counter = |name, help, samples| MetricFamily {
            name,
            help,
            kind: MetricKind::Counter,
            samples,
        };
        out.extend([
            counter(
                "wf_flow_started_total",
                "Activity attempts this engine leased under a flow limit (by a poll, or at once by a workflow task's commit). Per engine: sum over the engines of a store.",
                per_limit(0),
            ),
            counter(
                "wf_flow_throttled_total",
                "Due activity attempts a poll or a commit of this engine found and left unleased because this flow limit had no room (slots taken, or no tokens): one per attempt refused per poll. Per engine: sum over the engines of a store.",
                per_limit(1),
            ),
            counter(
                "wf_queue_admitted_total",
                "Runs this engine's admission passes admitted from a queue of workflow starts. Per engine: sum over the engines of a store.",
                per_queue(0),
            ),
            counter(
                "wf_queue_throttled_total",
                "Starts this engine put on a queue of workflow starts that could not be admitted at once (the queue had no room: its concurrency full or its rate out of tokens); each such run counts once. Per engine: sum over the engines of a store.",
                per_queue(1),
            ),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_limit_and_per_queue() {
        let m = FlowMetrics::default();
        m.limit("key", "openai", "concurrency", 3, 0);
        m.limit("key", "openai", "concurrency", 1, 2);
        m.limit("activity", "charge", "rate", 0, 1);
        m.queue("emails", 2, 0);
        m.queue("emails", 0, 1);
        let mut families = Vec::new();
        m.families(&mut families);
        let s = crate::metrics::MetricsSnapshot { families };
        let openai = [
            ("scope_kind", "key"),
            ("scope", "openai"),
            ("kind", "concurrency"),
        ];
        assert_eq!(s.value("wf_flow_started_total", &openai), Some(4.0));
        assert_eq!(s.value("wf_flow_throttled_total", &openai), Some(2.0));
        let charge = [
            ("scope_kind", "activity"),
            ("scope", "charge"),
            ("kind", "rate"),
        ];
        assert_eq!(s.value("wf_flow_started_total", &charge), Some(0.0));
        assert_eq!(
            s.value("wf_queue_admitted_total", &[("queue", "emails")]),
            Some(2.0)
        );
        assert_eq!(
            s.value("wf_queue_throttled_total", &[("queue", "emails")]),
            Some(1.0)
        );
    }
}
