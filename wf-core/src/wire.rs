//! What the programs beside the engine (wf-http, wf-cli, wf-postgres) need to put payloads
//! and history events on the wire, and nothing more: the plain-data layer itself (`data`) is
//! the engine's own.
//!
//! - JSON views: a payload as the JSON value it encodes ([`from_payload`]), a stored event's
//!   bytes or an event's attributes as JSON objects keyed by field name.
//! - [`decode_bytes`]: a MessagePack body into a Rust value, with the engine's error.
//! - [`new_id`]: a fresh random id, as the engine makes them for runs and updates.

pub use crate::data::ids::new_id;
pub use crate::data::json::{event_attributes, from_event_bytes, from_payload};
pub use crate::data::payload::decode_bytes;
