//! The feed route's wire names: the query of `GET /_events` and the body of the event that
//! ends a feed read that does not follow. Each feed event's `data:` is the JSON of a
//! [`FeedEvent`](wf_core::FeedEvent) as serde gives it.

use serde::{Deserialize, Serialize};
use wf_core::FeedCursor;

/// The `event:` name of the last event of `GET /_events?follow=false`.
pub const FEED_END: &str = "end";

/// The `data:` of the feed's `end` event: where a reader goes on from (past the last event
/// sent, or past events the filter skipped).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FeedEndBody {
    /// The cursor to read on from (`?after=` of the next read).
    pub cursor: FeedCursor,
}
