//! The stream routes' wire names: the header naming the run read, the body of the event that
//! ends a stream, and the list of a run's streams.

use serde::{Deserialize, Serialize};

/// The response header of `GET /{type}/runs/{id}/streams/{name}` that names the run read.
pub const RUN_ID_HEADER: &str = "wf-run-id";

/// The `event:` name of the last event of a stream's event stream.
pub const STREAM_END: &str = "end";

/// The `data:` of the `end` event: why the stream ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamEndBody {
    /// Whether the stream was closed (`ctx.stream(..).close()`); `false` when its run closed
    /// with the stream open.
    pub closed: bool,
    /// The close's offset, when the stream was closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}

/// The body of `GET /{type}/runs/{id}/streams`: the run read and its streams.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamListBody {
    /// The run read (the latest of the workflow id, or the `run_id` asked for).
    pub run_id: String,
    /// Each stream of the run that holds an entry, in name order.
    pub streams: Vec<StreamInfoBody>,
}

/// One stream of [`StreamListBody`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamInfoBody {
    /// The stream's name.
    pub name: String,
    /// The entries it holds, the close not counted (the next entry's offset).
    pub entries: u64,
    /// Whether it was closed.
    pub closed: bool,
}
