//! Plain data: payloads, history events and their storage codec, messages, runs, updates,
//! activity options with their lease arithmetic, and fresh ids. Everything else in the crate
//! speaks these types.
//!
//! May import: nothing else of this crate (serde, rmp and uuid only).

pub mod activity;
pub mod codec;
pub mod history;
pub mod ids;
pub mod message;
pub mod payload;
pub mod run;
pub mod update;
