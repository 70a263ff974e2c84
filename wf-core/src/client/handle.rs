//! [`WorkflowHandle`]: a typed handle on a workflow id. Its handler methods come from the
//! `#[workflow]` macro's `<Workflow>Client` extension trait, built on the hidden call
//! constructors at the end of this file.

use super::calls::{QueryCall, SignalCall, UpdateCall, UpdateHandle};
use super::stream::StreamReader;
use super::transport::Started;
use super::types::{Description, StartOptions, UpdateStage};
use super::Client;
use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::payload::{Payload, PayloadError};
use crate::data::run::IdConflictPolicy;
use crate::data::stream::StreamList;
use crate::error::WfError;
use crate::workflow::{Role, WorkflowDefinition};
use serde::de::DeserializeOwned;
use std::marker::PhantomData;

/// A typed handle on a workflow id. Handler methods come from the `#[workflow]` macro's
/// `<Workflow>Client` extension trait (`h.pause().await?`).
pub struct WorkflowHandle<W> {
    client: Client,
    workflow_id: String,
    started: Option<Started>,
    _w: PhantomData<fn() -> W>,
}

impl<W> Clone for WorkflowHandle<W> {
    fn clone(&self) -> Self {
        WorkflowHandle {
            client: self.client.clone(),
            workflow_id: self.workflow_id.clone(),
            started: self.started.clone(),
            _w: PhantomData,
        }
    }
}

impl<W> std::fmt::Debug for WorkflowHandle<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowHandle")
            .field("workflow_id", &self.workflow_id)
            .finish_non_exhaustive()
    }
}

impl<W> WorkflowHandle<W> {
    pub(super) fn new(client: Client, workflow_id: String) -> Self {
        WorkflowHandle {
            client,
            workflow_id,
            started: None,
            _w: PhantomData,
        }
    }

    /// The handle a start returns, with what the start did.
    pub(super) fn started(client: Client, workflow_id: String, started: Started) -> Self {
        WorkflowHandle {
            started: Some(started),
            ..WorkflowHandle::new(client, workflow_id)
        }
    }
}

impl<W: WorkflowDefinition> WorkflowHandle<W> {
    /// The workflow id.
    pub fn workflow_id(&self) -> &str {
        &self.workflow_id
    }

    /// The client this handle uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A handle on an update sent earlier with the id `update_id` (by this client or another,
    /// before a restart too): [`UpdateHandle::result`] waits for its outcome, as the caller
    /// that sent it would (`R` is the handler's value type). An id no update of this
    /// workflow has fails there with `NotFound`.
    ///
    /// ```ignore
    /// h.change_goal(g).update_id("cmd-9f1e").start().await?;      // elsewhere, earlier
    /// let goal: String = h.update_handle("cmd-9f1e").result().await?;
    /// ```
    pub fn update_handle<R: DeserializeOwned>(
        &self,
        update_id: impl Into<String>,
    ) -> UpdateHandle<R> {
        UpdateHandle::new(
            self.client.clone(),
            self.workflow_id.clone(),
            update_id.into(),
        )
    }

    /// For a handle returned by a start ([`Client::start`], [`Client::start_with`]): the run
    /// the start addressed and whether this call started it (`started == false` when an
    /// existing run was kept, or when a start with the same
    /// [`request_id`](super::StartOptions::request_id) started it before). `None` for a
    /// handle from [`Client::handle`].
    ///
    /// ```ignore
    /// let options = StartOptions::new().request_id("req-1");
    /// let first = client.start_with::<Order>("order-7", input.clone(), options.clone()).await?;
    /// let retry = client.start_with::<Order>("order-7", input, options).await?; // lost reply
    /// assert_eq!(retry.start_outcome().unwrap().run_id, first.start_outcome().unwrap().run_id);
    /// assert!(!retry.start_outcome().unwrap().started);
    /// ```
    pub fn start_outcome(&self) -> Option<&Started> {
        self.started.as_ref()
    }

