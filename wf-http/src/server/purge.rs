//! `POST /_purge`: retention on demand (what `wf purge --url` calls): one batch of closed runs
//! purged, or counted with `dry_run`.

use super::body::{Codec, Failure};
use super::Api;
use crate::wire::{PurgeBody, PurgeReply};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

/// `POST /_purge` -> `{"runs", "more"}`.
pub(crate) async fn purge(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let b: PurgeBody = codec.decode(body, None)?;
    let report = api.client().purge(b.into_request()).await?;
    let reply = PurgeReply {
        runs: report.runs,
        more: report.more,
    };
    Ok(codec.reply(200, &reply))
}
