//! Durable streams: a commit appends the entries its `StreamWritten` and `StreamClosed`
//! events record, each at its stream's next offset, in event order; readers page through a
//! stream of a run; an activity appends an entry of its own, once per entry id. A commit's
//! `EventSet` events set the workflow id's published values, which readers wait for.
//!
//! Offsets are the store's: the next offset is one past the stream's last row, read in the
//! transaction that inserts, so the workflow's writes and its activities' writes interleave
//! in one gap-free order. A replayed task writes nothing: only new events reach a commit.

use super::deliver::find_run;
use super::tx::Tx;
use crate::data::history::EventKind;
use crate::data::payload::Payload;
use crate::data::stream::{StreamError, StreamInfo, StreamList, StreamPage, MAX_STREAM_ENTRIES};
use crate::error::StoreError;
use std::collections::HashMap;

/// The next free offset of a stream and whether it is closed, read once per commit.
async fn tail<X: Tx>(tx: &mut X, run_id: &str, stream: &str) -> Result<(u64, bool), StoreError> {
    Ok(match tx.stream_tail(run_id, stream).await? {
        Some((last, closed)) => (last + 1, closed),
        None => (0, false),
    })
}

/// Appends the stream entries a commit's events record, and sets the events they publish.
pub(crate) async fn append_written<'a, X: Tx>(
    tx: &mut X,
    workflow_id: &str,
    run_id: &str,
    events: impl Iterator<Item = &'a EventKind>,
) -> Result<(), StoreError> {
    let mut tails: HashMap<&'a str, (u64, bool)> = HashMap::new();
    for kind in events {
        let (stream, value) = match kind {
            EventKind::StreamWritten { stream, value } => (stream.as_str(), Some(value)),
            EventKind::StreamClosed { stream } => (stream.as_str(), None),
            EventKind::EventSet { key, value } => {
                tx.put_event_value(workflow_id, key, run_id, value).await?;
                continue;
            }
            _ => continue,
        };
        let (next, closed) = match tails.get(stream) {
            Some(known) => *known,
            None => tail(tx, run_id, stream).await?,
        };
        // The workflow checked its own writes against the close; none can follow it here.
        if closed {
            continue;
        }
        tx.insert_stream_entry(run_id, stream, next, value, None)
            .await?;
        tails.insert(stream, (next + 1, value.is_none()));
    }
    Ok(())
}

/// [`Store::read_event`](crate::store::Store::read_event).
pub(crate) async fn read_event<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    key: String,
) -> Result<Option<Payload>, StoreError> {
    tx.event_value(&workflow_id, &key).await
}

/// [`Store::read_stream`](crate::store::Store::read_stream): at most `max` entries of stream
/// `stream` of the run (the latest of the workflow id without a run id) from offset `from`.
pub(crate) async fn read_stream<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    run_id: Option<String>,
    stream: String,
    from: u64,
    max: usize,
) -> Result<Option<StreamPage>, StoreError> {
    let Some(run) = find_run(tx, &workflow_id, run_id.as_deref()).await? else {
        return Ok(None);
    };
    let run = run.record;
    let entries = tx.stream_entries(&run.run_id, &stream, from, max).await?;
    Ok(Some(StreamPage {
        run_closed: run.status.is_closed(),
        run_id: run.run_id,
        entries,
    }))
}

/// [`Store::list_streams`](crate::store::Store::list_streams): the streams of the run (the
/// latest of the workflow id without a run id) that hold an entry, in name order.
pub(crate) async fn list_streams<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    run_id: Option<String>,
) -> Result<Option<StreamList>, StoreError> {
    let Some(run) = find_run(tx, &workflow_id, run_id.as_deref()).await? else {
        return Ok(None);
    };
    let run_id = run.record.run_id;
    let streams = tx
        .run_streams(&run_id)
        .await?
        .into_iter()
        .map(|(name, last, closed)| StreamInfo::from_tail(name, last, closed))
        .collect();
    Ok(Some(StreamList { run_id, streams }))
}

/// [`Store::append_stream`](crate::store::Store::append_stream): an activity's entry,
/// appended at the stream's next offset unless an entry of the same id is there already.
/// Returns its offset, or the refusal (a closed run or stream, a full stream).
pub(crate) async fn append_one<X: Tx>(
    tx: &mut X,
    run_id: String,
    stream: String,
    value: Payload,
    entry_id: Option<String>,
) -> Result<Result<u64, StreamError>, StoreError> {
    let Some(run) = tx.load_run(&run_id).await? else {
        return Ok(Err(StreamError::RunClosed { run_id }));
    };
    if let Some(id) = entry_id.as_deref() {
        if let Some(offset) = tx.stream_entry_by_id(&run_id, &stream, id).await? {
            return Ok(Ok(offset));
        }
    }
    if run.record.status.is_closed() {
        return Ok(Err(StreamError::RunClosed { run_id }));
    }
    let (next, closed) = tail(tx, &run_id, &stream).await?;
    if closed {
        return Ok(Err(StreamError::Closed { stream }));
    }
    if next >= MAX_STREAM_ENTRIES {
        return Ok(Err(StreamError::Full { stream }));
    }
    tx.insert_stream_entry(&run_id, &stream, next, Some(&value), entry_id.as_deref())
        .await?;
    Ok(Ok(next))
}
