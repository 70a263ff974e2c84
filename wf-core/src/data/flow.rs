//! Flow limits: caps on activity attempts that the store holds, so that they bind every engine
//! sharing it. A limit has a [`FlowScope`] (an activity name, a task queue, or a key the
//! workflow gives per call) and a [`FlowRule`]: at most N attempts running at once, or at most
//! M started per period (a token bucket with a burst).

use crate::metrics::{MetricFamily, MetricKind, Sample, SampleValue};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a [`FlowLimit`] counts: the activity attempts of one activity name, of one task queue
/// (the queue of the run that scheduled them), or of one key given per call
/// (`ctx.activity(..).flow_key("openai")`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum FlowScope {
    /// Attempts of the activity with this wire name.
    Activity(String),
    /// Attempts of activities scheduled by runs on this task queue.
    TaskQueue(String),
    /// Attempts of activities called with this flow key.
    Key(String),
}

impl FlowScope {
    /// The attempts of the activity named `name` (its wire name).
    pub fn activity(name: impl Into<String>) -> Self {
        FlowScope::Activity(name.into())
    }

    /// The attempts of activities scheduled by runs on task queue `queue`.
    pub fn task_queue(queue: impl Into<String>) -> Self {
        FlowScope::TaskQueue(queue.into())
    }

    /// The attempts of activities called with flow key `key`.
    pub fn key(key: impl Into<String>) -> Self {
        FlowScope::Key(key.into())
    }

    /// The scope's kind as stored: `"activity"`, `"task_queue"` or `"key"`.
    pub fn kind(&self) -> &'static str {
        match self {
            FlowScope::Activity(_) => "activity",
            FlowScope::TaskQueue(_) => "task_queue",
            FlowScope::Key(_) => "key",
        }
    }

    /// The activity name, task queue or key.
    pub fn name(&self) -> &str {
        match self {
            FlowScope::Activity(n) | FlowScope::TaskQueue(n) | FlowScope::Key(n) => n,
        }
    }

    /// The scope of stored `kind` and `name`, if `kind` is one of [`kind`](Self::kind)'s.
    pub fn from_parts(kind: &str, name: String) -> Option<Self> {
        match kind {
            "activity" => Some(FlowScope::Activity(name)),
            "task_queue" => Some(FlowScope::TaskQueue(name)),
            "key" => Some(FlowScope::Key(name)),
            _ => None,
        }
    }

    /// Whether an attempt of activity `name`, scheduled on `task_queue` with flow key `key`,
    /// falls in this scope.
    pub fn covers(&self, name: &str, task_queue: &str, key: Option<&str>) -> bool {
        match self {
            FlowScope::Activity(n) => n == name,
            FlowScope::TaskQueue(q) => q == task_queue,
            FlowScope::Key(k) => key == Some(k.as_str()),
        }
    }
}

impl std::fmt::Display for FlowScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.kind(), self.name())
    }
}

/// What a [`FlowLimit`] allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowRule {
    /// At most `max` attempts running at once, over every engine. An attempt holds its slot
    /// from its lease until it ends (completes, fails, times out, is released) or its engine's
    /// liveness lease runs out.
    Concurrency {
        /// Attempts at once.
        max: u32,
    },
    /// At most `limit` attempts started per `period` on average, over every engine, with up
    /// to `burst` started at once after a quiet spell (a token bucket of `burst` tokens,
    /// refilled at `limit` per `period`).
    Rate {
        /// Attempts per period.
        limit: u32,
        /// The period.
        #[serde(with = "millis")]
        period: Duration,
        /// The bucket's size: most attempts started at once.
        burst: u32,
    },
}

impl FlowRule {
    /// The rule's kind.
    pub fn kind(&self) -> FlowKind {
        match self {
            FlowRule::Concurrency { .. } => FlowKind::Concurrency,
            FlowRule::Rate { .. } => FlowKind::Rate,
        }
    }
}

/// The kind of a [`FlowRule`]: a scope holds at most one limit of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// [`FlowRule::Concurrency`].
    Concurrency,
    /// [`FlowRule::Rate`].
    Rate,
}

impl FlowKind {
    /// The kind as stored: `"concurrency"` or `"rate"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowKind::Concurrency => "concurrency",
            FlowKind::Rate => "rate",
        }
    }
}

