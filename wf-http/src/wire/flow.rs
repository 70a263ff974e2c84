//! The bodies of `/_flow_limits`: one flow limit, the same shape in and out.
//!
//! ```json
//! {"scope": {"key": "openai"}, "concurrency": 4}
//! {"scope": {"activity": "call_model"}, "rate": {"limit": 60, "period_ms": 60000, "burst": 10}}
//! ```

use serde::{Deserialize, Serialize};
use std::time::Duration;
use wf_core::{FlowKind, FlowLimit, FlowRule, FlowScope, FlowUsage};

/// The forms a flow limit body takes, for error messages.
pub const FLOW_LIMIT_FORMS: &str = "a flow limit is {\"scope\": {\"activity\"|\"task_queue\"|\"key\": NAME}, \
     \"concurrency\": N} or {\"scope\": {...}, \"rate\": {\"limit\": M, \"period_ms\": P, \"burst\": B}} \
     (burst optional, M by default)";

/// `POST /_flow_limits` and each item of `GET /_flow_limits`: a scope, and one of
/// `concurrency` and `rate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowLimitBody {
    /// What the limit counts: exactly one of its fields.
    pub scope: FlowScopeBody,
    /// At most this many attempts at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// At most this many attempts started per period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<FlowRateBody>,
}

/// A flow limit's scope: exactly one of an activity name, a task queue and a flow key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowScopeBody {
    /// The attempts of the activity with this wire name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<String>,
    /// The attempts of activities scheduled by runs on this task queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_queue: Option<String>,
    /// The attempts of activities called with this flow key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A rate limit: `limit` attempts per `period_ms`, with up to `burst` at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRateBody {
    /// Attempts per period.
    pub limit: u32,
    /// The period in milliseconds.
    pub period_ms: u64,
    /// The most attempts started at once after a quiet spell; `limit` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// Each item of `GET /_flow_limits/usage`: a limit's body with the attempts it covers running
/// and waiting, and a rate limit's whole tokens (left out for a concurrency limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowUsageBody {
    /// The limit's scope, as in [`FlowLimitBody`].
    pub scope: FlowScopeBody,
    /// A concurrency limit's most attempts at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// A rate limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<FlowRateBody>,
    /// The attempts it covers that hold a live lease, over every engine.
    pub running: u64,
    /// The attempts it covers that are due and wait for a lease.
    pub waiting: u64,
    /// A rate limit's whole tokens now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl FlowUsageBody {
    /// The body of `usage`.
    pub fn of(usage: &FlowUsage) -> Self {
        let FlowLimitBody {
            scope,
            concurrency,
            rate,
        } = FlowLimitBody::of(&usage.limit);
        FlowUsageBody {
            scope,
            concurrency,
            rate,
            running: usage.running,
            waiting: usage.waiting,
            tokens: usage.tokens,
        }
    }

    /// The usage, if its limit's part is a limit's body ([`FlowLimitBody::to_limit`]).
    pub fn to_usage(&self) -> Result<FlowUsage, String> {
        let limit = FlowLimitBody {
            scope: self.scope.clone(),
            concurrency: self.concurrency,
            rate: self.rate.clone(),
        }
        .to_limit()?;
        Ok(FlowUsage {
            limit,
            running: self.running,
            waiting: self.waiting,
            tokens: self.tokens,
        })
    }
}

/// `DELETE /_flow_limits/{scope_kind}/{name}/{limit_kind}` -> whether there was such a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowRemovedBody {
    /// Whether the limit existed.
    pub removed: bool,
}

impl FlowScopeBody {
    /// The body of `scope`.
    pub fn of(scope: &FlowScope) -> Self {
        let name = Some(scope.name().to_string());
        match scope {
            FlowScope::Activity(_) => FlowScopeBody {
                activity: name,
                ..Default::default()
            },
            FlowScope::TaskQueue(_) => FlowScopeBody {
                task_queue: name,
                ..Default::default()
            },
            FlowScope::Key(_) => FlowScopeBody {
                key: name,
                ..Default::default()
            },
        }
    }

