//! `/_workflow_queues`: list, set and remove the settings of the queues of workflow starts
//! (what `client.workflow_queues()` calls over HTTP), so that an operator changes them while
//! the engines run; and what each holds now (`/_workflow_queues/usage`).

use super::body::{Codec, Failure};
use super::messages::path;
use super::Api;
use crate::wire::{QueueRemovedBody, QueueUsageBody, WorkflowQueueBody, WORKFLOW_QUEUE_FORMS};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

/// `GET /_workflow_queues` -> `[{"name", "concurrency"?, "rate"?}]`, by name.
pub(crate) async fn list(State(api): State<Api>, headers: HeaderMap) -> Result<Response, Failure> {
    let queues = api.client().workflow_queues().list().await?;
    let bodies: Vec<WorkflowQueueBody> = queues.iter().map(WorkflowQueueBody::of).collect();
    Ok(Codec::of(&headers).reply(200, &bodies))
}

/// `GET /_workflow_queues/usage` -> `[{"name", "concurrency"?, "rate"?, "configured",
/// "waiting", "running", "tokens"?}]`: every queue with settings or runs, by name.
pub(crate) async fn usage(State(api): State<Api>, headers: HeaderMap) -> Result<Response, Failure> {
    let usage = api.client().workflow_queues().usage().await?;
    let bodies: Vec<QueueUsageBody> = usage.iter().map(QueueUsageBody::of).collect();
    Ok(Codec::of(&headers).reply(200, &bodies))
}

/// `POST /_workflow_queues` `{"name": "emails", "concurrency": 2}` -> 200 with the settings.
pub(crate) async fn set(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let b: WorkflowQueueBody = codec.decode_hinted(body, None, WORKFLOW_QUEUE_FORMS)?;
    let queue = b.to_queue();
    api.client().workflow_queues().set(queue.clone()).await?;
    Ok(codec.reply(200, &WorkflowQueueBody::of(&queue)))
}

/// `DELETE /_workflow_queues/{name}` (percent-encoded) -> `{"removed": bool}`.
pub(crate) async fn remove(
    State(api): State<Api>,
    p: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let name = path(p)?;
    let removed = api.client().workflow_queues().remove(&name).await?;
    Ok(Codec::of(&headers).reply(200, &QueueRemovedBody { removed }))
}
