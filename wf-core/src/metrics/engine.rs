//! The engine's instruments. Labels are bounded: one set per workflow type and per activity
//! registered when the engine was built (names seen later count under [`UNREGISTERED`]), and
//! fixed outcome names; never workflow or run ids. The per-name maps are built once and only
//! read afterwards, so recording takes no lock.

use super::instruments::{Counter, Gauge, Histogram, SECONDS};
use super::snapshot::{MetricFamily, MetricKind, MetricsSnapshot, Sample, SampleValue};
use super::store::StoreMetrics;
use std::collections::BTreeMap;

/// The label value of names that were not registered when the engine was built.
pub(crate) const UNREGISTERED: &str = "_unregistered";

/// How a workflow task ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TaskOutcome {
    /// Its commit is durable.
    Committed = 0,
    /// The code failed (a panic, nondeterminism): the task is retried after a backoff.
    Failed = 1,
    /// Its result was not committed (the run moved on, the store refused the commit or could
    /// not be read); the work is redone from the store.
    Discarded = 2,
}
const TASK_OUTCOMES: [&str; 3] = ["committed", "failed", "discarded"];

/// A step of an update, as the engine records it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum UpdateStep {
    Accepted = 0,
    Rejected = 1,
    Completed = 2,
    Failed = 3,
}
const UPDATE_STEPS: [&str; 4] = ["accepted", "rejected", "completed", "failed"];

/// Why an activity attempt failed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AttemptFailure {
    /// The activity returned an error.
    Error = 0,
    /// It panicked.
    Panic = 1,
    /// Its start-to-close timeout ran out.
    Timeout = 2,
}
const ATTEMPT_FAILURES: [&str; 3] = ["error", "panic", "timeout"];

/// How an activity ended for good.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Resolution {
    Completed = 0,
    Failed = 1,
    TimedOut = 2,
}
const RESOLUTIONS: [&str; 3] = ["completed", "failed", "timed_out"];

/// The instruments of one workflow type.
#[derive(Debug)]
pub(crate) struct TypeMetrics {
    tasks: [Counter; 3],
    task_seconds: Histogram,
    pub replays: Counter,
    pub replayed_events: Counter,
    pub signals: Counter,
    updates: [Counter; 4],
}

impl TypeMetrics {
    fn new() -> TypeMetrics {
        TypeMetrics {
            tasks: Default::default(),
            task_seconds: Histogram::new(&SECONDS),
            replays: Counter::default(),
            replayed_events: Counter::default(),
            signals: Counter::default(),
            updates: Default::default(),
        }
    }

    /// Records a workflow task that ended as `outcome` after `took`.
    pub fn task(&self, outcome: TaskOutcome, took: std::time::Duration) {
        self.tasks[outcome as usize].inc();
        self.task_seconds.observe_duration(took);
    }

    /// Records `n` updates that reached `step`.
    pub fn updates(&self, step: UpdateStep, n: u64) {
        self.updates[step as usize].add(n);
    }

    /// Records a replay of `events` history events.
    pub fn replayed(&self, events: usize) {
        self.replays.inc();
        self.replayed_events.add(events as u64);
    }
}

/// The instruments of one activity name.
#[derive(Debug)]
pub(crate) struct ActivityMetrics {
    pub attempts: Counter,
    failures: [Counter; 3],
    pub retries: Counter,
    /// Attempts left open for completion by task token.
    pub held: Counter,
    resolved: [Counter; 3],
    pub attempt_seconds: Histogram,
}

impl ActivityMetrics {
    fn new() -> ActivityMetrics {
        ActivityMetrics {
            attempts: Counter::default(),
            failures: Default::default(),
            retries: Counter::default(),
            held: Counter::default(),
            resolved: Default::default(),
            attempt_seconds: Histogram::new(&SECONDS),
        }
    }

    pub fn failed(&self, why: AttemptFailure) {
        self.failures[why as usize].inc();
    }

