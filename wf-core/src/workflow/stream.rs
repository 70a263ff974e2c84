//! Durable streams and published events written by workflow code: `ctx.stream("tokens").write(&value)` records a
//! `StreamWritten` command, `.close()` a `StreamClosed` one. The store appends each as the
//! stream's next entry when the workflow task commits, in the order the code wrote them; a
//! replay issues the same commands, which are checked against the history and not written
//! again, so every entry is stored once however often the run is rebuilt.
//!
//! `ctx.set_event(key, &value)` records an `EventSet` command: the store keeps the latest value
//! of each key for `client.get_event`, from the same commit.
//!
//! The limits (`data::stream`) are checked here, against what this run's code wrote: a write
//! that breaks one records nothing and returns the error.

use super::commands::Commands;
use super::context::WorkflowContext;
use crate::data::history::EventKind;
use crate::data::limits::Ident;
use crate::data::payload::Payload;
use crate::data::stream::{check_entry, StreamError, MAX_STREAM_ENTRIES};
use serde::Serialize;

/// What this run's code wrote to one stream so far (rebuilt by replay, like every command).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StreamState {
    /// Entries written, the close included.
    pub written: u64,
    pub closed: bool,
}

impl Commands {
    /// Records a write (`Some`) or the close (`None`) of stream `name`, after the checks.
    fn stream_command(&mut self, name: &str, value: Option<Payload>) -> Result<(), StreamError> {
        let state = self.streams.get(name).copied().unwrap_or_default();
        if state.closed {
            return Err(StreamError::Closed {
                stream: name.to_string(),
            });
        }
        if state.written >= MAX_STREAM_ENTRIES {
            return Err(StreamError::Full {
                stream: name.to_string(),
            });
        }
        let stream = name.to_string();
        let closed = value.is_none();
        self.issued.push(match value {
            Some(value) => EventKind::StreamWritten { stream, value },
            None => EventKind::StreamClosed { stream },
        });
        let state = self.streams.entry(name.to_string()).or_default();
        state.written += 1;
        state.closed = closed;
        Ok(())
    }
}

/// One named stream of the running workflow, from [`WorkflowContext::stream`].
pub struct StreamWriter<'a, W> {
    ctx: &'a WorkflowContext<W>,
    name: String,
}

impl<W: 'static> WorkflowContext<W> {
    /// The run's stream `name`, to publish ordered entries that readers follow live
    /// (`handle.stream::<T>(name)`), with no worker needed to read them.
    ///
    /// ```ignore
    /// let tokens = ctx.stream("tokens");
    /// for token in reply.split(' ') {
    ///     tokens.write(&token)?;
    /// }
    /// tokens.close()?;
    /// ```
    ///
    /// Entries are recorded with the workflow task's commit (a write is durable once the
    /// code next awaits something that ends the task), in the order written, each once.
    pub fn stream(&self, name: impl Into<String>) -> StreamWriter<'_, W> {
        StreamWriter {
            ctx: self,
            name: name.into(),
        }
    }
}

impl<W: 'static> StreamWriter<'_, W> {
    /// Appends `value` as the stream's next entry (offsets count from 0).
    ///
    /// Records nothing and fails with a [`StreamError`] (which `?` turns into a run failure)
    /// when the name is bad, the encoded value is over
    /// [`MAX_STREAM_ENTRY_BYTES`](crate::data::stream::MAX_STREAM_ENTRY_BYTES), the stream
    /// holds [`MAX_STREAM_ENTRIES`] or was closed.
    pub fn write<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), StreamError> {
        Ident::StreamName
            .check(&self.name)
            .map_err(|e| StreamError::BadName(e.to_string()))?;
        let value = Payload::encode_named(value).map_err(|e| StreamError::Encode(e.to_string()))?;
        check_entry(&self.name, &value)?;
        self.ctx
            .core
            .borrow_mut()
            .stream_command(&self.name, Some(value))
    }

    /// Closes the stream: its readers end once they have read the entries before. A write
    /// after it fails with [`StreamError::Closed`]; a second close too.
    pub fn close(&self) -> Result<(), StreamError> {
        Ident::StreamName
            .check(&self.name)
            .map_err(|e| StreamError::BadName(e.to_string()))?;
        self.ctx.core.borrow_mut().stream_command(&self.name, None)
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Publishes `value` under `key` for readers outside the run
    /// ([`Client::get_event`](crate::Client::get_event), which waits until a value is set):
    /// a progress mark, a URL for the caller, a result before the end. A later `set_event` of
    /// the same key replaces the value (readers get the latest), also from a later run of the
    /// workflow id. Recorded with the workflow task's commit, once, like a stream write.
    ///
    /// ```ignore
    /// ctx.set_event("payment_url", &url)?;
    /// ```
    ///
    /// Records nothing and fails for a bad key (a name's limits) or a value over
    /// [`MAX_STREAM_ENTRY_BYTES`](crate::data::stream::MAX_STREAM_ENTRY_BYTES).
    pub fn set_event<T: Serialize + ?Sized>(
        &self,
        key: &str,
        value: &T,
    ) -> Result<(), StreamError> {
        Ident::EventKey
            .check(key)
            .map_err(|e| StreamError::BadName(e.to_string()))?;
        let value = Payload::encode_named(value).map_err(|e| StreamError::Encode(e.to_string()))?;
        check_entry(key, &value)?;
        self.core.borrow_mut().issued.push(EventKind::EventSet {
            key: key.to_string(),
            value,
        });
        Ok(())
    }
}
