//! The calls a handle makes, as values: `.await` sends them, builder methods set their
//! options first (`h.pause().signal_id("cmd-1").await`, `h.change_goal(g).update_id("u").await`).

use super::transport::{CallFuture, SignalRequest, UpdateRequest};
use super::types::{SignalStatus, UpdateStage};
use super::Client;
use crate::data::payload::{Payload, PayloadError};
use crate::error::WfError;
use serde::de::DeserializeOwned;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A pending signal: `.await` sends it; [`signal_id`](Self::signal_id) makes retries apply
/// once; [`with_status`](Self::with_status) also answers whether a handler takes it.
#[must_use = "a signal is sent only when awaited"]
pub struct SignalCall<'a> {
    pub(super) client: &'a Client,
    pub(super) workflow_id: &'a str,
    pub(super) name: &'static str,
    pub(super) args: Result<Payload, PayloadError>,
    pub(super) signal_id: Option<String>,
    pub(super) handled: Option<bool>,
}

impl SignalCall<'_> {
    /// A dedupe id: the signal applies once however often it is sent with this id.
    pub fn signal_id(mut self, id: impl Into<String>) -> Self {
        self.signal_id = Some(id.into());
        self
    }
}

impl<'a> SignalCall<'a> {
    /// Sends the signal and answers whether a `#[signal]` handler takes it
    /// ([`SignalStatus::Delivered`]) or the run buffers it for `ctx.wait_for_signal`
    /// ([`SignalStatus::Buffered`]); a plain `.await` sends it the same way and answers `()`.
    ///
    /// ```ignore
    /// assert_eq!(h.pause().with_status().await?, SignalStatus::Delivered);
    /// ```
    pub fn with_status(self) -> CallOutcome<'a, SignalStatus, SignalStatus> {
        self.send(Ok)
    }

    fn send<R>(
        self,
        finish: fn(SignalStatus) -> Result<R, WfError>,
    ) -> CallOutcome<'a, SignalStatus, R> {
        let request = |args| SignalRequest {
            workflow_id: self.workflow_id,
            name: self.name,
            args,
            signal_id: self.signal_id,
            handled: self.handled,
        };
        match self.args {
            Ok(args) => CallOutcome::new(self.client.transport().signal(request(args)), finish),
            Err(e) => CallOutcome::failed(e.into()),
        }
    }
}

impl<'a> IntoFuture for SignalCall<'a> {
    type Output = Result<(), WfError>;
    type IntoFuture = CallOutcome<'a, SignalStatus, ()>;
    fn into_future(self) -> Self::IntoFuture {
        self.send(|_| Ok(()))
    }
}

/// A pending query: `.await` runs it.
#[must_use = "a query runs only when awaited"]
pub struct QueryCall<'a, R> {
    pub(super) client: &'a Client,
    pub(super) workflow_id: &'a str,
    pub(super) name: &'static str,
    pub(super) args: Result<Payload, PayloadError>,
    /// Set by [`at_event`](Self::at_event).
    pub(super) at_event: Option<u64>,
    pub(super) _r: PhantomData<fn() -> R>,
}

impl<R> QueryCall<'_, R> {
    /// Answers as of history event `at_event` of the latest run instead of its current state,
    /// by replay (see [`Client::query_at`](crate::Client::query_at)).
    ///
    /// ```ignore
    /// let then: u32 = handle.count().at_event(12).await?;
    /// ```
    pub fn at_event(mut self, at_event: u64) -> Self {
        self.at_event = Some(at_event);
        self
    }
}

impl<'a, R: DeserializeOwned + 'a> IntoFuture for QueryCall<'a, R> {
    type Output = Result<R, WfError>;
    type IntoFuture = CallOutcome<'a, Payload, R>;
    fn into_future(self) -> Self::IntoFuture {
        match self.args {
            Ok(args) => {
                let transport = self.client.transport();
                let call = match self.at_event {
                    Some(n) => transport.query_at(self.workflow_id, self.name, args, n),
                    None => transport.query(self.workflow_id, self.name, args),
                };
                CallOutcome::new(call, |value| Ok(value.decode()?))
            }
            Err(e) => CallOutcome::failed(e.into()),
        }
    }
}

/// A pending update: `.await` sends it and waits for its result; [`update_id`](Self::update_id)
/// makes retries return the first outcome; [`timeout`](Self::timeout) bounds the wait;
/// [`start`](Self::start) returns once accepted.
#[must_use = "an update is sent only when awaited"]
pub struct UpdateCall<'a, R> {
    pub(super) client: &'a Client,
    pub(super) workflow_id: &'a str,
    pub(super) name: &'static str,
    pub(super) args: Result<Payload, PayloadError>,
    pub(super) update_id: Option<String>,
    pub(super) timeout: Option<Duration>,
    pub(super) _r: PhantomData<fn() -> R>,
}

