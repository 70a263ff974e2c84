//! What a workflow asks of an activity (its timeouts and retry policy), how an activity ends,
//! and the lease arithmetic every store applies to an attempt.

use super::payload::Payload;
use serde::{Deserialize, Serialize};

/// Why an activity attempt failed, as recorded in history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityFailure {
    /// The error kind (`"retryable"` for plain retryable errors, or the user's kind).
    pub kind: String,
    /// The error message.
    pub message: String,
    /// Whether the error was non-retryable (by the activity's choice or by the retry policy).
    pub non_retryable: bool,
}

/// Which activity timeout expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimeoutKind {
    /// One attempt ran longer than its start-to-close timeout.
    StartToClose,
    /// The activity, all attempts included, ran past its schedule-to-close timeout.
    ScheduleToClose,
    /// The attempt stopped heartbeating for longer than its heartbeat timeout.
    Heartbeat,
}

/// Retry policy of an activity, with Temporal's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Delay before the first retry (default 1 s).
    pub initial_interval: std::time::Duration,
    /// Factor applied to the delay after each retry (default 2.0).
    pub backoff_coefficient: f64,
    /// Upper bound of the delay (default 100 × `initial_interval`).
    pub maximum_interval: Option<std::time::Duration>,
    /// Attempts in all, the first included; 0 means unlimited (the default).
    pub maximum_attempts: u32,
    /// Error kinds (from `ActivityError::non_retryable(kind, ..)` or set here) never retried.
    pub non_retryable_error_types: Vec<String>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_interval: std::time::Duration::from_secs(1),
            backoff_coefficient: 2.0,
            maximum_interval: None,
            maximum_attempts: 0,
            non_retryable_error_types: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// The delay before attempt `next_attempt` (2 for the first retry).
    pub fn delay_before(&self, next_attempt: u32) -> std::time::Duration {
        let retries = i32::try_from(next_attempt.saturating_sub(2)).unwrap_or(i32::MAX);
        let base =
            self.initial_interval.as_secs_f64() * self.backoff_coefficient.max(1.0).powi(retries);
        let max = self
            .maximum_interval
            .unwrap_or(self.initial_interval.saturating_mul(100))
            .as_secs_f64();
        // Saturates instead of panicking on an absurd policy (an interval of centuries).
        std::time::Duration::try_from_secs_f64(base.min(max).max(0.0))
            .unwrap_or(std::time::Duration::MAX)
    }

    /// Whether an attempt that just failed with `failure` may be followed by `next_attempt`.
    pub fn allows_retry(&self, next_attempt: u32, failure: &ActivityFailure) -> bool {
        !failure.non_retryable
            && !self.non_retryable_error_types.contains(&failure.kind)
            && (self.maximum_attempts == 0 || next_attempt <= self.maximum_attempts)
    }
}

/// Timeouts and retries of one scheduled activity.
///
/// History encodes it by position (a MessagePack array): the optional fields at its end are
/// left out from the last one set on (see its `Serialize`), so that options without them
/// encode as before and decode as `None`, and a field set after unset ones keeps its place.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ActivityOptions {
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Longest time one attempt may run.
    pub start_to_close: Option<std::time::Duration>,
    /// Longest time from scheduling to the final result, all attempts included.
    pub schedule_to_close: Option<std::time::Duration>,
    /// Longest time between two heartbeats of a running attempt.
    pub heartbeat_timeout: Option<std::time::Duration>,
    /// The flow key its attempts count under (see [`FlowScope::Key`](super::flow::FlowScope::Key)):
    /// the store's flow limits of that key bind them. Left out of the encoding when unset, so
    /// options without one encode as before.
    #[serde(default)]
    pub flow_key: Option<String>,
    /// The task queue its attempts are sent to (`ctx.activity(..).task_queue(q)`): only engines
    /// that serve that queue lease them (see
    /// [`EngineBuilder::activity_task_queue`](crate::EngineBuilder::activity_task_queue)).
    /// `None`: its run's task queue, and any engine that registers the activity may run it.
    /// Left out of the encoding when unset, so options without one encode as before.
    #[serde(default)]
    pub task_queue: Option<String>,
    /// Its priority level, 1 (first) to 5 (last); `None` is 3. A poll leases
    /// the visible attempts of a lower level before any of a higher one. Left out of the
    /// encoding when unset.
    #[serde(default)]
    pub priority: Option<u8>,
    /// The fairness key its attempts share the slots under (a tenant, a user): keys waiting
    /// at once take turns by weight, whatever their backlogs. `None` is the key `""`. Left out
    /// of the encoding when unset.
    #[serde(default)]
    pub fairness_key: Option<String>,
    /// The weight of its fairness key's turns (> 0; `None` is 1.0): a key of weight 2 starts
    /// two attempts for one of a key of weight 1 while both wait. Left out of the encoding
    /// when unset.
    #[serde(default)]
    pub fairness_weight: Option<f64>,
}

