//! Bodies in and out: JSON by default, MessagePack when the request says
//! `Content-Type: application/msgpack` (or asks for it with `Accept`), and every error as
//! `{"error", "message", ...}` with its status.

use crate::errors::{to_http, ErrorBody};
use crate::wire::MSGPACK;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wf_core::WfError;

/// How a request's values travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// JSON values, transcoded to and from payloads with the handlers' types.
    Json,
    /// Payload bytes as they are (the remote client).
    Msgpack,
}

impl Codec {
    /// MessagePack when the body is, or when the caller asks for it.
    pub fn of(headers: &HeaderMap) -> Codec {
        let says = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .is_some_and(|v| v.contains(MSGPACK))
        };
        if says(header::CONTENT_TYPE) || says(header::ACCEPT) {
            Codec::Msgpack
        } else {
            Codec::Json
        }
    }

    /// Decodes a request body; an empty body reads as `empty` when there is one.
    pub fn decode<T: DeserializeOwned>(
        self,
        body: Result<Bytes, BytesRejection>,
        empty: Option<T>,
    ) -> Result<T, Failure> {
        self.decode_hinted(body, empty, "")
    }

    /// [`decode`](Self::decode), with `hint` (the forms the route takes) after the message of
    /// a body that does not decode.
    pub fn decode_hinted<T: DeserializeOwned>(
        self,
        body: Result<Bytes, BytesRejection>,
        empty: Option<T>,
        hint: &str,
    ) -> Result<T, Failure> {
        let bytes = body.map_err(rejected)?;
        if bytes.is_empty() {
            if let Some(value) = empty {
                return Ok(value);
            }
        }
        let sep = if hint.is_empty() { "" } else { "; " };
        let (format, decoded) = match self {
            Codec::Json => (
                "JSON",
                serde_json::from_slice(&bytes).map_err(|e| e.to_string()),
            ),
            Codec::Msgpack => (
                "MessagePack",
                wf_core::wire::decode_bytes(&bytes).map_err(|e| e.to_string()),
            ),
        };
        decoded.map_err(|e| {
            Failure::new(
                400,
                ErrorBody::new(
                    "invalid_args",
                    format!("the body is not valid {format} for this route: {e}{sep}{hint}"),
                ),
            )
        })
    }

    /// A response with `status` and `value` in this codec.
    pub fn reply<T: Serialize>(self, status: u16, value: &T) -> Response {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        match self {
            Codec::Json => match serde_json::to_vec(value) {
                Ok(bytes) => body_response(status, "application/json", bytes),
                Err(e) => internal(e.to_string()),
            },
            Codec::Msgpack => match rmp_serde::to_vec_named(value) {
                Ok(bytes) => body_response(status, MSGPACK, bytes),
                Err(e) => internal(e.to_string()),
            },
        }
    }
}

fn body_response(status: StatusCode, content_type: &'static str, bytes: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        bytes,
    )
        .into_response()
}

fn internal(message: String) -> Response {
    Failure::new(
        500,
        ErrorBody::new(
            "internal",
            format!("could not encode the answer: {message}"),
        ),
    )
    .into_response()
}

/// An error answer: a status and an error body (always JSON).
#[derive(Debug)]
pub(crate) struct Failure {
    status: u16,
    body: Box<ErrorBody>,
}

impl Failure {
    pub fn new(status: u16, body: ErrorBody) -> Failure {
        Failure {
            status,
            body: Box::new(body),
        }
    }

    /// A 400 `invalid_args` naming the parameter at fault.
    pub fn invalid_args(message: String, param: Option<String>) -> Failure {
        Failure::new(
            400,
            ErrorBody {
                param,
                ..ErrorBody::new("invalid_args", message)
            },
        )
    }

    /// Names the update a timed-out wait was for.
    pub fn set_update_id(&mut self, update_id: &str) {
        self.body.update_id = Some(update_id.to_string());
    }

    /// A 404 `not_found`.
    pub fn not_found(message: String) -> Failure {
        Failure::new(404, ErrorBody::new("not_found", message))
    }
}

impl From<WfError> for Failure {
    fn from(e: WfError) -> Failure {
        let (status, body) = to_http(&e);
        Failure::new(status, body)
    }
}

impl From<wf_core::PayloadError> for Failure {
    fn from(e: wf_core::PayloadError) -> Failure {
        Failure::from(WfError::PayloadError(e))
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = serde_json::to_vec(&self.body).unwrap_or_else(|_| b"{}".to_vec());
        body_response(status, "application/json", bytes)
    }
}

/// A body that could not be read: too large (413), or cut off (400).
fn rejected(r: BytesRejection) -> Failure {
    let status = r.status().as_u16();
    if status == 413 {
        Failure::new(
            413,
            ErrorBody::new(
                "too_large",
                format!("the request body is over this server's limit: {r}"),
            ),
        )
    } else {
        Failure::new(
            status,
            ErrorBody::new(
                "invalid_args",
                format!("could not read the request body: {r}"),
            ),
        )
    }
}