    /// The scope, if exactly one field is given; otherwise a message naming the forms.
    pub fn to_scope(&self) -> Result<FlowScope, String> {
        match (&self.activity, &self.task_queue, &self.key) {
            (Some(n), None, None) => Ok(FlowScope::activity(n.clone())),
            (None, Some(n), None) => Ok(FlowScope::task_queue(n.clone())),
            (None, None, Some(n)) => Ok(FlowScope::key(n.clone())),
            (None, None, None) => Err(format!(
                "the scope names nothing: give one of activity, task_queue, key; {FLOW_LIMIT_FORMS}"
            )),
            _ => Err(format!(
                "the scope gives more than one of activity, task_queue, key; {FLOW_LIMIT_FORMS}"
            )),
        }
    }
}

impl FlowLimitBody {
    /// The body of `limit`.
    pub fn of(limit: &FlowLimit) -> Self {
        let (concurrency, rate) = match &limit.rule {
            FlowRule::Concurrency { max } => (Some(*max), None),
            FlowRule::Rate {
                limit,
                period,
                burst,
            } => (
                None,
                Some(FlowRateBody {
                    limit: *limit,
                    period_ms: super::millis(*period),
                    burst: Some(*burst),
                }),
            ),
        };
        FlowLimitBody {
            scope: FlowScopeBody::of(&limit.scope),
            concurrency,
            rate,
        }
    }

    /// The limit, if the body gives one scope and exactly one of `concurrency` and `rate`;
    /// otherwise a message naming the forms. (Values [`FlowLimit::check`] refuses are its to
    /// refuse.)
    pub fn to_limit(&self) -> Result<FlowLimit, String> {
        let scope = self.scope.to_scope()?;
        match (&self.concurrency, &self.rate) {
            (Some(max), None) => Ok(FlowLimit::concurrency(scope, *max)),
            (None, Some(r)) => {
                let limit = FlowLimit::rate(scope, r.limit, Duration::from_millis(r.period_ms));
                Ok(match r.burst {
                    Some(b) => limit.burst(b),
                    None => limit,
                })
            }
            (None, None) => Err(format!(
                "the body gives neither concurrency nor rate; {FLOW_LIMIT_FORMS}"
            )),
            (Some(_), Some(_)) => Err(format!(
                "the body gives both concurrency and rate: set them one at a time; {FLOW_LIMIT_FORMS}"
            )),
        }
    }
}

/// A scope kind and limit kind as path segments spell them: `activity`, `task_queue`, `key`;
/// `concurrency`, `rate`.
pub fn flow_kind(s: &str) -> Option<FlowKind> {
    match s {
        "concurrency" => Some(FlowKind::Concurrency),
        "rate" => Some(FlowKind::Rate),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_round_trip_through_their_bodies() {
        let limits = [
            FlowLimit::concurrency(FlowScope::key("openai"), 4),
            FlowLimit::rate(FlowScope::activity("a"), 60, Duration::from_secs(60)).burst(5),
            FlowLimit::concurrency(FlowScope::task_queue("gpu"), 0),
        ];
        for limit in limits {
            let body = FlowLimitBody::of(&limit);
            let json = serde_json::to_string(&body).expect("encodes");
            let back: FlowLimitBody = serde_json::from_str(&json).expect("decodes");
            assert_eq!(back.to_limit(), Ok(limit));
        }
    }

    #[test]
    fn a_rate_without_burst_bursts_its_limit() {
        let body: FlowLimitBody = serde_json::from_str(
            r#"{"scope": {"key": "k"}, "rate": {"limit": 7, "period_ms": 1000}}"#,
        )
        .expect("decodes");
        assert_eq!(
            body.to_limit(),
            Ok(FlowLimit::rate(
                FlowScope::key("k"),
                7,
                Duration::from_secs(1)
            ))
        );
    }

    #[test]
    fn bodies_that_say_too_little_or_too_much_name_the_forms() {
        for json in [
            r#"{"scope": {}, "concurrency": 1}"#,
            r#"{"scope": {"key": "a", "activity": "b"}, "concurrency": 1}"#,
            r#"{"scope": {"key": "a"}}"#,
            r#"{"scope": {"key": "a"}, "concurrency": 1, "rate": {"limit": 1, "period_ms": 1}}"#,
        ] {
            let body: FlowLimitBody = serde_json::from_str(json).expect("decodes");
            let e = body.to_limit().expect_err(json);
            assert!(e.contains("\"concurrency\": N"), "{e}");
        }
        assert_eq!(flow_kind("rate"), Some(FlowKind::Rate));
        assert_eq!(flow_kind("burst"), None);
    }
}