    pub fn resolved(&self, how: Resolution) {
        self.resolved[how as usize].inc();
    }
}

/// Whether a cache lookup was for a workflow task or a query.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lookup {
    Task = 0,
    Query = 1,
}
const LOOKUPS: [&str; 2] = ["task", "query"];

/// Every instrument of one engine.
#[derive(Debug)]
pub(crate) struct EngineMetrics {
    types: BTreeMap<String, TypeMetrics>,
    other_type: TypeMetrics,
    activities: BTreeMap<String, ActivityMetrics>,
    other_activity: ActivityMetrics,
    /// A workflow task's commit as the worker waits for it (any store).
    pub task_commit_seconds: Histogram,
    cache_hits: [Counter; 2],
    cache_misses: [Counter; 2],
    pub cache_evictions: Counter,
    pub cache_runs: Gauge,
    cache_capacity: usize,
    /// Messages handed to the workflow worker in memory, not yet taken into a task.
    pub inbox_depth: Gauge,
    pub timers_fired: Counter,
    /// Per flow limit and per queue of workflow starts.
    pub flow: super::flow::FlowMetrics,
}

impl EngineMetrics {
    /// Instruments for these workflow types and activity names.
    pub fn new<'a>(
        types: impl IntoIterator<Item = &'a str>,
        activities: impl IntoIterator<Item = &'a str>,
        cache_capacity: usize,
    ) -> EngineMetrics {
        EngineMetrics {
            types: types
                .into_iter()
                .map(|t| (t.to_string(), TypeMetrics::new()))
                .collect(),
            other_type: TypeMetrics::new(),
            activities: activities
                .into_iter()
                .map(|a| (a.to_string(), ActivityMetrics::new()))
                .collect(),
            other_activity: ActivityMetrics::new(),
            task_commit_seconds: Histogram::new(&SECONDS),
            cache_hits: Default::default(),
            cache_misses: Default::default(),
            cache_evictions: Counter::default(),
            cache_runs: Gauge::default(),
            cache_capacity,
            inbox_depth: Gauge::default(),
            timers_fired: Counter::default(),
            flow: super::flow::FlowMetrics::default(),
        }
    }

    /// The instruments of workflow type `name`.
    pub fn of_type(&self, name: &str) -> &TypeMetrics {
        self.types.get(name).unwrap_or(&self.other_type)
    }

    /// The instruments of activity `name`.
    pub fn of_activity(&self, name: &str) -> &ActivityMetrics {
        self.activities.get(name).unwrap_or(&self.other_activity)
    }

    /// Records a cache lookup.
    pub fn cache_lookup(&self, what: Lookup, hit: bool) {
        let counters = if hit {
            &self.cache_hits
        } else {
            &self.cache_misses
        };
        counters[what as usize].inc();
    }

    /// Everything, with the store's instruments if it has any.
    pub fn snapshot(&self, store: Option<&StoreMetrics>) -> MetricsSnapshot {
        let mut families = Vec::with_capacity(32);
        self.workflow_families(&mut families);
        self.activity_families(&mut families);
        self.engine_families(&mut families);
        self.flow.families(&mut families);
        if let Some(store) = store {
            store.families(&mut families);
        }
        MetricsSnapshot { families }
    }

    /// Every workflow type, then the unregistered ones.
    fn types(&self) -> impl Iterator<Item = (&str, &TypeMetrics)> {
        let types = self.types.iter().map(|(k, v)| (k.as_str(), v));
        types.chain([(UNREGISTERED, &self.other_type)])
    }

    fn activities(&self) -> impl Iterator<Item = (&str, &ActivityMetrics)> {
        let named = self.activities.iter().map(|(k, v)| (k.as_str(), v));
        named.chain([(UNREGISTERED, &self.other_activity)])
    }

    fn workflow_families(&self, out: &mut Vec<MetricFamily>) {
        let per_type = |label: &'static str,
                        values: &[&str],
                        get: &dyn Fn(&TypeMetrics, usize) -> SampleValue| {
            labelled(self.types(), "workflow_type", label, values, get)
        };
        out.extend([
            family(
                "wf_workflow_tasks_total",
                "Workflow tasks run, by workflow type and outcome (committed; failed: the code panicked or diverged from its history, retried after a backoff; discarded: not committed, redone from the store).",
                MetricKind::Counter,
                per_type("outcome", &TASK_OUTCOMES, &|m, i| m.tasks[i].sample()),
            ),
            family(
                "wf_workflow_task_seconds",
                "Duration of a workflow task, from loading the run to its commit's answer.",
                MetricKind::Histogram,
                per_type("", &[""], &|m, _| m.task_seconds.sample()),
            ),
            family(
                "wf_replays_total",
                "Runs rebuilt from their history (not in the cache: evicted, or run by another engine), for a workflow task or a query.",
                MetricKind::Counter,
                per_type("", &[""], &|m, _| m.replays.sample()),
            ),
            family(
                "wf_replayed_events_total",
                "History events read by replays.",
                MetricKind::Counter,
                per_type("", &[""], &|m, _| m.replayed_events.sample()),
            ),
            family(
                "wf_signals_delivered_total",
                "Signals delivered to runs (recorded by a committed workflow task).",
                MetricKind::Counter,
                per_type("", &[""], &|m, _| m.signals.sample()),
            ),
            family(
                "wf_updates_total",
                "Updates by the step they reached: accepted by the validator, rejected (no event written), completed, failed (the handler returned an error).",
                MetricKind::Counter,
                per_type("outcome", &UPDATE_STEPS, &|m, i| m.updates[i].sample()),
            ),
        ]);
    }

    fn activity_families(&self, out: &mut Vec<MetricFamily>) {
        let per_name =
            |label: &'static str,
             values: &[&str],
             get: &dyn Fn(&ActivityMetrics, usize) -> SampleValue| {
                labelled(self.activities(), "activity", label, values, get)
            };
        out.extend([
            family(
                "wf_activity_attempts_total",
                "Activity attempts started by this engine.",
                MetricKind::Counter,
                per_name("", &[""], &|m, _| m.attempts.sample()),
            ),
            family(
                "wf_activity_attempt_failures_total",
                "Activity attempts that failed, by reason (error returned, panic, start-to-close timeout).",
                MetricKind::Counter,
                per_name("reason", &ATTEMPT_FAILURES, &|m, i| m.failures[i].sample()),
            ),
            family(
                "wf_activity_retries_total",
                "Activity retries scheduled after a failed attempt.",
                MetricKind::Counter,
                per_name("", &[""], &|m, _| m.retries.sample()),
            ),
            family(
                "wf_activity_async_holds_total",
                "Activity attempts left open for completion by task token (will_complete_async).",
                MetricKind::Counter,
                per_name("", &[""], &|m, _| m.held.sample()),
            ),
            family(
                "wf_activities_resolved_total",
                "Activities that ended for good, by outcome.",
                MetricKind::Counter,
                per_name("outcome", &RESOLUTIONS, &|m, i| m.resolved[i].sample()),
            ),
            family(
                "wf_activity_attempt_seconds",
                "Duration of an activity attempt.",
                MetricKind::Histogram,
                per_name("", &[""], &|m, _| m.attempt_seconds.sample()),
            ),
        ]);
    }

    fn engine_families(&self, out: &mut Vec<MetricFamily>) {
        let by_lookup = |counters: &[Counter; 2]| {
            LOOKUPS
                .iter()
                .zip(counters)
                .map(|(l, c)| Sample {
                    labels: vec![("lookup", l.to_string())],
                    value: c.sample(),
                })
                .collect()
        };
        let number = |v: f64| {
            vec![Sample {
                labels: vec![],
                value: SampleValue::Number(v),
            }]
        };
        out.extend([
            family(
                "wf_workflow_task_commit_seconds",
                "Duration of a workflow task's commit as the worker waits for it (queueing, group commit and fsync included).",
                MetricKind::Histogram,
                vec![Sample { labels: vec![], value: self.task_commit_seconds.sample() }],
            ),
            family(
                "wf_cache_hits_total",
                "Runs found in the cache of live runs, by lookup (a workflow task, a query).",
                MetricKind::Counter,
                by_lookup(&self.cache_hits),
            ),
            family(
                "wf_cache_misses_total",
                "Runs not found in the cache (rebuilt by replay), by lookup.",
                MetricKind::Counter,
                by_lookup(&self.cache_misses),
            ),
            family(
                "wf_cache_evictions_total",
                "Runs evicted from the cache to stay within its capacity.",
                MetricKind::Counter,
                number(self.cache_evictions.get() as f64),
            ),
            family(
                "wf_cache_runs",
                "Runs held in the cache.",
                MetricKind::Gauge,
                number(self.cache_runs.get() as f64),
            ),
            family(
                "wf_cache_capacity",
                "How many runs the cache holds at most.",
                MetricKind::Gauge,
                number(self.cache_capacity as f64),
            ),
            family(
                "wf_worker_inbox_depth",
                "Messages (signals, updates, activity results, starts) handed to the workflow worker in memory and not yet taken into a workflow task.",
                MetricKind::Gauge,
                number(self.inbox_depth.get() as f64),
            ),
            family(
                "wf_timers_fired_total",
                "Durable timers fired by this engine.",
                MetricKind::Counter,
                number(self.timers_fired.get() as f64),
            ),
        ]);
    }
}

