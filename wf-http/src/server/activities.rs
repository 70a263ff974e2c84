//! `POST /_activities/{complete,fail,heartbeat}`: asynchronous activity completion by task
//! token (what an outside system calls, or the remote client's `complete_activity`,
//! `fail_activity` and `heartbeat_activity`). Behind the service's bearer token like every
//! route but `/healthz`.

use super::body::{Codec, Failure};
use super::Api;
use crate::errors::ErrorBody;
use crate::json::to_payload;
use crate::wire::ActivityReportBody;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};
use wf_core::{ActivityResponse, Payload, PayloadError};

/// `POST /_activities/{action}` -> 200 `{"status": "completed" | "failed" | "recorded"}`.
pub(crate) async fn respond(
    State(api): State<Api>,
    Path(action): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let (token, response) = match codec {
        Codec::Json => {
            let b: ActivityReportBody<Value> = codec.decode(body, None)?;
            response(&action, b, |v| to_payload(&v.unwrap_or(Value::Null)))?
        }
        Codec::Msgpack => {
            let b: ActivityReportBody<Payload> = codec.decode(body, None)?;
            response(&action, b, |v| {
                v.map_or_else(|| to_payload(&Value::Null), Ok)
            })?
        }
    };
    let status = match &response {
        ActivityResponse::Complete(_) => "completed",
        ActivityResponse::Heartbeat(_) => "recorded",
        _ => "failed",
    };
    api.client().respond_activity(&token, response).await?;
    Ok(codec.reply(200, &json!({ "status": status })))
}

/// The token and what to report for it, from the body of route `action` (`value` turns a
/// result or details into a payload); 404 for an action that is none of the three.
fn response<V>(
    action: &str,
    b: ActivityReportBody<V>,
    value: impl Fn(Option<V>) -> Result<Payload, PayloadError>,
) -> Result<(String, ActivityResponse), Failure> {
    let response = match action {
        "complete" => ActivityResponse::Complete(value(b.result)?),
        "heartbeat" => ActivityResponse::Heartbeat(value(b.details)?),
        "fail" => fail(b.error)?,
        _ => {
            return Err(Failure::new(
                404,
                ErrorBody::new(
                    "not_found",
                    format!("no route POST /_activities/{action}; use complete, fail or heartbeat"),
                ),
            ))
        }
    };
    Ok((b.token, response))
}

/// The `fail` route's report: its body must carry `error`.
fn fail(error: Option<crate::wire::ActivityErrorBody>) -> Result<ActivityResponse, Failure> {
    let error = error.ok_or_else(|| {
        Failure::new(
            400,
            ErrorBody::new(
                "invalid_args",
                "the fail route needs an `error`: {\"message\", \"kind\", \"non_retryable\"}",
            ),
        )
    })?;
    Ok(ActivityResponse::Fail(error.into_error()))
}
