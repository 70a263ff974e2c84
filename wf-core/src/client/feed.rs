//! Following the feed of what runs do: `client.events(filter).from(cursor)` is an async
//! [`Stream`](futures_core::Stream) of the lifecycle events of every run the filter takes
//! (started, waiting for a signal, an activity failed, paused, completed...), in commit order:
//! the stored ones after the cursor, then new ones as they commit.
//!
//! Reading needs only the store: no worker has to run. The reader pages through the
//! transport ([`Transport::read_feed`](super::Transport::read_feed)), which waits for a change
//! when nothing is new (in process: the engine's wake-ups; from other processes: their pokes
//! or PostgreSQL's `NOTIFY`; a poll otherwise).

use super::transport::{poll_call, CallFuture};
use super::Client;
use crate::data::feed::{FeedCursor, FeedEvent, FeedFilter, FeedPage, FeedRead};
use crate::error::WfError;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Events a feed reader asks the store for at once.
pub const FEED_PAGE: usize = 256;

impl Client {
    /// The feed of what runs do: the lifecycle events of the runs `filter` takes, from the
    /// start of what the store keeps ([`FeedCursor::start`]) unless
    /// [`from`](FeedReader::from) says otherwise, then live. Works with no worker, across
    /// processes on one store, and resumes from any event's [`cursor`](FeedEvent::cursor).
    ///
    /// ```no_run
    /// # async fn demo(client: wf_core::Client) -> Result<(), wf_core::WfError> {
    /// use wf_core::{FeedCursor, FeedFilter, FeedKind};
    /// let mut events = client
    ///     .events(FeedFilter::new().workflow_type("order").kind(FeedKind::SignalWaiting))
    ///     .from(FeedCursor::start());
    /// while let Some(event) = events.next().await {
    ///     let event = event?;
    ///     println!("{} waits for {:?}", event.workflow_id, event.detail.signals);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn events(&self, filter: FeedFilter) -> FeedReader {
        FeedReader {
            client: self.clone(),
            filter,
            after: FeedCursor::start(),
            yielded: FeedCursor::start(),
            follow: true,
            held_back: false,
            buffered: VecDeque::new(),
            pending: None,
            done: false,
        }
    }
}

/// The feed of what runs do, as read from a client: an async
/// [`Stream`](futures_core::Stream) of `Result<FeedEvent, WfError>`, from
/// [`Client::events`].
///
/// It yields every event the filter takes once, in feed order (commit order: the events of
/// one run come in the order they happened), then waits for new ones; with
/// [`follow(false)`](Self::follow) it ends once it has caught up with every event committed
/// instead. An error (a store
/// failure, a transport that cannot read the feed) is yielded once and ends the stream;
/// resume with a new reader from [`cursor`](Self::cursor).
pub struct FeedReader {
    client: Client,
    filter: FeedFilter,
    /// The place after the last page read.
    after: FeedCursor,
    /// The place after the last event yielded (while events of the last page are buffered).
    yielded: FeedCursor,
    follow: bool,
    /// Whether the last page said that committed rows were held back.
    held_back: bool,
    buffered: VecDeque<FeedEvent>,
    pending: Option<CallFuture<'static, FeedPage>>,
    done: bool,
}

impl std::fmt::Debug for FeedReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedReader")
            .field("filter", &self.filter)
            .field("after", &self.after)
            .field("follow", &self.follow)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl FeedReader {
    /// Starts after `cursor`: an event's [`cursor`](FeedEvent::cursor) (the reader resumes
    /// with the event after it), [`FeedCursor::start`] (everything kept, the default), or
    /// [`FeedCursor::now`] (only events committed from the reader's first read on: its first
    /// `next()`, not this call).
    pub fn from(mut self, cursor: FeedCursor) -> Self {
        self.after = cursor;
        self.yielded = cursor;
        self
    }

    /// Whether to wait for new events once caught up (the default), or to end there.
    pub fn follow(mut self, follow: bool) -> Self {
        self.follow = follow;
        self
    }

    /// Where the reader stands: after the last event it yielded, or past events its filter
    /// skipped. A new reader `.from(reader.cursor())` goes on where this one is.
    pub fn cursor(&self) -> FeedCursor {
        if self.buffered.is_empty() {
            self.after
        } else {
            self.yielded
        }
    }

    /// The next event, or `None` once the reader ended (the inherent twin of
    /// `StreamExt::next`).
    pub async fn next(&mut self) -> Option<Result<FeedEvent, WfError>> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn request(&self) -> CallFuture<'static, FeedPage> {
        let transport = self.client.transport.clone();
        let read = FeedRead {
            filter: self.filter.clone(),
            after: self.after,
            max: FEED_PAGE,
            wait: self.follow || self.held_back,
        };
        Box::pin(async move { transport.read_feed(read).await })
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<FeedEvent, WfError>>> {
        loop {
            if let Some(event) = self.buffered.pop_front() {
                self.yielded = event.cursor;
                return Poll::Ready(Some(Ok(event)));
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
                Ok(page) => {
                    let caught_up = page.events.is_empty() && page.next == self.after;
                    self.held_back = page.held_back;
                    self.yielded = self.after;
                    self.after = page.next;
                    self.buffered.extend(page.events);
                    // Caught up with what was committed: held back rows are not missed.
                    if caught_up && !self.follow && !self.held_back {
                        self.done = true;
                    }
                }
                Err(e) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

impl futures_core::Stream for FeedReader {
    type Item = Result<FeedEvent, WfError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_event(cx)
    }
}
