//! Queues of workflow starts (DBOS's queues): a start put on a named queue creates its run at
//! once but holds it until the queue admits it, at most `concurrency` of the queue's runs
//! running at once and at most its rate admitted per period, over every engine that shares
//! the store.

use super::flow::{FlowLimit, FlowRow, FlowScope};
use crate::metrics::MetricFamily;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The start time of a run held by its queue: later than any clock, so that no engine leases
/// it (a start delay that never runs out) until its queue admits it and sets the start time
/// to the time of its admission. Half of `i64::MAX`, so that sums with it cannot overflow.
pub const QUEUE_HELD_MS: i64 = i64::MAX / 2;

/// The settings of a queue of workflow starts, held by the store: how many of its runs may
/// run at once, and how many it admits per period, over every engine that shares the store.
/// A queue without settings admits every start at once.
///
/// ```
/// use std::time::Duration;
/// use wf_core::WorkflowQueue;
/// let q = WorkflowQueue::new("emails").concurrency(2).rate(100, Duration::from_secs(60));
/// assert_eq!(q.concurrency, Some(2));
/// assert_eq!(q.rate, Some((100, Duration::from_secs(60))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowQueue {
    /// The queue's name, as starts name it ([`StartOptions::queue`](crate::StartOptions::queue)).
    pub name: String,
    /// At most this many of the queue's admitted runs running at once; `None`: no cap.
    #[serde(default)]
    pub concurrency: Option<u32>,
    /// At most `limit` admissions per `period`, over every engine: a token bucket refilled at
    /// `limit` per `period`, holding at most `limit` (full when the queue is first set); the
    /// same bucket as [`FlowLimit::rate`]'s with its burst at the limit. `None`: no rate.
    #[serde(default)]
    pub rate: Option<(u32, Duration)>,
}

impl WorkflowQueue {
    /// A queue named `name` without limits (it admits every start at once).
    pub fn new(name: impl Into<String>) -> Self {
        WorkflowQueue {
            name: name.into(),
            concurrency: None,
            rate: None,
        }
    }

    /// Sets [`rate`](Self::rate): at most `limit` admissions per `period`.
    pub fn rate(mut self, limit: u32, period: Duration) -> Self {
        self.rate = Some((limit, period));
        self
    }

    /// Sets [`concurrency`](Self::concurrency): at most `n` of the queue's runs at once.
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// Why the store would refuse the settings: a bad name, a concurrency of 0, or a rate of
    /// 0 or over a period of 0 (they would hold every start for ever).
    pub fn check(&self) -> Result<(), String> {
        super::limits::Ident::TaskQueue
            .check(&self.name)
            .map_err(|e| format!("a workflow queue: {e}"))?;
        if self.concurrency == Some(0) {
            return Err(format!(
                "workflow queue {:?}: a concurrency of 0 would admit nothing; remove the \
                 queue's settings or set at least 1",
                self.name
            ));
        }
        if let Some((limit, period)) = self.rate {
            if limit == 0 || period.as_millis() == 0 {
                return Err(format!(
                    "workflow queue {:?}: a rate of {limit} per {period:?} would admit nothing;                      give at least 1 per 1 ms or more",
                    self.name
                ));
            }
        }
        Ok(())
    }
}

/// A queue's settings as the store holds them: with its rate's token bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueRow {
    /// The settings.
    pub queue: WorkflowQueue,
    /// Tokens in the rate's bucket at `refilled_ms` (0 without a rate).
    pub tokens: f64,
    /// When the bucket was last refilled (engine-clock ms).
    pub refilled_ms: i64,
}

impl QueueRow {
    /// Settings as set at `now_ms`, after `old` (the stored row of the name, if any): a new
    /// rate's bucket is full, one set again keeps its tokens (capped at the new limit), so a
    /// change grants no fresh burst.
    pub fn new(queue: WorkflowQueue, old: Option<&QueueRow>, now_ms: i64) -> Self {
        let tokens = match (queue.rate, old) {
            (Some((limit, _)), Some(old)) if old.queue.rate.is_some() => {
                old.tokens_at(now_ms).unwrap_or(0.0).min(f64::from(limit))
            }
            (Some((limit, _)), _) => f64::from(limit),
            (None, _) => 0.0,
        };
        QueueRow {
            queue,
            tokens,
            refilled_ms: now_ms,
        }
    }

    /// The rate's bucket as a flow limit's, whose arithmetic it shares.
    fn bucket(&self) -> Option<FlowRow> {
        let (limit, period) = self.queue.rate?;
        Some(FlowRow {
            limit: FlowLimit::rate(FlowScope::key(self.queue.name.clone()), limit, period),
            tokens: self.tokens,
            refilled_ms: self.refilled_ms,
        })
    }

    /// The rate's tokens at `now_ms`; `None` without a rate.
    pub fn tokens_at(&self, now_ms: i64) -> Option<f64> {
        self.bucket().map(|b| b.tokens_at(now_ms))
    }
}

