//! wf-http: serve wf workflows over HTTP, and drive them from another process.
//!
//! - [`router`] returns the routes (start, signal, update, query, describe, history, list,
//!   result, cancel, terminate, type metadata, health, readiness) as an axum `Router` to mount
//!   in an app; [`serve`] runs them alone with bearer tokens by role, a body limit and a
//!   per-request timeout.
//! - [`Role`] and [`Tokens`]: each route needs `read`, `write` or `admin` (one table classifies
//!   every route; see [`Role`] for what each reaches). [`ServeOptions`] takes tokens in code
//!   or from a tokens file ([`Tokens::from_file`]: one `ROLE TOKEN` per line). A missing or
//!   unknown token gets 401 `unauthorized`, a token below the route's role 403 `forbidden`.
//! - `GET /healthz` is liveness, `GET /readyz` readiness (the store answers a read within
//!   [`ServeOptions::ready_timeout`]); neither needs a token.
//! - [`ConnectExt`] adds `Client::connect("http://host:port")` to [`wf_core::Client`]: a client
//!   whose typed handles work as in-process ones, over HTTP ([`HttpTransport`]).
//!
//! Bodies are JSON (values transcoded to and from the payload codec, arguments by position
//! or by parameter name), or MessagePack with `Content-Type: application/msgpack`, in which
//! payloads travel as their bytes (what the remote client uses, so values round-trip exactly).
//! Plain HTTP only: put TLS in a reverse proxy.
//!
//! | module | what lives there |
//! |---|---|
//! | [`wire`] | request and response bodies, shared by both sides |
//! | [`json`] | JSON to and from payloads; arguments checked per parameter |
//! | [`errors`] | one status and code per `WfError` kind, both ways |
//! | `list_query` | the list route's query string (filters), both ways |
//! | `server` | the routes, [`Api`], [`serve`] |
//! | `client` | [`HttpTransport`] and `Client::connect` |

#![warn(missing_docs)]

mod client;
pub mod errors;
pub mod json;
mod list_query;
mod server;
pub mod wire;

pub use client::{ConnectExt, Connecting, HttpTransport};
pub use server::{router, serve, Api, Role, ServeOptions, Server, Tokens, ANY_TYPE};