/// A limit the store holds on the activity attempts of one [`FlowScope`]: at most one limit of
/// each kind (concurrency, rate) per scope; setting one replaces the scope's limit of that
/// kind. An attempt starts only when every limit whose scope covers it lets it.
///
/// ```
/// use std::time::Duration;
/// use wf_core::{FlowLimit, FlowScope};
/// let at_once = FlowLimit::concurrency(FlowScope::key("openai"), 4);
/// let per_minute = FlowLimit::rate(FlowScope::key("openai"), 500, Duration::from_secs(60))
///     .burst(50);
/// assert_eq!(per_minute.scope, at_once.scope);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowLimit {
    /// What it counts.
    pub scope: FlowScope,
    /// What it allows.
    pub rule: FlowRule,
}

impl FlowLimit {
    /// At most `max` attempts of `scope` running at once, over every engine on the store.
    /// `0` stops the scope's attempts from starting (those running go on).
    pub fn concurrency(scope: FlowScope, max: u32) -> Self {
        FlowLimit {
            scope,
            rule: FlowRule::Concurrency { max },
        }
    }

    /// At most `limit` attempts of `scope` started per `period`, over every engine on the
    /// store; the burst is `limit` (change it with [`burst`](Self::burst)).
    pub fn rate(scope: FlowScope, limit: u32, period: Duration) -> Self {
        FlowLimit {
            scope,
            rule: FlowRule::Rate {
                limit,
                period,
                burst: limit,
            },
        }
    }

    /// The most attempts a rate limit starts at once after a quiet spell (at least 1);
    /// nothing for a concurrency limit.
    pub fn burst(mut self, burst: u32) -> Self {
        if let FlowRule::Rate { burst: b, .. } = &mut self.rule {
            *b = burst;
        }
        self
    }

    /// Why the limit cannot be set, if it cannot: a scope name out of the limits on names, a
    /// rate with no period or a burst of 0.
    pub fn check(&self) -> Result<(), String> {
        let ident = match &self.scope {
            FlowScope::Activity(_) => super::limits::Ident::ActivityName,
            FlowScope::TaskQueue(_) => super::limits::Ident::TaskQueue,
            FlowScope::Key(_) => super::limits::Ident::FlowKey,
        };
        ident
            .check(self.scope.name())
            .map_err(|e| format!("a flow limit: {e}"))?;
        if let FlowRule::Rate {
            limit,
            period,
            burst,
        } = &self.rule
        {
            if period.as_millis() == 0 {
                return Err(format!(
                    "the rate limit of {} has a period of zero; give it one of 1 ms or more",
                    self.scope
                ));
            }
            if *burst == 0 && *limit > 0 {
                return Err(format!(
                    "the rate limit of {} has a burst of 0, which would start nothing; give it 1 or more",
                    self.scope
                ));
            }
        }
        Ok(())
    }
}

/// A flow limit with what it binds now (what `client.flow_limits().usage()` answers):
/// the attempts it covers running and waiting, and a rate limit's tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowUsage {
    /// The limit.
    pub limit: FlowLimit,
    /// The attempts it covers that hold a live lease (running), over every engine.
    pub running: u64,
    /// The attempts it covers that are due and wait for a lease (held back by this limit or
    /// another, or not yet polled).
    pub waiting: u64,
    /// A rate limit's whole tokens now: how many attempts it would start at once; `None` for
    /// a concurrency limit.
    pub tokens: Option<u64>,
}

impl FlowUsage {
    /// `usage` as gauges, one sample per limit labelled by `scope_kind`, `scope` and `kind`:
    /// `wf_flow_running`, `wf_flow_waiting` and (rate limits) `wf_flow_tokens`. What wf-http's
    /// `GET /metrics` adds to the engine's metrics.
    pub fn metric_families(usage: &[FlowUsage]) -> Vec<MetricFamily> {
        let labels = |u: &FlowUsage| {
            vec![
                ("scope_kind", u.limit.scope.kind().to_string()),
                ("scope", u.limit.scope.name().to_string()),
                ("kind", u.limit.rule.kind().as_str().to_string()),
            ]
        };
        let gauge = |name, help, value: &dyn Fn(&FlowUsage) -> Option<u64>| {
            gauge_family(name, help, usage, &labels, value)
        };
        vec![
            gauge(
                "wf_flow_running",
                "Activity attempts a flow limit covers that hold a live lease, over every engine.",
                &|u| Some(u.running),
            ),
            gauge(
                "wf_flow_waiting",
                "Activity attempts a flow limit covers that are due and wait for a lease.",
                &|u| Some(u.waiting),
            ),
            gauge(
                "wf_flow_tokens",
                "Whole tokens in a rate limit's bucket: attempts it would start at once.",
                &|u| u.tokens,
            ),
        ]
    }
}