impl Serialize for ActivityOptions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let tail = [
            self.flow_key.is_some(),
            self.task_queue.is_some(),
            self.priority.is_some(),
            self.fairness_key.is_some(),
            self.fairness_weight.is_some(),
        ];
        // The optional fields up to the last one set; those after it are left out.
        let kept = tail.iter().rposition(|set| *set).map_or(0, |i| i + 1);
        let mut s = serializer.serialize_struct("ActivityOptions", 4 + kept)?;
        s.serialize_field("retry", &self.retry)?;
        s.serialize_field("start_to_close", &self.start_to_close)?;
        s.serialize_field("schedule_to_close", &self.schedule_to_close)?;
        s.serialize_field("heartbeat_timeout", &self.heartbeat_timeout)?;
        macro_rules! optional {
            ($($i:literal $name:ident),*) => {$(
                if $i < kept {
                    s.serialize_field(stringify!($name), &self.$name)?;
                } else {
                    s.skip_field(stringify!($name))?;
                }
            )*};
        }
        optional!(0 flow_key, 1 task_queue, 2 priority, 3 fairness_key, 4 fairness_weight);
        s.end()
    }
}

/// The priority level of an activity called without [`ActivityOptions::priority`].
pub const DEFAULT_PRIORITY: u8 = 3;

/// The priority levels an activity may have, lowest (first) to highest.
pub const PRIORITY_LEVELS: std::ops::RangeInclusive<u8> = 1..=5;

impl ActivityOptions {
    /// The task queue the attempts count under: the one set with
    /// [`task_queue`](Self::task_queue), else `run_queue` (its run's).
    pub fn queue_or<'a>(&'a self, run_queue: &'a str) -> &'a str {
        self.task_queue.as_deref().unwrap_or(run_queue)
    }

    /// Its priority level (3 when unset).
    pub fn priority_level(&self) -> u8 {
        self.priority.unwrap_or(DEFAULT_PRIORITY)
    }

    /// Its fairness key (`""` when unset).
    pub fn fairness_key(&self) -> &str {
        self.fairness_key.as_deref().unwrap_or("")
    }

    /// What one of its attempts costs its fairness key in virtual time: 1 / its weight.
    pub fn fairness_cost(&self) -> f64 {
        1.0 / self.fairness_weight.unwrap_or(1.0)
    }

    /// Why the options cannot be scheduled: a priority outside 1 to 5 or a
    /// fairness weight that is not a finite number above 0.
    pub fn check(&self) -> Result<(), String> {
        if let Some(p) = self.priority.filter(|p| !PRIORITY_LEVELS.contains(p)) {
            let (lo, hi) = (PRIORITY_LEVELS.start(), PRIORITY_LEVELS.end());
            return Err(format!(
                "priority {p} is not a level: use {lo} (first) to {hi} (last), {DEFAULT_PRIORITY} by default"
            ));
        }
        if let Some(w) = self
            .fairness_weight
            .filter(|w| !(w.is_finite() && *w > 0.0))
        {
            return Err(format!(
                "fairness weight {w} is not a finite number above 0 (1.0 by default)"
            ));
        }
        Ok(())
    }
}

/// How an activity ended for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ActivityResolution {
    /// It returned a value.
    Completed {
        /// Encoded result.
        result: Payload,
        /// Attempts made.
        attempts: u32,
    },
    /// It failed and will not be retried.
    Failed {
        /// The last failure.
        failure: ActivityFailure,
        /// Attempts made.
        attempts: u32,
        /// The details of the last heartbeat of any attempt.
        #[serde(default)]
        last_heartbeat: Option<Payload>,
    },
    /// It timed out and will not be retried.
    TimedOut {
        /// Which timeout.
        timeout: TimeoutKind,
        /// Attempts made.
        attempts: u32,
        /// The details of the last heartbeat of any attempt.
        #[serde(default)]
        last_heartbeat: Option<Payload>,
    },
}

/// How one run of a local activity ended, as its `LocalActivityCompleted` event records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LocalOutcome {
    /// It returned a value.
    Completed(Payload),
    /// It failed for good (non-retryable, or its retry policy is exhausted).
    Failed(ActivityFailure),
    /// Its last attempt timed out (start-to-close) and it will not be retried.
    TimedOut(TimeoutKind),
    /// It failed and may be retried, but the wait before the next attempt is longer than a
    /// workflow task may hold the run: the workflow waits on a durable timer of `delay_ms`,
    /// then runs it again from the next attempt.
    Backoff {
        /// The failure of the last attempt.
        failure: ActivityFailure,
        /// The wait before the next attempt, in milliseconds.
        delay_ms: u64,
    },
}

/// Start-to-close used when an activity sets neither start-to-close nor schedule-to-close.
pub const DEFAULT_START_TO_CLOSE_MS: i64 = 5 * 60 * 1000;