impl<'a, R: DeserializeOwned + 'a> UpdateCall<'a, R> {
    /// A dedupe id: a retry with this id returns the first call's outcome.
    pub fn update_id(mut self, id: impl Into<String>) -> Self {
        self.update_id = Some(id.into());
        self
    }

    /// How long to wait for the outcome (or, with [`start`](Self::start), for the validator)
    /// before failing with [`WfError::Timeout`]; default 30 s, or the engine's
    /// `EngineBuilder::update_timeout`. The update is queued before the wait starts and stays
    /// queued when it runs out: a worker applies it when it takes the run, and a call with the
    /// same [`update_id`](Self::update_id) returns its outcome (the timeout's message names the
    /// id when none was set).
    ///
    /// ```ignore
    /// match h.change_goal(g).update_id("u-1").timeout(Duration::from_secs(2)).await {
    ///     Err(WfError::Timeout(_)) => { /* later: the same call with "u-1" returns the value */ }
    ///     other => { other?; }
    /// }
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends the update and returns once the validator accepted it (or with `Rejected`, or
    /// `Timeout` when no worker validated it within the call's timeout).
    pub async fn start(self) -> Result<UpdateHandle<R>, WfError> {
        self.send_until(UpdateStage::Accepted).await
    }

    /// Sends the update and returns as soon as it is durably admitted: recorded in the store,
    /// before any worker ran its validator (Temporal's `ADMITTED` stage). It is applied when a
    /// worker takes the run, even after this process or the worker crashed;
    /// [`UpdateHandle::accepted`] and [`UpdateHandle::result`] wait for its verdict and its
    /// outcome later (a validator's rejection arrives there as `Rejected`).
    ///
    /// ```ignore
    /// let u = h.change_goal(g).update_id("cmd-7").admit().await?;   // no worker needed yet
    /// u.accepted().await?;                                           // the validator's verdict
    /// let goal = u.result().await?;                                  // the handler's value
    /// ```
    pub async fn admit(self) -> Result<UpdateHandle<R>, WfError> {
        self.send_until(UpdateStage::Admitted).await
    }

    async fn send_until(self, stage: UpdateStage) -> Result<UpdateHandle<R>, WfError> {
        let (update_id, _) = self
            .client
            .send_update(UpdateRequest {
                workflow_id: self.workflow_id,
                name: self.name,
                args: self.args?,
                update_id: self.update_id,
                stage,
                timeout: self.timeout,
            })
            .await?;
        Ok(UpdateHandle::new(
            self.client.clone(),
            self.workflow_id.to_string(),
            update_id,
        ))
    }
}

impl<'a, R: DeserializeOwned + 'a> IntoFuture for UpdateCall<'a, R> {
    type Output = Result<R, WfError>;
    type IntoFuture = CallOutcome<'a, (String, Payload), R>;
    fn into_future(self) -> Self::IntoFuture {
        let request = |args| UpdateRequest {
            workflow_id: self.workflow_id,
            name: self.name,
            args,
            update_id: self.update_id,
            stage: UpdateStage::Completed,
            timeout: self.timeout,
        };
        match self.args {
            Ok(args) => {
                let call = self.client.transport().update(request(args));
                CallOutcome::new(call, |(_, value)| Ok(value.decode()?))
            }
            Err(e) => CallOutcome::failed(e.into()),
        }
    }
}

/// The future of an awaited call: the transport's own future, its answer decoded on the way
/// out (no allocation beyond the transport's), or the error found before sending.
#[must_use = "futures do nothing unless polled"]
pub struct CallOutcome<'a, T, R> {
    call: Result<CallFuture<'a, T>, Option<WfError>>,
    finish: fn(T) -> Result<R, WfError>,
}

impl<'a, T, R> CallOutcome<'a, T, R> {
    fn new(call: CallFuture<'a, T>, finish: fn(T) -> Result<R, WfError>) -> Self {
        CallOutcome {
            call: Ok(call),
            finish,
        }
    }

    fn failed(error: WfError) -> Self {
        CallOutcome {
            call: Err(Some(error)),
            finish: |_| unreachable!("a failed call has nothing to finish"),
        }
    }
}

impl<T, R> Future for CallOutcome<'_, T, R> {
    type Output = Result<R, WfError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let finish = self.finish;
        match &mut self.call {
            Ok(call) => call.as_mut().poll(cx).map(|r| r.and_then(finish)),
            Err(error) => Poll::Ready(Err(error
                .take()
                .expect("a call's future is not polled after it completed"))),
        }
    }
}

/// An accepted or admitted update (from [`UpdateCall::start`] or [`UpdateCall::admit`], or
/// attached to by id with
/// [`WorkflowHandle::update_handle`](super::WorkflowHandle::update_handle));
/// [`result`](Self::result) waits for its handler.
pub struct UpdateHandle<R> {
    client: Client,
    workflow_id: String,
    update_id: String,
    _r: PhantomData<fn() -> R>,
}

impl<R: DeserializeOwned> UpdateHandle<R> {
    pub(super) fn new(client: Client, workflow_id: String, update_id: String) -> Self {
        UpdateHandle {
            client,
            workflow_id,
            update_id,
            _r: PhantomData,
        }
    }

    /// The update's id.
    pub fn update_id(&self) -> &str {
        &self.update_id
    }

    /// Waits until a validator accepted the update (or `Rejected`, or `RunFinished` if the run
    /// closed before a worker took it); at once if it was. For an update sent with
    /// [`UpdateCall::admit`], which returned before any validator ran.
    pub async fn accepted(&self) -> Result<(), WfError> {
        self.client
            .wait_update(&self.workflow_id, &self.update_id, UpdateStage::Accepted)
            .await
            .map(|_| ())
    }

    /// Waits for the handler's value (or `UpdateFailed`, or `RunFinished` if the run closed
    /// first).
    pub async fn result(&self) -> Result<R, WfError> {
        Ok(self
            .client
            .wait_update(&self.workflow_id, &self.update_id, UpdateStage::Completed)
            .await?
            .decode()?)
    }
}