/// One sample per name of `named` (labelled `name_label`) and per value of `values` (labelled
/// `label`, unless it is empty), each read by `get` from the name's metrics and the value's
/// index.
fn labelled<'a, M: 'a>(
    named: impl Iterator<Item = (&'a str, &'a M)>,
    name_label: &'static str,
    label: &'static str,
    values: &[&str],
    get: &dyn Fn(&M, usize) -> SampleValue,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    for (name, m) in named {
        for (i, v) in values.iter().enumerate() {
            let mut labels = vec![(name_label, name.to_string())];
            if !label.is_empty() {
                labels.push((label, v.to_string()));
            }
            samples.push(Sample {
                labels,
                value: get(m, i),
            });
        }
    }
    samples
}

fn family(
    name: &'static str,
    help: &'static str,
    kind: MetricKind,
    samples: Vec<Sample>,
) -> MetricFamily {
    MetricFamily {
        name,
        help,
        kind,
        samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_not_registered_count_apart_and_every_label_set_is_listed() {
        let m = EngineMetrics::new(["order"], ["charge"], 10);
        m.of_type("order").updates(UpdateStep::Rejected, 2);
        m.of_type("stranger").signals.inc();
        m.of_activity("charge").failed(AttemptFailure::Timeout);
        let s = m.snapshot(None);
        let updates = |t, o| s.value("wf_updates_total", &[("workflow_type", t), ("outcome", o)]);
        assert_eq!(updates("order", "rejected"), Some(2.0));
        assert_eq!(updates("order", "accepted"), Some(0.0));
        assert_eq!(updates(UNREGISTERED, "failed"), Some(0.0));
        assert_eq!(
            s.value(
                "wf_signals_delivered_total",
                &[("workflow_type", UNREGISTERED)]
            ),
            Some(1.0)
        );
        assert_eq!(
            s.value(
                "wf_activity_attempt_failures_total",
                &[("activity", "charge"), ("reason", "timeout")]
            ),
            Some(1.0)
        );
        assert_eq!(s.value("wf_cache_capacity", &[]), Some(10.0));
        // No store instruments without a store that has them.
        assert!(s.family("wf_store_transactions_total").is_none());
    }
}
