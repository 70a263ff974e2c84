//! Worker versioning for operators (what `wf builds` calls): `GET /_builds` counts running
//! runs by build, `POST /_builds/current` makes a build current for a task queue, and
//! `POST /{type}/runs/{id}/move` moves a run to another build.

use super::body::{Codec, Failure};
use super::Api;
use crate::wire::{CurrentBuildBody, MoveToBuildBody};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use std::collections::HashMap;

/// `GET /_builds?task_queue=` -> `[{"build_id", "current_for", "pinned", "auto_upgrade",
/// "not_started"}]`.
pub(crate) async fn list(
    State(api): State<Api>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let queue = query.get("task_queue").filter(|q| !q.is_empty());
    let builds = api.client().build_ids(queue.map(String::as_str)).await?;
    Ok(codec.reply(200, &builds))
}

/// `POST /_builds/current` `{"task_queue", "build_id"}` -> 204.
pub(crate) async fn set_current(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let b: CurrentBuildBody = codec.decode(body, None)?;
    api.client()
        .set_current_build(&b.task_queue, &b.build_id)
        .await?;
    Ok(codec.reply(200, &b))
}

/// `POST /{type}/runs/{id}/move` `{"build_id"}` -> 200 with the body.
pub(crate) async fn move_run(
    State(api): State<Api>,
    Path((_ty, id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let b: MoveToBuildBody = codec.decode(body, None)?;
    api.client().move_to_build(&id, &b.build_id).await?;
    Ok(codec.reply(200, &b))
}
