//! wf's store on PostgreSQL (15+): worker processes on many machines share one database.
//!
//! [`PostgresStore`] implements wf-core's [`Backend`](wf_core::store::Backend), so it runs the
//! same rules as the SQLite and memory stores and passes the same conformance suite.
//!
//! - Group commit: each writer connection folds the requests that arrive together into one
//!   transaction and answers each caller after the `COMMIT` (savepoints only when a request
//!   fails after writing); the latest runs the group's starts read come in one statement, and
//!   its workflow tasks' writes go in one more.
//! - Task leases use `FOR UPDATE SKIP LOCKED`; a writer's reads of a run lock it (see
//!   `runs.rs`), so two processes never both pass a rule's checks.
//! - Wake-ups between processes: `NOTIFY` after each commit that made work ready, one `LISTEN`ing connection per store.
//! - Versioned migrations on open, under an advisory lock; all tables in one schema
//!   ([`PostgresOptions::schema`]).
//! - No TLS: connections use `NoTls`. Reach a server that requires TLS through a local proxy
//!   or sidecar (pgbouncer, stunnel, a cloud SQL proxy).
//!
//! Files: `options.rs`, `connect.rs` (connections), `schema.rs` (migrations), `store.rs`
//! (opening, the `Backend`), `writer.rs` (the connection tasks and group commit), `listen.rs`
//! (`LISTEN/NOTIFY`), `notify.rs` (what a transaction tells others), `tx.rs` (the transaction
//! the rules see), `commits.rs` (a group's run writes in one statement), `rows.rs` (decoding,
//! errors), one file per table, `purge.rs` (retention's deletes), and `testing.rs` (feature
//! `testing`).

mod activities;
mod builds;
mod commits;
mod connect;
mod engines;
mod events;
mod inbox;
mod listen;
mod liveness;
mod marks;
mod notify;
mod options;
mod purge;
mod rows;
mod runs;
mod schedules;
mod schema;
mod search;
mod starts;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod timers;
mod tx;
mod updates;
mod writer;

pub use options::PostgresOptions;
pub use store::PostgresStore;
pub use tx::PostgresTx;
