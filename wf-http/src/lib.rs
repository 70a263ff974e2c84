//! wf-http: serve wf workflows over HTTP, and drive them from another process.
//!
//! - [`router`] returns the routes (start, signal, update, query, describe, history, list,
//!   result, cancel, terminate, type metadata, health, readiness) as an axum `Router` to mount
//!   in an app; [`serve`] runs them alone with bearer tokens by role, a body limit, a
//!   per-request timeout and optionally TLS.
//! - [`Role`] and [`Tokens`]: each route needs `read`, `write` or `admin` (one table classifies
//!   every route; see [`Role`] for what each reaches). [`ServeOptions`] takes tokens in code
//!   or from a tokens file ([`Tokens::from_file`]: one `ROLE TOKEN` per line). A missing or
//!   unknown token gets 401 `unauthorized`, a token below the route's role 403 `forbidden`.
//! - `GET /healthz` is liveness, `GET /readyz` readiness (the store answers a read within
//!   [`ServeOptions::ready_timeout`]); neither needs a token.
//! - [`ConnectExt`] adds `Client::connect("http://host:port")` (or `https://`) to
//!   [`wf_core::Client`]: a client whose typed handles work as in-process ones, over HTTP
//!   ([`HttpTransport`]).
//!
//! Bodies are JSON (values transcoded to and from the payload codec, arguments by position
//! or by parameter name), or MessagePack with `Content-Type: application/msgpack`, in which
//! payloads travel as their bytes (what the remote client uses, so values round-trip exactly).
//!
//! HTTPS on both sides, with rustls (the `ring` provider; no OpenSSL): [`serve`] with a
//! certificate ([`ServeOptions::tls`], [`TlsConfig`]; HTTP/2 or HTTP/1.1 by ALPN, client
//! certificates required against a CA for mutual TLS), and `Client::connect("https://..")`
//! trusting the system's CAs or a CA file, with a client certificate when the server asks
//! ([`Connecting::ca_file`], [`Connecting::client_cert`], [`ClientTls`]). Plain HTTP serves
//! HTTP/1.1; off loopback it logs a warning, as the token then travels in clear text.
//!
//! | module | what lives there |
//! |---|---|
//! | [`wire`] | request and response bodies, shared by both sides |
//! | [`json`] | JSON to and from payloads; arguments checked per parameter |
//! | [`errors`] | one status and code per `WfError` kind, both ways |
//! | `list_query` | the list route's query string (filters), both ways |
//! | `server` | the routes, [`Api`], [`serve`], [`TlsConfig`] |
//! | `client` | [`HttpTransport`], `Client::connect` and [`ClientTls`] |
//! | `tls` | PEM files and rustls's `ring` provider, shared by both sides |
//! | `testing` | throwaway certificates for tests (feature `testing`) |

#![warn(missing_docs)]

mod client;
mod decode_error;
mod durations;
pub mod errors;
pub mod json;
mod list_query;
mod server;
mod suggest;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;
pub mod wire;

pub use client::{ClientTls, ConnectExt, Connecting, HttpTransport};
pub use server::{router, serve, Api, Role, ServeOptions, Server, TlsConfig, Tokens, ANY_TYPE};