/// Milliseconds of a duration, saturating at `i64::MAX` (a duration of centuries is "never").
pub fn duration_ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Lease deadlines for an attempt starting at `now_ms` of an activity scheduled at
/// `scheduled_ms`: (attempt deadline, lease expiry). Shared by every store so they agree on
/// timeouts.
pub fn activity_lease(options: &ActivityOptions, scheduled_ms: i64, now_ms: i64) -> (i64, i64) {
    let stc = options
        .start_to_close
        .map(duration_ms)
        .or_else(|| {
            options.schedule_to_close.map(|d| {
                scheduled_ms
                    .saturating_add(duration_ms(d))
                    .saturating_sub(now_ms)
            })
        })
        .unwrap_or(DEFAULT_START_TO_CLOSE_MS);
    let mut attempt_deadline = now_ms.saturating_add(stc.max(0));
    if let Some(s2c) = options.schedule_to_close {
        attempt_deadline = attempt_deadline.min(scheduled_ms.saturating_add(duration_ms(s2c)));
    }
    (
        attempt_deadline,
        heartbeat_lease(options, attempt_deadline, now_ms),
    )
}

/// Lease expiry of an attempt with deadline `attempt_deadline_ms` after a heartbeat (or its
/// start) at `now_ms`.
pub fn heartbeat_lease(options: &ActivityOptions, attempt_deadline_ms: i64, now_ms: i64) -> i64 {
    match options.heartbeat_timeout {
        Some(hb) => attempt_deadline_ms.min(now_ms.saturating_add(duration_ms(hb))),
        None => attempt_deadline_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options as they were encoded before the optional fields: the first four only.
    #[derive(Serialize)]
    struct Before {
        retry: RetryPolicy,
        start_to_close: Option<std::time::Duration>,
        schedule_to_close: Option<std::time::Duration>,
        heartbeat_timeout: Option<std::time::Duration>,
    }

    #[test]
    fn options_round_trip_by_position_and_by_name_and_old_ones_decode() {
        let cases = [
            ActivityOptions::default(),
            ActivityOptions {
                flow_key: Some("k".into()),
                ..Default::default()
            },
            ActivityOptions {
                priority: Some(1),
                ..Default::default()
            },
            ActivityOptions {
                task_queue: Some("gpu".into()),
                ..Default::default()
            },
            ActivityOptions {
                fairness_key: Some("tenant".into()),
                fairness_weight: Some(2.5),
                start_to_close: Some(std::time::Duration::from_secs(3)),
                ..Default::default()
            },
        ];
        for options in cases {
            let compact = rmp_serde::to_vec(&options).unwrap();
            let back: ActivityOptions = rmp_serde::from_slice(&compact).unwrap();
            assert_eq!(back, options, "by position");
            let named = rmp_serde::to_vec_named(&options).unwrap();
            let back: ActivityOptions = rmp_serde::from_slice(&named).unwrap();
            assert_eq!(back, options, "by name");
        }
        let plain = ActivityOptions::default();
        let before = Before {
            retry: plain.retry.clone(),
            start_to_close: None,
            schedule_to_close: None,
            heartbeat_timeout: None,
        };
        let old = rmp_serde::to_vec(&before).unwrap();
        assert_eq!(
            rmp_serde::to_vec(&plain).unwrap(),
            old,
            "unset, encoded as before"
        );
        let back: ActivityOptions = rmp_serde::from_slice(&old).unwrap();
        assert_eq!(back, plain);
    }

    #[test]
    fn priorities_outside_the_levels_and_weights_not_above_zero_are_refused() {
        let with = |priority, weight| ActivityOptions {
            priority,
            fairness_weight: weight,
            ..Default::default()
        };
        assert!(with(Some(1), Some(0.5)).check().is_ok());
        assert!(with(Some(5), None).check().is_ok());
        for bad in [with(Some(0), None), with(Some(6), None)] {
            assert!(bad.check().unwrap_err().contains("is not a level"));
        }
        for w in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(with(None, Some(w)).check().is_err(), "weight {w}");
        }
    }

    #[test]
    fn retry_delays_follow_backoff_and_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay_before(2).as_secs(), 1);
        assert_eq!(p.delay_before(3).as_secs(), 2);
        assert_eq!(p.delay_before(4).as_secs(), 4);
        assert_eq!(p.delay_before(30).as_secs(), 100);
    }

    #[test]
    fn absurd_retry_policies_saturate_instead_of_panicking() {
        let p = RetryPolicy {
            initial_interval: std::time::Duration::MAX,
            backoff_coefficient: f64::NAN,
            ..RetryPolicy::default()
        };
        assert_eq!(p.delay_before(u32::MAX), std::time::Duration::MAX);
        let lease = activity_lease(
            &ActivityOptions {
                start_to_close: Some(std::time::Duration::MAX),
                heartbeat_timeout: Some(std::time::Duration::MAX),
                ..ActivityOptions::default()
            },
            i64::MAX - 5,
            i64::MAX - 5,
        );
        assert_eq!(lease, (i64::MAX, i64::MAX));
    }
}
