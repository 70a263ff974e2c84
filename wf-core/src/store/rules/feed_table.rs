//! The primitives of the feed of what runs do (see [`Tx`](super::tx::Tx)): the
//! `workflow_feed` table, one row per lifecycle fact of a run, numbered in commit order (see
//! `rules/feed.rs` for what writes them and `data/feed.rs` for what they hold).

use crate::data::feed::{FeedCursor, FeedEvent, FeedKind};
use crate::error::StoreError;
use std::future::Future;

/// A feed row to insert; the store gives it its place (its sequence number, and on a store
/// whose transactions commit out of that order, the transaction's id).
#[derive(Debug, Clone, PartialEq)]
pub struct FeedRow<'a> {
    /// The run's workflow type.
    pub workflow_type: &'a str,
    /// The run's workflow id.
    pub workflow_id: &'a str,
    /// The run.
    pub run_id: &'a str,
    /// What happened.
    pub kind: FeedKind,
    /// The history event it reports, if any.
    pub event_id: Option<u64>,
    /// When (engine-clock ms).
    pub at_ms: i64,
    /// The [`FeedDetail`](crate::data::feed::FeedDetail) as JSON (`{}` for none).
    pub detail: String,
}

/// The `workflow_feed` table.
pub trait FeedTable {
    /// Inserts the rows, in order (each after the ones before it in the feed).
    fn insert_feed(
        &mut self,
        rows: &[FeedRow<'_>],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// At most `max` rows after `after` (never [`FeedCursor::now`]) in feed order, of the
    /// workflow type and workflow id given (any when `None`), each with its cursor. A store
    /// whose transactions commit out of sequence order answers only rows no transaction still
    /// open can come before (see `wf-postgres`'s `feed.rs`).
    fn feed_rows(
        &mut self,
        after: FeedCursor,
        workflow_type: Option<&str>,
        workflow_id: Option<&str>,
        max: usize,
    ) -> impl Future<Output = Result<Vec<FeedEvent>, StoreError>> + Send;

    /// Whether rows were committed that [`feed_rows`](Self::feed_rows) does not answer yet
    /// (on a store whose transactions commit out of sequence order: an older transaction is
    /// still open). The default, for stores that answer every committed row, is `false`.
    fn feed_held_back(&mut self) -> impl Future<Output = Result<bool, StoreError>> + Send {
        async { Ok(false) }
    }

    /// The cursor of the last row [`feed_rows`](Self::feed_rows) would answer now
    /// ([`FeedCursor::start`] for an empty feed).
    fn feed_tail(&mut self) -> impl Future<Output = Result<FeedCursor, StoreError>> + Send;

    /// Deletes the feed rows of these runs.
    fn delete_runs_feed(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The feed event of a stored row (for stores): its `kind` column read back, its detail's
/// JSON decoded (a detail that does not decode reads as none). A kind this version does not
/// know (written by a newer one) is an `Invalid` backend error.
#[allow(clippy::too_many_arguments)]
pub fn feed_event(
    cursor: FeedCursor,
    kind: &str,
    workflow_type: String,
    workflow_id: String,
    run_id: String,
    event_id: Option<i64>,
    at_ms: i64,
    detail: &str,
) -> Result<FeedEvent, StoreError> {
    let kind: FeedKind = kind.parse().map_err(|e: String| {
        StoreError::backend(
            crate::error::BackendErrorKind::Invalid,
            format!("a feed row of run {run_id} was written by a newer wf: {e}"),
        )
    })?;
    Ok(FeedEvent {
        cursor,
        kind,
        workflow_type,
        workflow_id,
        run_id,
        event_id: event_id.and_then(|id| u64::try_from(id).ok()),
        at_ms,
        detail: serde_json::from_str(detail).unwrap_or_default(),
    })
}
