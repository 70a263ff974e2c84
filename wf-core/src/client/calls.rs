//! The calls a handle makes, as values: `.await` sends them, builder methods set their
//! options first (`h.pause().signal_id("cmd-1").await`, `h.change_goal(g).update_id("u").await`).

use super::transport::CallFuture;
use super::types::UpdateStage;
use super::Client;
use crate::data::payload::{Payload, PayloadError};
use crate::error::WfError;
use serde::de::DeserializeOwned;
use std::future::IntoFuture;
use std::marker::PhantomData;

/// A pending signal: `.await` sends it; [`signal_id`](Self::signal_id) makes retries apply once.
#[must_use = "a signal is sent only when awaited"]
pub struct SignalCall<'a> {
    pub(super) client: &'a Client,
    pub(super) workflow_id: &'a str,
    pub(super) name: &'static str,
    pub(super) args: Result<Payload, PayloadError>,
    pub(super) signal_id: Option<String>,
}

impl SignalCall<'_> {
    /// A dedupe id: the signal applies once however often it is sent with this id.
    pub fn signal_id(mut self, id: impl Into<String>) -> Self {
        self.signal_id = Some(id.into());
        self
    }
}

impl<'a> IntoFuture for SignalCall<'a> {
    type Output = Result<(), WfError>;
    type IntoFuture = CallFuture<'a, ()>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.client
                .signal_raw(self.workflow_id, self.name, self.args?, self.signal_id)
                .await
        })
    }
}

/// A pending query: `.await` runs it.
#[must_use = "a query runs only when awaited"]
pub struct QueryCall<'a, R> {
    pub(super) client: &'a Client,
    pub(super) workflow_id: &'a str,
    pub(super) name: &'static str,
    pub(super) args: Result<Payload, PayloadError>,
    pub(super) _r: PhantomData<fn() -> R>,
}

impl<'a, R: DeserializeOwned + 'a> IntoFuture for QueryCall<'a, R> {
    type Output = Result<R, WfError>;
    type IntoFuture = CallFuture<'a, R>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            Ok(self
                .client
                .query_raw(self.workflow_id, self.name, self.args?)
                .await?
                .decode()?)
        })
    }
}

/// A pending update: `.await` sends it and waits for its result; [`update_id`](Self::update_id)
/// makes retries return the first outcome; [`start`](Self::start) returns once accepted.
#[must_use = "an update is sent only when awaited"]
pub struct UpdateCall<'a, R> {
    pub(super) client: &'a Client,
    pub(super) workflow_id: &'a str,
    pub(super) name: &'static str,
    pub(super) args: Result<Payload, PayloadError>,
    pub(super) update_id: Option<String>,
    pub(super) _r: PhantomData<fn() -> R>,
}

impl<'a, R: DeserializeOwned + 'a> UpdateCall<'a, R> {
    /// A dedupe id: a retry with this id returns the first call's outcome.
    pub fn update_id(mut self, id: impl Into<String>) -> Self {
        self.update_id = Some(id.into());
        self
    }

    /// Sends the update and returns once the validator accepted it (or with `Rejected`).
    pub async fn start(self) -> Result<UpdateHandle<R>, WfError> {
        let (update_id, _) = self
            .client
            .update_raw(
                self.workflow_id,
                self.name,
                self.args?,
                self.update_id,
                UpdateStage::Accepted,
            )
            .await?;
        Ok(UpdateHandle {
            client: self.client.clone(),
            workflow_id: self.workflow_id.to_string(),
            update_id,
            _r: PhantomData,
        })
    }
}

impl<'a, R: DeserializeOwned + 'a> IntoFuture for UpdateCall<'a, R> {
    type Output = Result<R, WfError>;
    type IntoFuture = CallFuture<'a, R>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (_, value) = self
                .client
                .update_raw(
                    self.workflow_id,
                    self.name,
                    self.args?,
                    self.update_id,
                    UpdateStage::Completed,
                )
                .await?;
            Ok(value.decode()?)
        })
    }
}

/// An accepted update; [`result`](Self::result) waits for its handler.
pub struct UpdateHandle<R> {
    client: Client,
    workflow_id: String,
    update_id: String,
    _r: PhantomData<fn() -> R>,
}

impl<R: DeserializeOwned> UpdateHandle<R> {
    /// The update's id.
    pub fn update_id(&self) -> &str {
        &self.update_id
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
