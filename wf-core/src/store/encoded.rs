//! The one place payload codecs are applied: [`EncodedStore`] wraps any [`Store`] and encodes
//! every user payload of what goes in (starts, messages, commits, heartbeats, schedules) and
//! decodes every one of what comes out (runs, histories, inboxes, activity tasks, updates,
//! memos), at the one seam every store call passes ([`Store::execute`]). Everything above it
//! (workers, queries, describe, the client, the HTTP service, exports) sees clear payloads;
//! everything below it (the stores' tables, events and files) holds only encoded ones. An
//! engine without a codec has no wrapper at all.
//!
//! Which fields are user payloads is written once per type by [`HasPayloads`]: the data types'
//! impls are in `data::payload_codec`, the operations' and outcomes' in `store::operation`, the
//! store records' here.

use super::operation::{Operation, Outcome};
use super::records::{
    ActivityTask, DeliverOutcome, NewActivityTask, NewRun, PendingMessages, RunClose, RunRecord,
    RunSearch, RunStart, ScheduleRow, StartOutcome, TaskCommit, WorkflowTask,
};
use super::{Store, StoreFuture};
use crate::data::payload::{Payload, PayloadError};
use crate::data::payload_codec::{HasPayloads, PayloadCodecs};
use crate::error::{BackendErrorKind, StoreError};
use std::sync::Arc;

/// A store whose user payloads are encoded at rest by a chain of payload codecs.
pub struct EncodedStore {
    inner: Arc<dyn Store>,
    codecs: PayloadCodecs,
}

impl EncodedStore {
    /// Wraps `inner`: payloads written through this store are encoded by `codecs`, payloads
    /// read are decoded (clear ones, written before the codecs were installed, read as they
    /// are).
    pub fn new(inner: Arc<dyn Store>, codecs: PayloadCodecs) -> Self {
        EncodedStore { inner, codecs }
    }
}

/// A codec failure as a store error: which call, which codec, what to do.
fn codec_error(doing: &str, what: &str, e: PayloadError) -> StoreError {
    StoreError::backend(BackendErrorKind::Codec, format!("{doing} {what}: {e}"))
}

impl Store for EncodedStore {
    fn execute(&self, mut op: Operation) -> StoreFuture<'_, Outcome> {
        let what = op.subject();
        if let Err(e) = self.codecs.encode_all(&mut op) {
            let e = codec_error("writing", &what, e);
            return Box::pin(async move { Err(e) });
        }
        let answered = self.inner.execute(op);
        Box::pin(async move {
            let mut outcome = answered.await?;
            self.codecs
                .decode_all(&mut outcome)
                .map_err(|e| codec_error("reading", &what, e))?;
            Ok(outcome)
        })
    }

    fn wrapped(&self) -> Option<&dyn Store> {
        Some(&*self.inner)
    }
}

/// The visitor's signature, for the impls below.
type Visit<'a> = &'a mut dyn FnMut(&mut Payload) -> Result<(), PayloadError>;

impl HasPayloads for RunRecord {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // `summary` is the engine's bookkeeping, read by the store: it stays clear.
        self.result.for_each_payload(f)
    }
}

impl HasPayloads for NewRun {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        f(&mut self.input)?;
        self.memo.for_each_payload(f)
    }
}

impl HasPayloads for RunStart {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.run.for_each_payload(f)?;
        self.messages.for_each_payload(f)
    }
}

impl HasPayloads for StartOutcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.messages.for_each_payload(f)
    }
}

impl HasPayloads for DeliverOutcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            DeliverOutcome::DuplicateUpdate(record) => record.for_each_payload(f),
            DeliverOutcome::Enqueued { .. } | DeliverOutcome::DuplicateSignal { .. } => Ok(()),
        }
    }
}

impl HasPayloads for NewActivityTask {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        f(&mut self.input)
    }
}

impl HasPayloads for RunClose {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            RunClose::Completed(result) => f(result),
            RunClose::ContinuedAsNew(run) => run.for_each_payload(f),
            RunClose::Failed(_) | RunClose::Cancelled(_) => Ok(()),
        }
    }
}

impl HasPayloads for TaskCommit {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // Exhaustive on purpose: a new field must say whether it carries user payloads.
        let TaskCommit {
            run_id: _,
            worker_id: _,
            without_lease: _,
            expected_next_event_id: _,
            events,
            consumed_through: _,
            new_activities,
            lease_activities_to: _,
            lease_admitted: _,
            cancel_activities: _,
            resolve_activities: _,
            new_timers: _,
            cancel_timers: _,
            updates,
            close,
            start_children,
            deliver,
            terminate: _,
            notify,
            summary: _,
            sync: _,
            now_ms: _,
            failure_type: _,
            build: _,
            assumed,
            signal_waiting: _,
        } = self;
        if let Some(assumed) = assumed {
            assumed.for_each_payload(f)?;
        }
        events
            .iter_mut()
            .try_for_each(|e| e.kind.for_each_payload(f))?;
        new_activities.for_each_payload(f)?;
        updates
            .iter_mut()
            .try_for_each(|u| u.state.for_each_payload(f))?;
        close.for_each_payload(f)?;
        start_children
            .iter_mut()
            .try_for_each(|c| c.run.for_each_payload(f))?;
        deliver
            .iter_mut()
            .try_for_each(|d| d.message.for_each_payload(f))?;
        notify
            .iter_mut()
            .try_for_each(|n| n.message.for_each_payload(f))
    }
}

impl HasPayloads for ActivityTask {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        f(&mut self.input)?;
        self.heartbeat.for_each_payload(f)
    }
}

impl HasPayloads for WorkflowTask {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.run.for_each_payload(f)?;
        self.messages.for_each_payload(f)
    }
}

impl HasPayloads for PendingMessages {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.inbox.for_each_payload(f)?;
        self.history.for_each_payload(f)
    }
}

impl HasPayloads for RunSearch {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // Search attributes stay clear: the store filters on them.
        self.memo.for_each_payload(f)
    }
}

impl HasPayloads for ScheduleRow {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // The whole schedule state: it holds the input of the workflows it starts.
        f(&mut self.data)
    }
}
