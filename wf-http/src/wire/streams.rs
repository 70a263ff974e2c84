//! The stream route's wire names: the header naming the run read, and the body of the
//! event that ends a stream.

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
