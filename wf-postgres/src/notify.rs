//! What a transaction tells other processes: a write that makes work ready (a message in an
//! inbox, a run or an activity ready, a timer or a schedule to watch) notes it, and the writer
//! sends one `NOTIFY` with the batch, delivered when it commits.

/// What a transaction did that other processes should hear of.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Notes {
    /// New work or a new due time: engines should look at the store.
    pub(crate) work: bool,
}
