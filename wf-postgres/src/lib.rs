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
//! - Connection strings as libpq reads them, as a URL or `key=value` pairs, several hosts with
//!   `target_session_attrs=read-write` included. TLS with rustls (no OpenSSL): `sslmode`
//!   (`disable`, `prefer` the default, `require`, `verify-ca`, `verify-full`), `sslrootcert` (a
//!   PEM file, or `system`), `sslcert` and `sslkey` (a client certificate); the same can be set
//!   in code ([`PostgresOptions::tls`]). [`connect_raw`] opens a plain tokio-postgres
//!   connection that reads the string the same way, for SQL of one's own.
//!
//! ```no_run
//! # async fn demo() -> Result<(), wf_core::store::StoreError> {
//! use wf_postgres::PostgresStore;
//! let store = PostgresStore::connect(
//!     "postgres://wf:secret@db.internal:5432/app?sslmode=verify-full&sslrootcert=/etc/wf/db-ca.pem",
//! )
//! .await?;
//! # let _ = store; Ok(()) }
//! ```
//!
//! Failures say what failed (the server's certificate signed by an unknown CA, issued for
//! another host name or expired; a server without TLS; a server that requires TLS or a client
//! certificate) and never show the password.
//!
//! Files: `options.rs`, `connect.rs` (connections), `conninfo.rs` (connection strings),
//! `tls/` (TLS settings, certificate checks, what a TLS failure means), `schema.rs`
//! (migrations), `store.rs` (opening, the `Backend`), `writer.rs` (the connection tasks and
//! group commit), `listen.rs` (`LISTEN/NOTIFY`), `notify.rs` (what a transaction tells
//! others), `tx.rs` (the transaction the rules see), `commits.rs` (a group's run writes in
//! one statement), `rows.rs` (decoding, errors), one file per table, `purge.rs` (retention's
//! deletes), and `testing.rs` (feature `testing`).

mod activities;
mod builds;
mod commits;
mod connect;
mod conninfo;
mod engines;
mod events;
mod feed;
mod flow;
mod inbox;
mod listen;
mod liveness;
mod marks;
mod notify;
mod options;
mod purge;
mod queues;
mod rows;
mod runs;
mod schedules;
mod schema;
mod search;
mod starts;
mod store;
mod streams;
#[cfg(feature = "testing")]
pub mod testing;
mod timers;
mod tls;
mod tx;
mod updates;
mod writer;

pub use connect::{connect_raw, connect_raw_with};
pub use options::PostgresOptions;
pub use store::PostgresStore;
pub use tls::{ClientCert, PostgresTls, RootCerts, SslMode, UnknownSslMode};
pub use tx::PostgresTx;
