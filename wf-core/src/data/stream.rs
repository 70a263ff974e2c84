//! Durable streams: the ordered entries a run publishes under a name (`ctx.stream("tokens")`,
//! an activity's `ctx.stream(..)`), their limits, and what a reader gets back from the store.
//!
//! An entry's offset is its place in its stream, from 0, given by the store when the write
//! commits; a close is recorded as the stream's last offset, with no value. Entries live in
//! the store beside the run (`stream_entries`) and go with it when it is purged.

use super::payload::Payload;

/// Largest encoded value of one stream entry, in bytes (256 KiB). A write of a bigger value
/// records nothing and fails with [`StreamError::TooLarge`]. Stream entries are recorded in
/// the run's history too, so large outputs belong in a blob store, named by the entry.
pub const MAX_STREAM_ENTRY_BYTES: usize = 256 * 1024;

/// Most entries one stream of a run takes (10,000), the close included. Each writer is held
/// to it: the workflow's own writes count against it, and an activity's write is refused once
/// the stream holds that many. A write past it records nothing and fails with
/// [`StreamError::Full`]; start a new stream (or continue as new) for more.
pub const MAX_STREAM_ENTRIES: u64 = 10_000;

/// A stream write that was refused; nothing was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamError {
    /// The stream name is empty, too long or holds a control character.
    BadName(String),
    /// The entry's encoded value is over [`MAX_STREAM_ENTRY_BYTES`].
    TooLarge {
        /// The stream.
        stream: String,
        /// The encoded size, in bytes.
        size: usize,
    },
    /// The stream holds [`MAX_STREAM_ENTRIES`] entries already.
    Full {
        /// The stream.
        stream: String,
    },
    /// The stream was closed: it takes no more entries.
    Closed {
        /// The stream.
        stream: String,
    },
    /// The value could not be encoded.
    Encode(String),
    /// The run the write was for is no longer running (an activity's write after its run
    /// closed).
    RunClosed {
        /// The run.
        run_id: String,
    },
    /// The store could not record the write (an activity's write); retrying may succeed.
    Store(String),
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::BadName(message) => write!(f, "bad stream name: {message}"),
            StreamError::TooLarge { stream, size } => write!(
                f,
                "stream {stream:?}: an entry of {size} bytes is over the limit of \
                 {MAX_STREAM_ENTRY_BYTES} bytes; store big values elsewhere and stream their names"
            ),
            StreamError::Full { stream } => write!(
                f,
                "stream {stream:?} holds {MAX_STREAM_ENTRIES} entries, its limit; write to a new stream"
            ),
            StreamError::Closed { stream } => {
                write!(f, "stream {stream:?} was closed: it takes no more entries")
            }
            StreamError::Encode(message) => write!(f, "stream entry: {message}"),
            StreamError::RunClosed { run_id } => {
                write!(f, "run {run_id} is closed: its streams take no more entries")
            }
            StreamError::Store(message) => write!(f, "recording a stream entry failed: {message}"),
        }
    }
}

impl std::error::Error for StreamError {}

/// Checks an encoded entry against [`MAX_STREAM_ENTRY_BYTES`].
pub fn check_entry(stream: &str, value: &Payload) -> Result<(), StreamError> {
    let size = value.as_bytes().len();
    if size > MAX_STREAM_ENTRY_BYTES {
        return Err(StreamError::TooLarge {
            stream: stream.to_string(),
            size,
        });
    }
    Ok(())
}

/// One stored entry of a stream: its offset and its value (`None` for the close).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEntry {
    /// Its place in the stream, from 0.
    pub offset: u64,
    /// The encoded value; `None` marks the close, the stream's last entry.
    pub value: Option<Payload>,
}

/// What a read of a stream found: the entries from the offset asked for, and whether more
/// can come.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamPage {
    /// The run read (the latest run of the workflow id when none was named).
    pub run_id: String,
    /// Entries in offset order, at most the number asked for (a close is the last one).
    pub entries: Vec<StreamEntry>,
    /// Whether the run is closed: no workflow or activity of it writes again, so once the
    /// entries are read the stream has ended.
    pub run_closed: bool,
}

/// One stream of a run, as [`StreamList`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The stream's name.
    pub name: String,
    /// The entries it holds, the close not counted: the next entry's offset.
    pub entries: u64,
    /// Whether it was closed.
    pub closed: bool,
}

/// The streams of one run, by name: each stream with at least one entry or its close.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamList {
    /// The run read (the latest run of the workflow id when none was named).
    pub run_id: String,
    /// Its streams, in name order.
    pub streams: Vec<StreamInfo>,
}

impl StreamInfo {
    /// A stream whose last offset is `last` (the close, if `closed`).
    pub(crate) fn from_tail(name: String, last: u64, closed: bool) -> StreamInfo {
        StreamInfo {
            name,
            entries: if closed { last } else { last + 1 },
            closed,
        }
    }
}

impl StreamPage {
    /// Whether no entry can follow those of this page: it holds the close, or the run is
    /// closed and the page holds every entry left.
    pub fn ended(&self, asked: usize) -> bool {
        self.entries.iter().any(|e| e.value.is_none())
            || (self.run_closed && self.entries.len() < asked)
    }
}