/// The queue a start goes on, as the store takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedStart {
    /// The queue's name.
    pub queue: String,
    /// Lower first; 0 unless the start says otherwise.
    pub priority: i32,
    /// A deduplication id: refused while a held or running run of the queue has it.
    pub dedupe_id: Option<String>,
    /// The fairness key the run waits under (a tenant, a user): within one priority, the keys
    /// with held runs take turns by weight, whatever their backlogs. `None` is the key `""`.
    pub fairness_key: Option<String>,
    /// The weight of its key's turns (a finite number above 0; `None` is 1.0).
    pub fairness_weight: Option<f64>,
}

impl QueuedStart {
    /// A start on `queue` of priority 0, without deduplication id or fairness key.
    pub fn on(queue: impl Into<String>) -> Self {
        QueuedStart {
            queue: queue.into(),
            priority: 0,
            dedupe_id: None,
            fairness_key: None,
            fairness_weight: None,
        }
    }

    /// Its fairness key (`""` when unset).
    pub fn fairness_key(&self) -> &str {
        self.fairness_key.as_deref().unwrap_or("")
    }

    /// What its run costs its fairness key in virtual time: 1 / its weight (see the store's
    /// start-time fair queuing, shared with activity attempts).
    pub fn fairness_cost(&self) -> f64 {
        1.0 / self.fairness_weight.unwrap_or(1.0)
    }
}

/// A run's place on its queue, for describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSpot {
    /// The queue's name.
    pub queue: String,
    /// 1-based among the queue's held runs in admission order; `None` once admitted.
    pub position: Option<u64>,
}

/// A queue's settings as the tables of the SQL stores hold them: (concurrency, rate limit,
/// rate period in ms).
pub fn queue_columns(q: &WorkflowQueue) -> (Option<i64>, Option<i64>, Option<i64>) {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    (
        q.concurrency.map(i64::from),
        q.rate.map(|(limit, _)| i64::from(limit)),
        q.rate.map(|(_, period)| ms(period)),
    )
}

/// [`queue_columns`] read back, for queue `name`.
pub fn queue_of_columns(
    name: String,
    concurrency: Option<i64>,
    rate_limit: Option<i64>,
    rate_period_ms: Option<i64>,
) -> WorkflowQueue {
    let n = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
    WorkflowQueue {
        name,
        concurrency: concurrency.map(n),
        rate: rate_limit.zip(rate_period_ms).map(|(l, p)| {
            (
                n(l),
                Duration::from_millis(u64::try_from(p.max(0)).unwrap_or(0)),
            )
        }),
    }
}

/// What one admission pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueAdmission {
    /// Runs admitted (made ready) by this pass.
    pub admitted: u64,
    /// Runs still held on their queues after it.
    pub held: u64,
    /// The same, per queue that had held runs, by name.
    pub queues: Vec<QueuePass>,
}

/// What one admission pass did on one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueuePass {
    /// The queue's name.
    pub queue: String,
    /// Its runs the pass admitted.
    pub admitted: u64,
    /// Its runs the pass left held: the queue had no room for them (its concurrency full or
    /// its rate out of tokens).
    pub held: u64,
}

/// A queue of workflow starts with what it holds now (what `client.workflow_queues().usage()`
/// answers): its runs held and its admitted runs still running, and its rate's tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueUsage {
    /// The queue's settings; a queue without settings (runs on it, none set) has neither a
    /// concurrency nor a rate.
    pub queue: WorkflowQueue,
    /// Whether the store holds settings for it (else it admits every start at once).
    pub configured: bool,
    /// Its runs held, waiting for room (each running, not yet admitted), over every engine.
    pub waiting: u64,
    /// Its admitted runs still running: the slots of its concurrency taken.
    pub running: u64,
    /// Its rate's whole tokens now: how many runs it would admit at once; `None` without a
    /// rate.
    pub tokens: Option<u64>,
}

impl QueueUsage {
    /// `usage` as gauges, one sample per queue labelled by `queue`: `wf_queue_waiting`,
    /// `wf_queue_running` and (queues with a rate) `wf_queue_tokens`. What wf-http's
    /// `GET /metrics` adds to the engine's metrics.
    pub fn metric_families(usage: &[QueueUsage]) -> Vec<MetricFamily> {
        let labels = |u: &QueueUsage| vec![("queue", u.queue.name.clone())];
        let gauge = |name, help, value: &dyn Fn(&QueueUsage) -> Option<u64>| {
            super::flow::gauge_family(name, help, usage, &labels, value)
        };
        vec![
            gauge(
                "wf_queue_waiting",
                "Runs held on a queue of workflow starts, waiting for room, over every engine.",
                &|u| Some(u.waiting),
            ),
            gauge(
                "wf_queue_running",
                "Runs a queue of workflow starts admitted that are still running, over every engine.",
                &|u| Some(u.running),
            ),
            gauge(
                "wf_queue_tokens",
                "Whole tokens in a queue's rate bucket: runs it would admit at once.",
                &|u| u.tokens,
            ),
        ]
    }
}

/// How many runs of one queue are held and how many admitted and running, as a store counts
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueCount {
    /// The queue's name.
    pub queue: String,
    /// Runs held (not admitted) and running.
    pub held: u64,
    /// Runs admitted and running.
    pub running: u64,
}
