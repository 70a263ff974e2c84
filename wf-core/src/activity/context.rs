//! What a running activity attempt receives: its identity, heartbeats, the details the
//! previous attempt last reported, and word of its cancellation.

use super::group::BoxFuture;
use crate::data::payload::Payload;
use crate::error::ActivityError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;
use tokio::sync::watch;

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

    /// Appends an entry to a stream of the attempt's run (see `stream.rs`).
    fn stream(
        &self,
        info: &ActivityInfo,
        stream: String,
        value: Payload,
        entry_id: String,
    ) -> BoxFuture<Result<u64, crate::data::stream::StreamError>>;
}

/// What an activity receives: its identity, heartbeats, and the details the previous attempt
/// last reported.
#[derive(Clone)]
pub struct ActivityContext {
    pub(super) info: ActivityInfo,
    last_heartbeat: Option<Payload>,
    pub(super) sink: Option<Arc<dyn HeartbeatSink>>,
    /// Writes made to each stream by this attempt, for their default entry ids.
    pub(super) stream_writes: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
    /// Turns true when the attempt is cancelled (`None`: a test context, never cancelled).
    cancelled: Option<watch::Receiver<bool>>,
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
        cancelled: watch::Receiver<bool>,
    ) -> Self {
        ActivityContext {
            info,
            last_heartbeat,
            sink: Some(sink),
            stream_writes: Default::default(),
            cancelled: Some(cancelled),
        }
    }

    /// A context for calling an activity method directly in a unit test (heartbeats go
    /// nowhere).
    pub fn for_test(info: ActivityInfo) -> Self {
        ActivityContext {
            info,
            last_heartbeat: None,
            sink: None,
            stream_writes: Default::default(),
            cancelled: None,
        }
    }

    /// The context of a local activity's attempt: heartbeats are accepted and go nowhere, and
    /// no cancellation is announced (an abandoned attempt is aborted).
    pub(crate) fn local(info: ActivityInfo) -> Self {
        ActivityContext {
            info,
            last_heartbeat: None,
            sink: None,
            stream_writes: Default::default(),
            cancelled: None,
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

    /// Resolves when this attempt is cancelled: the workflow cancelled the activity (its
    /// [`CancellationScope`](crate::CancellationScope), or the run's cancellation), or the run
    /// closed. It resolves promptly, whichever engine runs the attempt, without waiting for a
    /// heartbeat. The task is gone by then: whatever the attempt returns afterwards is
    /// dropped, so race it against the work and clean up.
    ///
    /// ```ignore
    /// tokio::select! {
    ///     r = long_job(&input) => r,
    ///     _ = ctx.cancelled() => Err(ActivityError::non_retryable("cancelled", "stopped early")),
    /// }
    /// ```
    ///
    /// In a [`for_test`](Self::for_test) context it never resolves.
    pub async fn cancelled(&self) {
        match &self.cancelled {
            Some(rx) => {
                let mut rx = rx.clone();
                // An error means the engine dropped the attempt: it is being aborted anyway.
                if rx.wait_for(|c| *c).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }

    /// Whether this attempt was cancelled (see [`cancelled`](Self::cancelled)).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.as_ref().is_some_and(|rx| *rx.borrow())
    }

    /// The details of the last heartbeat of a previous attempt (or of this one).
    pub fn last_heartbeat<T: DeserializeOwned>(&self) -> Option<T> {
        self.last_heartbeat.as_ref().and_then(|p| p.decode().ok())
    }
}
