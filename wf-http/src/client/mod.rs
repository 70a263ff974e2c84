//! The remote client: [`HttpTransport`] carries every [`Transport`] call to a wf-http server
//! in MessagePack bodies (payloads travel as their bytes, so values round-trip exactly) over
//! pooled keep-alive connections; [`ConnectExt`] gives `Client::connect(url)`.
//!
//! May import: `wire`, `errors`. Not `server`.

mod connect;
mod conns;
mod transport;

pub use connect::{ConnectExt, Connecting};
pub use transport::HttpTransport;
