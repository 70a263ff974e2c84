//! The bodies of `/_workflow_queues`: one queue's settings, the same shape in and out.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use wf_core::{QueueUsage, WorkflowQueue};

/// A queue of workflow starts' settings on the wire:
/// `{"name": "emails", "concurrency": 2, "rate": {"limit": 100, "period_ms": 60000}}`, either
/// limit left out for none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowQueueBody {
    /// The queue's name.
    pub name: String,
    /// At most this many of its runs at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// At most `limit` admissions per `period_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<QueueRateBody>,
}

/// A queue's rate on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueRateBody {
    /// Admissions per period.
    pub limit: u32,
    /// The period in milliseconds.
    pub period_ms: u64,
}

/// What a `POST /_workflow_queues` body looks like, for a refusal's message.
pub const WORKFLOW_QUEUE_FORMS: &str = "{\"name\": \"emails\", \"concurrency\": 2, \
     \"rate\": {\"limit\": 100, \"period_ms\": 60000}} (concurrency and rate optional)";

impl WorkflowQueueBody {
    /// The body of `queue`.
    pub fn of(queue: &WorkflowQueue) -> Self {
        WorkflowQueueBody {
            name: queue.name.clone(),
            concurrency: queue.concurrency,
            rate: queue.rate.map(|(limit, period)| QueueRateBody {
                limit,
                period_ms: crate::wire::millis(period),
            }),
        }
    }

    /// The settings this body gives.
    pub fn to_queue(&self) -> WorkflowQueue {
        WorkflowQueue {
            name: self.name.clone(),
            concurrency: self.concurrency,
            rate: self
                .rate
                .map(|r| (r.limit, Duration::from_millis(r.period_ms))),
        }
    }
}

/// Each item of `GET /_workflow_queues/usage`: a queue's settings body with `configured`
/// (whether the store holds settings for it), its runs `waiting` (held) and `running`
/// (admitted, not closed), and its rate's whole `tokens` (left out without a rate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueUsageBody {
    /// The queue's name.
    pub name: String,
    /// At most this many of its runs at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// At most `limit` admissions per `period_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<QueueRateBody>,
    /// Whether the store holds settings for it.
    pub configured: bool,
    /// Its runs held, waiting for room.
    pub waiting: u64,
    /// Its admitted runs still running.
    pub running: u64,
    /// Its rate's whole tokens now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl QueueUsageBody {
    /// The body of `usage`.
    pub fn of(usage: &QueueUsage) -> Self {
        let WorkflowQueueBody {
            name,
            concurrency,
            rate,
        } = WorkflowQueueBody::of(&usage.queue);
        QueueUsageBody {
            name,
            concurrency,
            rate,
            configured: usage.configured,
            waiting: usage.waiting,
            running: usage.running,
            tokens: usage.tokens,
        }
    }

    /// The usage this body gives.
    pub fn to_usage(&self) -> QueueUsage {
        let queue = WorkflowQueueBody {
            name: self.name.clone(),
            concurrency: self.concurrency,
            rate: self.rate,
        }
        .to_queue();
        QueueUsage {
            queue,
            configured: self.configured,
            waiting: self.waiting,
            running: self.running,
            tokens: self.tokens,
        }
    }
}

/// `DELETE /_workflow_queues/{name}` -> whether the queue had settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueRemovedBody {
    /// Whether it had settings.
    pub removed: bool,
}
