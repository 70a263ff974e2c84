//! Plain data: payloads, history events and their storage codec, messages, runs, updates,
//! activity options with their lease arithmetic, fresh ids, and the limits on ids and names.
//! Everything else in the crate speaks these types.
//!
//! May import: nothing else of this crate (serde, rmp and uuid only).

pub mod activity;
pub mod codec;
#[cfg(test)]
mod fuzz;
pub mod history;
pub mod ids;
pub mod limits;
pub mod message;
pub mod payload;
mod render;
pub mod run;
pub mod update;
