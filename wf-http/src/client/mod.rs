//! The remote client: [`HttpTransport`] carries every [`Transport`] call to a wf-http server
//! in MessagePack bodies (payloads travel as their bytes, so values round-trip exactly) over
//! pooled keep-alive connections, plain or TLS ([`ClientTls`]); [`ConnectExt`] gives
//! `Client::connect(url)`.
//!
//! May import: `wire`, `errors`, `tls`. Not `server`.

mod connect;
mod conns;
mod feed;
mod stream;
mod tls;
mod transport;

pub use connect::{ConnectExt, Connecting};
pub use tls::ClientTls;
pub use transport::HttpTransport;
