//! The primitives of durable streams (see [`Tx`](super::tx::Tx)): the `stream_entries`
//! table, one row per entry keyed by (run id, stream, offset), whose value is absent for the
//! close, and an optional entry id that makes an activity's retried write land once; and the
//! `workflow_events` table, the latest value of each published key of a workflow id.

use crate::data::payload::Payload;
use crate::data::stream::StreamEntry;
use crate::error::StoreError;
use std::future::Future;

/// The `stream_entries` table.
pub trait StreamTable {
    /// The last entry of stream `stream` of run `run_id`: its offset and whether it is the
    /// close (`None` for a stream with no entry).
    fn stream_tail(
        &mut self,
        run_id: &str,
        stream: &str,
    ) -> impl Future<Output = Result<Option<(u64, bool)>, StoreError>> + Send;

    /// Inserts an entry (`value` `None`: the close) at `offset`, which must be free.
    fn insert_stream_entry(
        &mut self,
        run_id: &str,
        stream: &str,
        offset: u64,
        value: Option<&Payload>,
        entry_id: Option<&str>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The offset of the entry written with `entry_id` to the stream, if there is one.
    fn stream_entry_by_id(
        &mut self,
        run_id: &str,
        stream: &str,
        entry_id: &str,
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;

    /// At most `max` entries of the stream from offset `from`, in offset order.
    fn stream_entries(
        &mut self,
        run_id: &str,
        stream: &str,
        from: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<StreamEntry>, StoreError>> + Send;

    /// Every stream of run `run_id` with an entry, in name order: its name, last offset and
    /// whether that last entry is the close.
    fn run_streams(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<Vec<(String, u64, bool)>, StoreError>> + Send;

    /// Sets the value of event `key` of `workflow_id`, published by run `run_id`, replacing
    /// the one before.
    fn put_event_value(
        &mut self,
        workflow_id: &str,
        key: &str,
        run_id: &str,
        value: &Payload,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The value of event `key` of `workflow_id`, if one was set.
    fn event_value(
        &mut self,
        workflow_id: &str,
        key: &str,
    ) -> impl Future<Output = Result<Option<Payload>, StoreError>> + Send;

    /// Deletes every stream entry of these runs, and the events they published.
    fn delete_runs_streams(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