    /// Waits for the run's result (following continue-as-new).
    pub async fn result(&self) -> Result<W::Output, WfError> {
        Ok(self.client.result_raw(&self.workflow_id).await?.decode()?)
    }

    /// Reads the run's stream `name` as values of `T`: an async `Stream` of
    /// `(offset, value)` from offset 0 (or [`from`](StreamReader::from)), that follows new
    /// entries live and ends when the stream is closed or the run closes. It needs no worker
    /// for the type: the entries are in the store.
    ///
    /// ```ignore
    /// let mut tokens = h.stream::<String>("tokens").from(0);
    /// while let Some(entry) = tokens.next().await {
    ///     let (offset, token) = entry?;
    ///     print!("{token}");
    /// }
    /// ```
    pub fn stream<T: DeserializeOwned>(&self, name: impl Into<String>) -> StreamReader<T> {
        StreamReader::new(self.client.clone(), self.workflow_id.clone(), name.into())
    }

    /// The latest run's streams that hold an entry, in name order, each with its entry count
    /// and whether it is closed (the workflow's and its activities' alike). Needs no worker:
    /// it reads the store. `NotFound` for an unknown workflow id.
    pub async fn streams(&self) -> Result<StreamList, WfError> {
        self.client
            .transport()
            .list_streams(&self.workflow_id, None)
            .await
    }

    /// The latest run's history.
    pub async fn history(&self) -> Result<Vec<HistoryEvent>, WfError> {
        self.client.history(&self.workflow_id).await
    }

    /// The latest run's history as a versioned JSON-able document (see
    /// [`History`](crate::data::export::History)): `h.export().await?.to_json()?` is what
    /// `wf export` writes and what the `Replayer` reads.
    pub async fn export(&self) -> Result<crate::data::export::History, WfError> {
        self.client.export(&self.workflow_id).await
    }

    /// Status, pending work and the last task failure.
    pub async fn describe(&self) -> Result<Description, WfError> {
        self.client.describe(&self.workflow_id).await
    }

    /// Requests cancellation (see [`Client::cancel`]); `result()` then returns
    /// `WfError::Cancelled` once the run's cleanup finished.
    pub async fn cancel(&self) -> Result<(), WfError> {
        self.client
            .cancel(&self.workflow_id, "cancelled by a client")
            .await
    }

    /// Ends the run at once.
    pub async fn terminate(&self, reason: &str) -> Result<(), WfError> {
        self.client.terminate(&self.workflow_id, reason).await
    }

    /// Signal-with-start: starts the run if the workflow id is not running and delivers the
    /// signal, in one store transaction. With `IdConflictPolicy::UseExisting` (the usual
    /// choice) a running run just gets the signal; `Fail` refuses; `TerminateExisting`
    /// replaces it.
    ///
    /// ```ignore
    /// h.signal_with_start(input, h.pause().signal_id("cmd-1"), IdConflictPolicy::UseExisting).await?;
    /// ```
    pub async fn signal_with_start(
        &self,
        input: W::Input,
        signal: SignalCall<'_>,
        policy: IdConflictPolicy,
    ) -> Result<(), WfError> {
        let input = Payload::encode(&input)?;
        let message = Message::signal(signal.name, signal.args?, signal.signal_id);
        let options = StartOptions {
            id_conflict: policy,
            ..Default::default()
        };
        self.client
            .start_with_messages(&self.workflow_id, W::NAME, input, options, vec![message])
            .await?;
        Ok(())
    }