/// A gauge with one sample per item of `items` that `value` gives a value, labelled by
/// `labels`: the families of [`FlowUsage::metric_families`] and of the queues' usage.
pub(crate) fn gauge_family<T>(
    name: &'static str,
    help: &'static str,
    items: &[T],
    labels: &dyn Fn(&T) -> Vec<(&'static str, String)>,
    value: &dyn Fn(&T) -> Option<u64>,
) -> MetricFamily {
    MetricFamily {
        name,
        help,
        kind: MetricKind::Gauge,
        samples: items
            .iter()
            .filter_map(|u| {
                value(u).map(|v| Sample {
                    labels: labels(u),
                    value: SampleValue::Number(v as f64),
                })
            })
            .collect(),
    }
}

/// A flow limit as stored, with the state of a rate limit's token bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRow {
    /// The limit.
    pub limit: FlowLimit,
    /// Tokens in the bucket at `refilled_ms` (a rate limit's; 0 for a concurrency limit).
    pub tokens: f64,
    /// When the bucket was last refilled (engine-clock ms).
    pub refilled_ms: i64,
}

impl FlowRow {
    /// A limit as first set at `now_ms`: a rate limit's bucket full.
    pub fn new(limit: FlowLimit, now_ms: i64) -> Self {
        let tokens = match &limit.rule {
            FlowRule::Rate { burst, .. } => f64::from(*burst),
            FlowRule::Concurrency { .. } => 0.0,
        };
        FlowRow {
            limit,
            tokens,
            refilled_ms: now_ms,
        }
    }

    /// A rate limit's tokens at `now_ms` (refilled since `refilled_ms`, capped at the burst);
    /// 0 for a concurrency limit.
    pub fn tokens_at(&self, now_ms: i64) -> f64 {
        match &self.limit.rule {
            FlowRule::Rate {
                limit,
                period,
                burst,
            } => {
                let elapsed = now_ms.saturating_sub(self.refilled_ms).max(0) as f64;
                let per_ms = f64::from(*limit) / (period.as_millis().max(1) as f64);
                (self.tokens + elapsed * per_ms).min(f64::from(*burst))
            }
            FlowRule::Concurrency { .. } => 0.0,
        }
    }

    /// The whole tokens of [`tokens_at`](Self::tokens_at): how many attempts a rate limit lets
    /// start at `now_ms`.
    pub fn whole_tokens_at(&self, now_ms: i64) -> u64 {
        whole(self.tokens_at(now_ms))
    }

    /// When a rate limit that has `tokens` at `now_ms` has its next whole token (`None` for a
    /// concurrency limit, or a rate of 0).
    pub fn next_token_ms(&self, tokens: f64, now_ms: i64) -> Option<i64> {
        match &self.limit.rule {
            FlowRule::Rate { limit, period, .. } if *limit > 0 => {
                let per_ms = f64::from(*limit) / (period.as_millis().max(1) as f64);
                let missing = (1.0 - tokens.fract()).max(0.0);
                Some(now_ms.saturating_add((missing / per_ms).ceil().max(1.0) as i64))
            }
            _ => None,
        }
    }
}

/// A [`FlowRow`] as the SQL stores keep it: scope kind, scope name, rule kind, the rule's
/// number (`max` or `limit`), a rate's period in ms and burst, the bucket's tokens and refill
/// time.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowColumns {
    /// [`FlowScope::kind`].
    pub scope_kind: String,
    /// [`FlowScope::name`].
    pub scope_name: String,
    /// [`FlowRule::kind`].
    pub kind: String,
    /// A concurrency limit's `max`, a rate limit's `limit`.
    pub number: i64,
    /// A rate limit's period, in ms.
    pub period_ms: Option<i64>,
    /// A rate limit's burst.
    pub burst: Option<i64>,
    /// [`FlowRow::tokens`].
    pub tokens: f64,
    /// [`FlowRow::refilled_ms`].
    pub refilled_ms: i64,
}

