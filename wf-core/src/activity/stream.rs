//! Stream writes from activities: `ctx.stream("tokens").write(&v).await` appends an entry to
//! a stream of the activity's run, committed at once (not with a workflow task), so readers
//! see an activity's output while it runs.
//!
//! Each write carries an entry id, and the store keeps one entry per id and stream: a retried
//! attempt's writes with the ids of the first attempt's land once. By default the id is the
//! activity's sequence number in its run and the write's rank in this attempt
//! (`activity-3-0`, `activity-3-1`, ...), so an attempt that writes again what the one before
//! it wrote (in the same order) adds nothing; [`write_with_id`](ActivityStream::write_with_id)
//! names the entry itself.

use super::context::ActivityContext;
use crate::data::limits::Ident;
use crate::data::payload::Payload;
use crate::data::stream::{check_entry, StreamError};
use serde::Serialize;

/// One stream of the activity's run, from [`ActivityContext::stream`].
#[derive(Debug)]
pub struct ActivityStream<'a> {
    ctx: &'a ActivityContext,
    name: String,
}

impl ActivityContext {
    /// The run's stream `name`, written from this activity (see [`ActivityStream`]). A
    /// workflow and its activities may write to one stream: entries take offsets in the
    /// order they commit.
    ///
    /// ```ignore
    /// #[activity]
    /// async fn generate(&self, ctx: ActivityContext, prompt: String) -> Result<String, ActivityError> {
    ///     let mut reply = String::new();
    ///     for token in self.model.tokens(&prompt).await? {
    ///         ctx.stream("tokens").write(&token).await?;
    ///         reply.push_str(&token);
    ///     }
    ///     Ok(reply)
    /// }
    /// ```
    pub fn stream(&self, name: impl Into<String>) -> ActivityStream<'_> {
        ActivityStream {
            ctx: self,
            name: name.into(),
        }
    }
}

impl ActivityStream<'_> {
    /// Appends `value` with this attempt's next default entry id (see the module's
    /// documentation); returns its offset (that of the earlier entry of the same id, if a
    /// previous attempt wrote it).
    ///
    /// Fails (recording nothing) for a bad name, a value over
    /// [`MAX_STREAM_ENTRY_BYTES`](crate::data::stream::MAX_STREAM_ENTRY_BYTES), a closed or
    /// full stream, a closed run, a store failure (`StreamError::Store`, which `?` makes a
    /// retryable activity error), or a context with no store (a local activity's, a test's).
    pub async fn write<T: Serialize + ?Sized>(&self, value: &T) -> Result<u64, StreamError> {
        let rank = {
            let mut writes =
                self.ctx.stream_writes.lock().map_err(|_| {
                    StreamError::Store("the attempt's write count is poisoned".into())
                })?;
            let count = writes.entry(self.name.clone()).or_insert(0);
            let rank = *count;
            *count += 1;
            rank
        };
        let id = format!("activity-{}-{rank}", self.ctx.info.seq);
        self.write_with_id(&id, value).await
    }

    /// Appends `value` as the entry `entry_id` of the stream, unless the stream holds an
    /// entry of that id already (a retried attempt's write): returns the entry's offset.
    pub async fn write_with_id<T: Serialize + ?Sized>(
        &self,
        entry_id: &str,
        value: &T,
    ) -> Result<u64, StreamError> {
        Ident::StreamName
            .check(&self.name)
            .map_err(|e| StreamError::BadName(e.to_string()))?;
        Ident::StreamEntryId
            .check(entry_id)
            .map_err(|e| StreamError::BadName(e.to_string()))?;
        let value = Payload::encode_named(value).map_err(|e| StreamError::Encode(e.to_string()))?;
        check_entry(&self.name, &value)?;
        let Some(sink) = &self.ctx.sink else {
            return Err(StreamError::Store(
                "this activity context has no store (a local activity's or a test's): \
                 stream writes need a worker's activity"
                    .into(),
            ));
        };
        sink.stream(
            &self.ctx.info,
            self.name.clone(),
            value,
            entry_id.to_string(),
        )
        .await
    }
}

impl From<StreamError> for crate::error::ActivityError {
    /// A store failure is retryable; every other refusal is not (kind `stream`).
    fn from(e: StreamError) -> Self {
        match e {
            StreamError::Store(_) => crate::error::ActivityError::retryable(e.to_string()),
            _ => crate::error::ActivityError::non_retryable("stream", e.to_string()),
        }
    }
}
