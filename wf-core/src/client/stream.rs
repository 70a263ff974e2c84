//! Reading a run's durable streams: `handle.stream::<T>("tokens").from(0)` is an async
//! [`Stream`](futures_core::Stream) of `(offset, value)` that yields the stored entries, then
//! follows new ones as they commit, and ends when the stream is closed or its run closes.
//!
//! Reading needs only the store: no worker has to serve the workflow type. The reader pages
//! through the transport ([`Transport::read_stream`](super::Transport::read_stream)), which
//! waits for a change when a page comes back empty (in process: the engine's wake-ups; from
//! other processes: their pokes or PostgreSQL's `NOTIFY`; a poll otherwise).

use super::transport::{poll_call, CallFuture};
use super::Client;
use crate::data::payload::Payload;
use crate::data::stream::StreamPage;
use crate::error::WfError;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Entries a reader asks the store for at once.
pub const STREAM_PAGE: usize = 256;

/// A read of one stream (see [`Transport::read_stream`](super::Transport::read_stream)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRead {
    /// The workflow id.
    pub workflow_id: String,
    /// The run; `None` for the latest run of the workflow id.
    pub run_id: Option<String>,
    /// The stream's name.
    pub stream: String,
    /// The first offset wanted.
    pub from: u64,
    /// Most entries wanted.
    pub max: usize,
    /// Whether to wait (a while) for an entry or the run's close when none is there yet,
    /// rather than answer an empty page at once.
    pub wait: bool,
}

/// The entries of one stream of a run, read as `T`: an async
/// [`Stream`](futures_core::Stream) of `Result<(offset, T), WfError>`, from
/// [`WorkflowHandle::stream`](super::WorkflowHandle::stream).
///
/// It yields every entry from [`from`](Self::from) (0 by default) once, in offset order,
/// waits for the next ones while the stream is open and its run running, and ends after the
/// close or once the run has closed and every entry was read. The run read is the workflow
/// id's latest when the reader first reads; it stays that run (after a continue-as-new, read
/// the new run with a new reader). An error (an unknown workflow id, a value that does not
/// decode as `T`, a store failure) is yielded once and ends the stream; resume with a new
/// reader from the offset after the last entry seen.
pub struct StreamReader<T> {
    client: Client,
    workflow_id: String,
    run_id: Option<String>,
    stream: String,
    from: u64,
    buffered: VecDeque<(u64, Payload)>,
    pending: Option<CallFuture<'static, StreamPage>>,
    done: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for StreamReader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamReader")
            .field("workflow_id", &self.workflow_id)
            .field("run_id", &self.run_id)
            .field("stream", &self.stream)
            .field("from", &self.from)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned> StreamReader<T> {
    pub(super) fn new(client: Client, workflow_id: String, stream: String) -> Self {
        StreamReader {
            client,
            workflow_id,
            run_id: None,
            stream,
            from: 0,
            buffered: VecDeque::new(),
            pending: None,
            done: false,
            _t: PhantomData,
        }
    }

    /// Starts at entry `offset` (entries before it are skipped): a reader that saw entries
    /// up to `n` resumes with `.from(n + 1)`.
    pub fn from(mut self, offset: u64) -> Self {
        self.from = offset;
        self
    }

    /// Reads run `run_id` of the workflow id rather than its latest run.
    pub fn run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// The next entry, or `None` once the stream ended (the inherent twin of
    /// `StreamExt::next`).
    pub async fn next(&mut self) -> Option<Result<(u64, T), WfError>> {
        std::future::poll_fn(|cx| self.poll_entry(cx)).await
    }

    /// Every entry left, until the stream ends (or an error, which is returned).
    pub async fn collect(mut self) -> Result<Vec<(u64, T)>, WfError> {
        let mut out = Vec::new();
        while let Some(entry) = self.next().await {
            out.push(entry?);
        }
        Ok(out)
    }

    fn request(&self) -> CallFuture<'static, StreamPage> {
        let transport = self.client.transport.clone();
        let read = StreamRead {
            workflow_id: self.workflow_id.clone(),
            run_id: self.run_id.clone(),
            stream: self.stream.clone(),
            from: self.from,
            max: STREAM_PAGE,
            wait: true,
        };
        Box::pin(async move { transport.read_stream(read).await })
    }

    fn take_page(&mut self, page: StreamPage) {
        let ended = page.ended(STREAM_PAGE);
        self.run_id = Some(page.run_id);
        for entry in page.entries {
            // Entries come in offset order from `from`; one out of it is not news.
            if entry.offset < self.from {
                continue;
            }
            self.from = entry.offset + 1;
            match entry.value {
                Some(value) => self.buffered.push_back((entry.offset, value)),
                None => break,
            }
        }
        self.done = ended;
    }

    fn poll_entry(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<(u64, T), WfError>>> {
        loop {
            if let Some((offset, value)) = self.buffered.pop_front() {
                return Poll::Ready(Some(match value.decode::<T>() {
                    Ok(v) => Ok((offset, v)),
                    Err(e) => {
                        self.done = true;
                        self.buffered.clear();
                        Err(e.into())
                    }
                }));
            }
            if self.done {
                return Poll::Ready(None);
            }
            let request = self.pending.is_none().then(|| self.request());
            let answer = poll_call(
                &mut self.pending,
                || request.expect("no call in flight"),
                cx,
            );
            match std::task::ready!(answer) {
                Ok(page) => self.take_page(page),
                Err(e) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

impl<T: DeserializeOwned> futures_core::Stream for StreamReader<T> {
    type Item = Result<(u64, T), WfError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_entry(cx)
    }
}
