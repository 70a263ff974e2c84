//! Plain data: payloads and their codecs (compression, encryption at rest), history events and
//! their storage codec, messages, runs, run limits, updates, activity options with their lease
//! arithmetic, activity task tokens, flow limits, queues of workflow starts, durable streams and
//! their limits, the feed of what runs do, fresh ids, worker versioning, the limits on ids and names, and
//! the exported history document (with MessagePack read as JSON).
//! Everything else in the crate speaks these types.
//!
//! May import: nothing else of this crate (serde, serde_json, rmp, base64 and uuid only).

pub mod activity;
pub mod blocked;
pub mod codec;
pub mod export;
pub mod feed;
pub mod flow;
#[cfg(test)]
mod fuzz;
pub mod history;
pub mod ids;
pub mod json;
pub mod limits;
pub mod message;
pub mod pause;
pub mod payload;
pub mod payload_codec;
pub mod queue;
mod render;
pub mod repair;
pub mod run;
pub mod run_limits;
pub mod search;
pub mod stream;
pub mod task_token;
pub mod update;
pub mod versioning;