impl FlowColumns {
    /// The columns of `row`.
    pub fn of(row: &FlowRow) -> Self {
        let (number, period_ms, burst) = match &row.limit.rule {
            FlowRule::Concurrency { max } => (i64::from(*max), None, None),
            FlowRule::Rate {
                limit,
                period,
                burst,
            } => (
                i64::from(*limit),
                Some(i64::try_from(period.as_millis()).unwrap_or(i64::MAX)),
                Some(i64::from(*burst)),
            ),
        };
        FlowColumns {
            scope_kind: row.limit.scope.kind().to_string(),
            scope_name: row.limit.scope.name().to_string(),
            kind: row.limit.rule.kind().as_str().to_string(),
            number,
            period_ms,
            burst,
            tokens: row.tokens,
            refilled_ms: row.refilled_ms,
        }
    }

    /// The row these columns hold, or why they hold none (a kind this version does not know,
    /// a number out of range).
    pub fn into_row(self) -> Result<FlowRow, String> {
        let bad = |what: &str| {
            format!(
                "the flow limit of {} {:?} ({}) has {what}",
                self.scope_kind, self.scope_name, self.kind
            )
        };
        let number = u32::try_from(self.number).map_err(|_| bad("a limit out of range"))?;
        let rule = match self.kind.as_str() {
            "concurrency" => FlowRule::Concurrency { max: number },
            "rate" => FlowRule::Rate {
                limit: number,
                period: Duration::from_millis(
                    self.period_ms
                        .and_then(|p| u64::try_from(p).ok())
                        .ok_or_else(|| bad("no period"))?,
                ),
                burst: self
                    .burst
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| bad("no burst"))?,
            },
            _ => return Err(bad("a rule kind this wf does not know")),
        };
        let scope = FlowScope::from_parts(&self.scope_kind, self.scope_name.clone())
            .ok_or_else(|| bad("a scope kind this wf does not know"))?;
        Ok(FlowRow {
            limit: FlowLimit { scope, rule },
            tokens: self.tokens,
            refilled_ms: self.refilled_ms,
        })
    }
}

/// A [`Duration`] as whole milliseconds, for JSON.
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// A SQL store's statement for `scope`'s kind among three: `$head`, the column that kind counts
/// attempts by (`name`, `task_queue` or `flow_key`), then `$tail`; each a `&'static str`.
#[doc(hidden)]
#[macro_export]
macro_rules! flow_scope_sql {
    ($scope:expr, $head:literal, $tail:literal) => {
        match $scope {
            $crate::FlowScope::Activity(_) => concat!($head, "name", $tail),
            $crate::FlowScope::TaskQueue(_) => concat!($head, "task_queue", $tail),
            $crate::FlowScope::Key(_) => concat!($head, "flow_key", $tail),
        }
    };
}

/// The whole tokens of a bucket holding `tokens` (none below zero).
pub fn whole(tokens: f64) -> u64 {
    tokens.max(0.0).floor() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refills_at_its_rate_up_to_its_burst() {
        let limit = FlowLimit::rate(FlowScope::key("k"), 20, Duration::from_secs(1)).burst(5);
        let mut row = FlowRow::new(limit, 1_000);
        assert_eq!(row.tokens_at(1_000), 5.0);
        row.tokens = 0.0;
        assert!((row.tokens_at(1_100) - 2.0).abs() < 1e-9);
        assert_eq!(row.tokens_at(10_000), 5.0);
        assert_eq!(row.next_token_ms(0.0, 1_000), Some(1_050));
    }

    #[test]
    fn scopes_cover_their_attempts() {
        assert!(FlowScope::activity("a").covers("a", "q", None));
        assert!(FlowScope::task_queue("q").covers("a", "q", None));
        assert!(FlowScope::key("k").covers("a", "q", Some("k")));
        assert!(!FlowScope::key("k").covers("a", "q", None));
        let back = FlowScope::from_parts("task_queue", "q".into());
        assert_eq!(back, Some(FlowScope::task_queue("q")));
    }

    #[test]
    fn a_rate_without_a_period_is_refused() {
        let bad = FlowLimit::rate(FlowScope::key("k"), 1, Duration::ZERO);
        assert!(bad.check().is_err());
        assert!(FlowLimit::concurrency(FlowScope::key("k"), 4)
            .check()
            .is_ok());
    }
}

/// What one poll, or one commit's leases at once, did under one flow limit (what the store
/// answers beside the attempts it leased, and what the engine's `wf_flow_started_total` and
/// `wf_flow_throttled_total` count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowCount {
    /// The limit's scope.
    pub scope: FlowScope,
    /// The limit's kind.
    pub kind: FlowKind,
    /// Attempts leased under it.
    pub started: u64,
    /// Due attempts it covers that the poll or commit found and left unleased because this
    /// limit had no room (its slots taken, or its bucket out of tokens).
    pub throttled: u64,
}
