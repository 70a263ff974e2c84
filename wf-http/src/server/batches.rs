//! `/_batches`: start, list, describe and cancel batches (an action on every run a filter
//! selects). JSON bodies carry a signal's arguments as a positional array; MessagePack
//! bodies as the encoded tuple; a reset names its point in `"to"` (`first-task` or
//! `last-good-task`), with `"drop_messages"`.

use super::body::{Codec, Failure};
use super::messages::{path, positional};
use super::Api;
use crate::json;
use crate::wire::{BatchBody, NewBatchBody};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;
use wf_core::{BatchDescription, BatchRequest, Payload};

type Body = Result<Bytes, BytesRejection>;
type IdPath = Result<Path<String>, PathRejection>;

/// A description in the codec's shape.
fn reply(codec: Codec, status: u16, d: &BatchDescription) -> Result<Response, Failure> {
    Ok(match codec {
        Codec::Json => codec.reply(status, &BatchBody::of(d, json::from_payload)?),
        Codec::Msgpack => codec.reply(status, &BatchBody::of(d, |p| Ok::<_, Failure>(p.clone()))?),
    })
}

/// The request a body stands for.
fn request<V>(b: NewBatchBody<V>, args: Option<Payload>) -> Result<BatchRequest, Failure> {
    let action = b
        .action
        .into_action(args)
        .map_err(|m| Failure::invalid_args(m, Some("action".into())))?;
    Ok(BatchRequest {
        batch_id: b.batch_id,
        filter: b.filter.into_filter(),
        action,
        reason: b.reason.unwrap_or_default(),
        rate_per_s: b.rate,
    })
}

/// `POST /_batches` -> 201 with the batch described (its `selected` counted).
pub(crate) async fn start(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let request = match codec {
        Codec::Json => {
            let mut b: NewBatchBody<Value> = codec.decode(body, None)?;
            let args = positional(b.action.args.take(), "a batch's signal")?;
            request(b, Some(args))?
        }
        Codec::Msgpack => {
            let mut b: NewBatchBody<Payload> = codec.decode(body, None)?;
            let args = b.action.args.take();
            request(b, args)?
        }
    };
    let d = api.client().batches().start(request).await?;
    reply(codec, 201, &d)
}

/// `GET /_batches`: every batch, newest first.
pub(crate) async fn list(State(api): State<Api>, headers: HeaderMap) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let all = api.client().batches().list().await?;
    match codec {
        Codec::Json => {
            let bodies = all
                .iter()
                .map(|d| BatchBody::of(d, json::from_payload))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(codec.reply(200, &bodies))
        }
        Codec::Msgpack => {
            let bodies = all
                .iter()
                .map(|d| BatchBody::of(d, |p| Ok::<_, Failure>(p.clone())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(codec.reply(200, &bodies))
        }
    }
}

/// `GET /_batches/{id}`.
pub(crate) async fn describe(
    State(api): State<Api>,
    p: IdPath,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let id = path(p)?;
    let d = api.client().batches().describe(&id).await?;
    reply(Codec::of(&headers), 200, &d)
}

/// `POST /_batches/{id}/cancel` -> the batch as it now stands.
pub(crate) async fn cancel(
    State(api): State<Api>,
    p: IdPath,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let id = path(p)?;
    let d = api.client().batches().cancel(&id).await?;
    reply(Codec::of(&headers), 200, &d)
}