    /// Update-with-start: starts the run if needed and delivers the update atomically, then
    /// waits for the update's outcome (policies as in
    /// [`signal_with_start`](Self::signal_with_start)), at most the update call's
    /// [`timeout`](UpdateCall::timeout) (default: the transport's): then it fails with
    /// [`WfError::Timeout`] and the update stays queued, as for any update.
    pub async fn update_with_start<R: DeserializeOwned>(
        &self,
        input: W::Input,
        update: UpdateCall<'_, R>,
        policy: IdConflictPolicy,
    ) -> Result<R, WfError> {
        let input = Payload::encode(&input)?;
        let update_id = update.update_id.unwrap_or_else(crate::data::ids::new_id);
        let timeout = update
            .timeout
            .unwrap_or_else(|| self.client.transport().update_timeout());
        let message = Message::update(update_id.clone(), update.name, update.args?);
        let options = StartOptions {
            id_conflict: policy,
            ..Default::default()
        };
        self.client
            .start_with_messages(&self.workflow_id, W::NAME, input, options, vec![message])
            .await?;
        let wait = self
            .client
            .wait_update(&self.workflow_id, &update_id, UpdateStage::Completed);
        match tokio::time::timeout(timeout, wait).await {
            Ok(value) => Ok(value?.decode()?),
            Err(_) => Err(update_timed_out(
                &self.workflow_id,
                update.name,
                &update_id,
                UpdateStage::Completed,
                timeout,
            )),
        }
    }

    /// A signal by name with one argument, for signals the workflow takes with
    /// `ctx.wait_for_signal::<A>(name)` rather than a handler method (it answers
    /// [`SignalStatus::Buffered`](crate::client::SignalStatus), or `Delivered` if a `#[signal]`
    /// method has that name after all, or the type has a `#[signal(dynamic)]` handler).
    pub fn signal<A: serde::Serialize>(&self, name: &'static str, arg: &A) -> SignalCall<'_> {
        let handled = W::handlers()
            .iter()
            .any(|h| h.name == name && h.kind.role() == Role::Signal)
            || W::dynamic_handlers().signal.is_some();
        SignalCall {
            handled: Some(handled),
            ..signal_call(self, name, Payload::encode(&(arg,)))
        }
    }
}

/// The signal call a generated client method (of a `#[signal]` handler) returns (not a
/// public API).
#[doc(hidden)]
pub fn signal_call<'h, W>(
    handle: &'h WorkflowHandle<W>,
    name: &'static str,
    args: Result<Payload, PayloadError>,
) -> SignalCall<'h> {
    SignalCall {
        client: &handle.client,
        workflow_id: &handle.workflow_id,
        name,
        args,
        signal_id: None,
        // Generated methods exist for `#[signal]` handlers only.
        handled: Some(true),
    }
}

/// The query call a generated client method returns (not a public API).
#[doc(hidden)]
pub fn query_call<'h, W, R: DeserializeOwned>(
    handle: &'h WorkflowHandle<W>,
    name: &'static str,
    args: Result<Payload, PayloadError>,
) -> QueryCall<'h, R> {
    QueryCall {
        client: &handle.client,
        workflow_id: &handle.workflow_id,
        name,
        args,
        at_event: None,
        _r: PhantomData,
    }
}

/// The update call a generated client method returns (not a public API).
#[doc(hidden)]
pub fn update_call<'h, W, R: DeserializeOwned>(
    handle: &'h WorkflowHandle<W>,
    name: &'static str,
    args: Result<Payload, PayloadError>,
) -> UpdateCall<'h, R> {
    UpdateCall {
        client: &handle.client,
        workflow_id: &handle.workflow_id,
        name,
        args,
        update_id: None,
        timeout: None,
        _r: PhantomData,
    }
}

/// The error of an update whose wait for `stage` ran out after `waited`: it names the update id
/// a retry must carry, and says the update stays queued.
pub(crate) fn update_timed_out(
    workflow_id: &str,
    name: &str,
    update_id: &str,
    stage: UpdateStage,
    waited: std::time::Duration,
) -> WfError {
    let stage = stage.as_str();
    WfError::Timeout(format!(
        "update {name:?} (update id {update_id:?}) of workflow {workflow_id:?} was not {stage} \
         within {waited:?}: it stays queued and is applied when a worker takes the run; send it \
         again with update id {update_id:?} to get its outcome"
    ))
}
