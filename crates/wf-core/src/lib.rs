//! wf-core: the engine of wf.
pub mod history;
pub mod payload;
pub mod store;
