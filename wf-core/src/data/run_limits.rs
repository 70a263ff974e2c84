//! The limits a start puts on a workflow's continue-as-new chain, as Temporal's
//! `WorkflowExecutionTimeout`, `WorkflowRunTimeout` and workflow `RetryPolicy`: recorded in each
//! run's `WorkflowStarted` event (so that every store and every engine reads the same ones), and
//! the arithmetic that decides when a run times out and whether a closed run is retried.

use super::activity::{duration_ms, RetryPolicy};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which limit a timed-out run hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunTimeout {
    /// The run timeout: one run of the chain ran for too long. Retried under the retry policy.
    Run,
    /// The execution timeout: the whole chain (continue-as-new and retries included) ran for
    /// too long. Never retried.
    Execution,
}

impl RunTimeout {
    /// `"run"` or `"execution"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunTimeout::Run => "run",
            RunTimeout::Execution => "execution",
        }
    }
}

/// The limits of one run, carried from run to run of a chain.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunLimits {
    /// The whole chain's execution timeout, if one was set.
    pub execution_timeout: Option<Duration>,
    /// When the execution timeout passes (ms since the epoch): the chain's first start plus the
    /// execution timeout.
    pub execution_deadline_ms: Option<i64>,
    /// The timeout of each run, if one was set.
    pub run_timeout: Option<Duration>,
    /// How a failed (or run-timed-out) run is retried, if at all.
    pub retry: Option<RetryPolicy>,
    /// This run's attempt under the retry policy, from 1 (a continue-as-new starts again at 1).
    pub attempt: u32,
}

/// What closing a run with a retry policy leads to: the next attempt and when it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct NextAttempt {
    /// The next run's limits (its attempt counted).
    pub limits: RunLimits,
    /// When its first workflow task becomes ready (ms since the epoch).
    pub ready_at_ms: i64,
}

impl RunLimits {
    /// The limits a start sets, for a run created at `now_ms` (`None` when it sets none).
    pub fn for_start(
        execution_timeout: Option<Duration>,
        run_timeout: Option<Duration>,
        retry: Option<RetryPolicy>,
        now_ms: i64,
    ) -> Option<RunLimits> {
        if execution_timeout.is_none() && run_timeout.is_none() && retry.is_none() {
            return None;
        }
        Some(RunLimits {
            execution_timeout,
            execution_deadline_ms: execution_timeout.map(|d| now_ms.saturating_add(duration_ms(d))),
            run_timeout,
            retry,
            attempt: 1,
        })
    }

    /// The attempt number (1 when no limits were set).
    pub fn attempt_of(limits: Option<&RunLimits>) -> u32 {
        limits.map_or(1, |l| l.attempt.max(1))
    }

    /// When a run of these limits created at `created_ms` times out, if it can: the earlier of
    /// the execution deadline and the end of its run timeout.
    pub fn deadline_ms(&self, created_ms: i64) -> Option<i64> {
        let run_end = self
            .run_timeout
            .map(|d| created_ms.saturating_add(duration_ms(d)));
        match (self.execution_deadline_ms, run_end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Which limit has passed at `now_ms` for a run created at `created_ms` (the execution
    /// timeout when both have).
    pub fn passed(&self, created_ms: i64, now_ms: i64) -> Option<RunTimeout> {
        if self.execution_deadline_ms.is_some_and(|d| d <= now_ms) {
            return Some(RunTimeout::Execution);
        }
        let run_end = self
            .run_timeout
            .map(|d| created_ms.saturating_add(duration_ms(d)));
        run_end.filter(|&e| e <= now_ms).map(|_| RunTimeout::Run)
    }

    /// The limits of the run a continue-as-new starts: the same timeouts and policy, the
    /// attempt counted afresh.
    pub fn continued(&self) -> RunLimits {
        RunLimits {
            attempt: 1,
            ..self.clone()
        }
    }

    /// The timeout as a user reads it: `"run timeout of 30s"`.
    pub fn describe(&self, which: RunTimeout) -> String {
        let d = match which {
            RunTimeout::Run => self.run_timeout,
            RunTimeout::Execution => self.execution_timeout,
        };
        match d {
            Some(d) => format!("{} timeout of {d:?}", which.as_str()),
            None => format!("{} timeout", which.as_str()),
        }
    }

    /// Whether a run that closed at `now_ms` with an error of type `error_type` (a
    /// `WorkflowError::code()` such as `"failed"`, or `"run_timeout"`) is retried, and
    /// when: the policy allows another attempt, the type is not among its non-retryable ones,
    /// and the next attempt would start before the execution deadline.
    pub fn next_attempt(&self, error_type: &str, now_ms: i64) -> Option<NextAttempt> {
        let policy = self.retry.as_ref()?;
        let next = self.attempt.max(1).saturating_add(1);
        if policy.maximum_attempts != 0 && next > policy.maximum_attempts {
            return None;
        }
        if policy
            .non_retryable_error_types
            .iter()
            .any(|t| t == error_type)
        {
            return None;
        }
        let ready_at_ms = now_ms.saturating_add(duration_ms(policy.delay_before(next)));
        if self.execution_deadline_ms.is_some_and(|d| ready_at_ms >= d) {
            return None;
        }
        Some(NextAttempt {
            limits: RunLimits {
                attempt: next,
                ..self.clone()
            },
            ready_at_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> RunLimits {
        RunLimits::for_start(
            Some(Duration::from_secs(100)),
            Some(Duration::from_secs(10)),
            Some(RetryPolicy {
                maximum_attempts: 3,
                non_retryable_error_types: vec!["payload".into()],
                ..RetryPolicy::default()
            }),
            1_000,
        )
        .expect("limits set")
    }

    #[test]
    fn the_earlier_limit_is_the_deadline_and_execution_wins_a_tie() {
        let l = limits();
        assert_eq!(l.deadline_ms(1_000), Some(11_000));
        assert_eq!(l.deadline_ms(95_000), Some(101_000));
        assert_eq!(l.passed(1_000, 10_999), None);
        assert_eq!(l.passed(1_000, 11_000), Some(RunTimeout::Run));
        assert_eq!(l.passed(95_000, 101_000), Some(RunTimeout::Execution));
    }

    #[test]
    fn retries_stop_at_the_maximum_the_type_or_the_execution_deadline() {
        let l = limits();
        let second = l.next_attempt("failed", 5_000).expect("attempt 2");
        assert_eq!(second.limits.attempt, 2);
        assert_eq!(second.ready_at_ms, 6_000);
        let third = second
            .limits
            .next_attempt("failed", 6_000)
            .expect("attempt 3");
        assert_eq!(third.ready_at_ms, 8_000);
        assert!(third.limits.next_attempt("failed", 8_000).is_none());
        assert!(l.next_attempt("payload", 5_000).is_none());
        assert!(l.next_attempt("failed", 100_000).is_none());
        assert_eq!(l.continued().attempt, 1);
    }
}
