//! `POST /_activities/poll` and `POST /_activities/{complete,fail,heartbeat}`: activity tasks
//! for workers outside the engine (a service in another language leases a task, heartbeats
//! it, reports its outcome), and asynchronous activity completion by task token (what an
//! outside system calls, or the remote client's `complete_activity`, `fail_activity` and
//! `heartbeat_activity`). Both are the engine's own machinery: a polled task is an attempt
//! leased to the caller, with the timeouts and retries of any other. Behind the service's
//! bearer token like every route but `/healthz`.

use super::body::{Codec, Failure};
use super::Api;
use crate::errors::ErrorBody;
use crate::json::{from_payload, to_payload};
use crate::wire::{
    ActivityHeartbeatReply, ActivityPollBody, ActivityReportBody, ActivityTaskBody,
    HEARTBEAT_NOT_OPEN,
};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::time::Duration;
use wf_core::{
    ActivityError, ActivityResponse, ActivityTaskLease, ActivityTaskPoll, Payload, PayloadError,
    WfError,
};

/// How long a poll waits when its body does not say.
const WAIT_DEFAULT_MS: u64 = 20_000;

/// The forms of the poll's body, for its 400.
const POLL_FORM: &str = "expected {\"task_queue\": \"...\", \"names\": [\"activity\", ...], \
                         \"wait_ms\": 20000, \"identity\": \"...\"}";

/// `POST /_activities/poll` -> 200 with a task ([`ActivityTaskBody`]), or 204 when the wait
/// ran out.
pub(crate) async fn poll(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let b: ActivityPollBody = codec.decode_hinted(body, None, POLL_FORM)?;
    let poll = ActivityTaskPoll {
        task_queue: b.task_queue,
        names: b.names,
        wait: Duration::from_millis(b.wait_ms.unwrap_or(WAIT_DEFAULT_MS)),
        identity: b.identity.unwrap_or_default(),
    };
    let Some(lease) = api.client().poll_activity_task(poll).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    match codec {
        Codec::Msgpack => {
            let task = ActivityTaskBody::of(lease, Ok::<Payload, Failure>)?;
            Ok(codec.reply(200, &task))
        }
        Codec::Json => match ActivityTaskBody::of(lease.clone(), |p| from_payload(&p)) {
            Ok(task) => Ok(codec.reply(200, &task)),
            Err(e) => Err(unreadable_input(&api, lease, e).await),
        },
    }
}

/// A leased attempt whose input has no JSON form (a payload codec this server lacks, say):
/// no JSON worker can run it, nor any retry, so it fails for good, and the caller is told.
async fn unreadable_input(api: &Api, lease: ActivityTaskLease, e: PayloadError) -> Failure {
    let message = format!(
        "the input of activity {:?} (workflow {:?}) has no JSON form: {e}",
        lease.name, lease.workflow_id
    );
    let error = ActivityError::non_retryable("undecodable_input", message.clone());
    if let Err(e) = api
        .client()
        .respond_activity(&lease.token, ActivityResponse::Fail(error))
        .await
    {
        tracing::warn!(error = %e, "failing an activity whose input has no JSON form failed");
    }
    Failure::from(WfError::from(e))
}

/// `POST /_activities/{action}` -> 200 `{"status": "completed" | "failed" | "recorded"}`
/// (`heartbeat` also says `cancel_requested`).
pub(crate) async fn respond(
    State(api): State<Api>,
    Path(action): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let (token, responses) = match codec {
        Codec::Json => {
            let b: ActivityReportBody<Value> = codec.decode_hinted(body, None, REPORT_FORMS)?;
            responses(&action, b, |v| to_payload(&v.unwrap_or(Value::Null)))?
        }
        Codec::Msgpack => {
            let b: ActivityReportBody<Payload> = codec.decode_hinted(body, None, REPORT_FORMS)?;
            responses(&action, b, |v| {
                v.map_or_else(|| to_payload(&Value::Null), Ok)
            })?
        }
    };
    let mut status = "recorded";
    for response in responses {
        status = match &response {
            ActivityResponse::Complete(_) => "completed",
            ActivityResponse::Heartbeat(_) => "recorded",
            _ => "failed",
        };
        let heartbeat = action == "heartbeat";
        match api.client().respond_activity(&token, response).await {
            Ok(()) => {}
            // A worker learns from its heartbeat that it should stop, as an engine's activity
            // does from `ActivityContext::cancelled`.
            Err(WfError::ActivityNotPending(message)) if heartbeat => {
                let reply = ActivityHeartbeatReply {
                    status: HEARTBEAT_NOT_OPEN.into(),
                    cancel_requested: true,
                    message: Some(message),
                };
                return Ok(codec.reply(200, &reply));
            }
            Err(e) => return Err(e.into()),
        }
    }
    if action == "heartbeat" {
        let reply = ActivityHeartbeatReply {
            status: status.into(),
            cancel_requested: false,
            message: None,
        };
        return Ok(codec.reply(200, &reply));
    }
    Ok(codec.reply(200, &json!({ "status": status })))
}

/// The forms of the reports' bodies, for their 400.
const REPORT_FORMS: &str = "expected {\"token\", \"result\"} (complete), {\"token\", \
                            \"details\"} (heartbeat), {\"token\", \"message\", \"retryable\", \
                            \"kind\", \"details\"} or {\"token\", \"error\": {\"message\", \
                            \"kind\", \"non_retryable\"}} (fail)";

/// The token and what to report for it, in order, from the body of route `action` (`value`
/// turns a result or details into a payload); 404 for an action that is none of the three.
fn responses<V>(
    action: &str,
    b: ActivityReportBody<V>,
    value: impl Fn(Option<V>) -> Result<Payload, PayloadError>,
) -> Result<(String, Vec<ActivityResponse>), Failure> {
    let responses = match action {
        "complete" => vec![ActivityResponse::Complete(value(b.result)?)],
        "heartbeat" => vec![ActivityResponse::Heartbeat(value(b.details)?)],
        "fail" => {
            let error = fail(&b)?;
            match b.details {
                // Recorded first: what the next attempt reads as its last heartbeat.
                Some(details) => vec![
                    ActivityResponse::Heartbeat(value(Some(details))?),
                    ActivityResponse::Fail(error),
                ],
                None => vec![ActivityResponse::Fail(error)],
            }
        }
        _ => {
            return Err(Failure::new(
                404,
                ErrorBody::new(
                    "not_found",
                    format!(
                        "no route POST /_activities/{action}; use poll, complete, fail or \
                         heartbeat"
                    ),
                ),
            ))
        }
    };
    Ok((b.token, responses))
}

/// The `fail` route's error: its body carries `message` or `error`.
fn fail<V>(b: &ActivityReportBody<V>) -> Result<ActivityError, Failure> {
    let error = b.failure().ok_or_else(|| {
        Failure::new(
            400,
            ErrorBody::new(
                "invalid_args",
                "the fail route needs a `message` (with `retryable`, `kind` and `details` \
                 optional) or an `error`: {\"message\", \"kind\", \"non_retryable\"}",
            ),
        )
    })?;
    Ok(error.into_error())
}
