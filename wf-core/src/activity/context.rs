//! What a running activity attempt receives: its identity, heartbeats, and the details the
//! previous attempt last reported.

use super::registry::BoxFuture;
use crate::data::payload::Payload;
use crate::error::ActivityError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;

/// Facts about the running attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityInfo {
    /// The scheduling run's workflow id.
    pub workflow_id: String,
    /// The scheduling run.
    pub run_id: String,
    /// The scheduling command's sequence number in that run.
    pub seq: u32,
    /// Activity wire name.
    pub name: String,
    /// Attempt number, from 1.
    pub attempt: u32,
}

/// Reports heartbeats for one attempt (implemented by the engine over its store).
pub(crate) trait HeartbeatSink: Send + Sync {
    fn heartbeat(&self, info: &ActivityInfo, details: Payload) -> BoxFuture<bool>;
}

/// What an activity receives: its identity, heartbeats, and the details the previous attempt
/// last reported.
#[derive(Clone)]
pub struct ActivityContext {
    info: ActivityInfo,
    last_heartbeat: Option<Payload>,
    sink: Option<Arc<dyn HeartbeatSink>>,
}

impl std::fmt::Debug for ActivityContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivityContext")
            .field("info", &self.info)
            .finish()
    }
}

impl ActivityContext {
    pub(crate) fn new(
        info: ActivityInfo,
        last_heartbeat: Option<Payload>,
        sink: Arc<dyn HeartbeatSink>,
    ) -> Self {
        ActivityContext {
            info,
            last_heartbeat,
            sink: Some(sink),
        }
    }

    /// A context for calling an activity method directly in a unit test (heartbeats go
    /// nowhere).
    pub fn for_test(info: ActivityInfo) -> Self {
        ActivityContext {
            info,
            last_heartbeat: None,
            sink: None,
        }
    }

    /// Facts about this attempt.
    pub fn info(&self) -> &ActivityInfo {
        &self.info
    }

    /// The attempt number, from 1.
    pub fn attempt(&self) -> u32 {
        self.info.attempt
    }

    /// A key that is the same for every attempt of this activity and unique across runs: use it
    /// as the idempotency key of external calls.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.info.run_id, self.info.seq)
    }

    /// Records progress durably and extends the heartbeat timeout. The next attempt (after a
    /// crash or timeout) reads it with [`last_heartbeat`](Self::last_heartbeat). Returns an
    /// error when this attempt is no longer current (it timed out or the run closed): stop.
    pub async fn heartbeat<T: Serialize>(&self, details: &T) -> Result<(), ActivityError> {
        let payload = Payload::encode(details)?;
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        if sink.heartbeat(&self.info, payload).await {
            Ok(())
        } else {
            Err(ActivityError::non_retryable(
                "attempt_superseded",
                format!(
                    "attempt {} of activity {} is no longer current",
                    self.info.attempt, self.info.name
                ),
            ))
        }
    }

    /// The details of the last heartbeat of a previous attempt (or of this one).
    pub fn last_heartbeat<T: DeserializeOwned>(&self) -> Option<T> {
        self.last_heartbeat.as_ref().and_then(|p| p.decode().ok())
    }
}
