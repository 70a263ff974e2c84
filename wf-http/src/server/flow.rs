//! `/_flow_limits`: list, set and remove the flow limits the store holds (what
//! `client.flow_limits()` and `wf queues` call), so that an operator changes them while the
//! engines run.

use super::body::{Codec, Failure};
use super::messages::path;
use super::Api;
use crate::wire::{flow_kind, FlowLimitBody, FlowRemovedBody, FlowUsageBody, FLOW_LIMIT_FORMS};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use wf_core::FlowScope;

/// `GET /_flow_limits` -> `[{"scope", "concurrency" | "rate"}]`, by scope kind, scope name
/// and limit kind.
pub(crate) async fn list(State(api): State<Api>, headers: HeaderMap) -> Result<Response, Failure> {
    let limits = api.client().flow_limits().list().await?;
    let bodies: Vec<FlowLimitBody> = limits.iter().map(FlowLimitBody::of).collect();
    Ok(Codec::of(&headers).reply(200, &bodies))
}

/// `GET /_flow_limits/usage` -> each limit's body with `running`, `waiting` and a rate's
/// `tokens`, in the order of the list.
pub(crate) async fn usage(State(api): State<Api>, headers: HeaderMap) -> Result<Response, Failure> {
    let usage = api.client().flow_limits().usage().await?;
    let bodies: Vec<FlowUsageBody> = usage.iter().map(FlowUsageBody::of).collect();
    Ok(Codec::of(&headers).reply(200, &bodies))
}

/// `POST /_flow_limits` `{"scope": {"key": "openai"}, "concurrency": 4}` -> 200 with the limit
/// as set (a rate's burst filled in).
pub(crate) async fn set(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let codec = Codec::of(&headers);
    let b: FlowLimitBody = codec.decode_hinted(body, None, FLOW_LIMIT_FORMS)?;
    let limit = b.to_limit().map_err(|e| Failure::invalid_args(e, None))?;
    api.client().flow_limits().set(limit.clone()).await?;
    Ok(codec.reply(200, &FlowLimitBody::of(&limit)))
}

/// `DELETE /_flow_limits/{scope_kind}/{name}/{limit_kind}` (`activity`, `task_queue` or
/// `key`; the name percent-encoded; `concurrency` or `rate`) -> `{"removed": bool}`.
pub(crate) async fn remove(
    State(api): State<Api>,
    p: Result<Path<(String, String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (scope_kind, name, limit_kind) = path(p)?;
    let scope = FlowScope::from_parts(&scope_kind, name).ok_or_else(|| {
        Failure::invalid_args(
            format!(
                "a flow limit's scope is activity, task_queue or key, not {scope_kind:?}: \
                 DELETE /_flow_limits/{{activity|task_queue|key}}/{{name}}/{{concurrency|rate}}"
            ),
            Some("scope_kind".into()),
        )
    })?;
    let kind = flow_kind(&limit_kind).ok_or_else(|| {
        Failure::invalid_args(
            format!(
                "a flow limit is a concurrency or a rate limit, not {limit_kind:?}: \
                 DELETE /_flow_limits/{{activity|task_queue|key}}/{{name}}/{{concurrency|rate}}"
            ),
            Some("limit_kind".into()),
        )
    })?;
    let removed = api.client().flow_limits().remove(scope, kind).await?;
    Ok(Codec::of(&headers).reply(200, &FlowRemovedBody { removed }))
}
