//! The routes that read or end runs, and the type route: describe, history, list, result and
//! update long polls, cancel, terminate, `GET /{type}`; the answers to an unknown route.

use super::auth::{Caller, Role as TokenRole};
use super::body::{Codec, Failure};
use super::messages::{path, stage};
use super::Api;
use crate::json;
use crate::wire::{
    CountBody, DescriptionBody, HistoryPage, PendingBody, ReasonBody, RunBody, RunsPage, ValueBody,
};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;
use wf_core::{HistoryEvent, Payload, Role, UpdateStage, WorkflowType};

/// History events per page by default, and at most.
const HISTORY_PAGE: usize = 1_000;
const HISTORY_PAGE_MAX: usize = 10_000;
/// Runs per list page by default, and at most.
const LIST_PAGE: usize = 100;
const LIST_PAGE_MAX: usize = 1_000;
/// How long a long poll waits by default, and at most.
const WAIT_DEFAULT_MS: u64 = 20_000;
const WAIT_MAX_MS: u64 = 50_000;

pub(crate) fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, Failure> {
    q.map(|Query(t)| t)
        .map_err(|e| Failure::invalid_args(format!("bad query string: {e}"), None))
}

/// Any other path or method.
pub(crate) async fn no_route() -> Failure {
    Failure::not_found("no such route; see the routes in wf_http::router's documentation".into())
}

/// A known path with another method.
pub(crate) async fn wrong_method() -> Failure {
    Failure::new(
        405,
        crate::errors::ErrorBody::new(
            "method_not_allowed",
            "this route does not take this method; see wf_http::router's documentation",
        ),
    )
}

/// `GET /{type}`: the type's handlers with their parameter names and types, and which roles
/// have a dynamic (catch-all) handler.
pub(crate) async fn describe_type(
    State(api): State<Api>,
    p: Result<Path<String>, PathRejection>,
) -> Result<Response, Failure> {
    let ty = path(p)?;
    let wt = api
        .named_type(&ty)?
        .ok_or_else(|| Failure::not_found("name a workflow type".into()))?;
    Ok(Codec::Json.reply(200, &type_json(wt)))
}

pub(crate) fn type_json(wt: &WorkflowType) -> Value {
    let of = |role: Role| -> Vec<Value> {
        wt.handlers
            .iter()
            .filter(|h| h.role == role)
            .map(|h| {
                let params: Vec<Value> = h
                    .params
                    .iter()
                    .map(|p| json!({ "name": p.name, "type": p.ty }))
                    .collect();
                let mut v = json!({ "name": h.name, "params": params });
                if role != Role::Signal {
                    v["returns"] = json!(h.returns);
                }
                if role == Role::Update {
                    v["validated"] = json!(h.validated);
                }
                v
            })
            .collect()
    };
    json!({
        "name": wt.name,
        "input": wt.input,
        "output": wt.output,
        "signals": of(Role::Signal),
        "queries": of(Role::Query),
        "updates": of(Role::Update),
        "dynamic": {
            "signal": wt.dynamic.signal,
            "query": wt.dynamic.query,
            "update": wt.dynamic.update,
            "update_validated": wt.dynamic.update_validated,
        },
    })
}

type RunPath = Result<Path<(String, String)>, PathRejection>;

/// `GET /{type}/runs/{id}`.
pub(crate) async fn describe(
    State(api): State<Api>,
    p: RunPath,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    api.named_type(&ty)?;
    let d = api.client().describe(&id).await?;
    let codec = Codec::of(&headers);
    match codec {
        Codec::Json => {
            let body = DescriptionBody::of(&d, json::from_payload)?;
            Ok(codec.reply(200, &body))
        }
        Codec::Msgpack => {
            let body = DescriptionBody::of(&d, |p| Ok::<_, Failure>(p.clone()))?;
            Ok(codec.reply(200, &body))
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct HistoryParams {
    from: Option<u64>,
    limit: Option<usize>,
    run_id: Option<String>,
}

/// `GET /{type}/runs/{id}/history?from=&limit=&run_id=`: events with ids from `from` on.
pub(crate) async fn history(
    State(api): State<Api>,
    p: RunPath,
    q: Result<Query<HistoryParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    let q = query(q)?;
    api.named_type(&ty)?;
    let events = match &q.run_id {
        Some(run_id) => api.client().run_history(run_id, &id).await?,
        None => api.client().history(&id).await?,
    };
    let from = q.from.unwrap_or(1);
    let limit = q.limit.unwrap_or(HISTORY_PAGE).clamp(1, HISTORY_PAGE_MAX);
    let mut page: Vec<HistoryEvent> = events
        .into_iter()
        .filter(|e| e.event_id >= from)
        .take(limit + 1)
        .collect();
    let next = if page.len() > limit {
        page.pop().map(|e| e.event_id)
    } else {
        None
    };
    let codec = Codec::of(&headers);
    match codec {
        Codec::Json => {
            let events = page.iter().map(event_json).collect::<Result<Vec<_>, _>>()?;
            Ok(codec.reply(200, &HistoryPage { events, next }))
        }
        Codec::Msgpack => Ok(codec.reply(200, &HistoryPage { events: page, next })),
    }
}

/// `{"event_id", "time_ms", "type", "attributes"}`, payloads shown as the values they hold,
/// the event's durations as milliseconds (`start_to_close_ms`).
fn event_json(e: &HistoryEvent) -> Result<Value, Failure> {
    let attributes = wf_core::wire::event_attributes(&e.kind)?;
    let attributes = crate::durations::event_in_ms(&e.kind, attributes);
    Ok(json!({
        "event_id": e.event_id,
        "time_ms": e.time_ms,
        "type": e.kind.name(),
        "attributes": attributes,
    }))
}

/// `GET /{type}/runs?status=&latest=&search=KEY=VALUE&started_after_ms=&started_before_ms=
/// &closed_after_ms=&closed_before_ms=&limit=&cursor=` (see `list_query`): newest first. The
/// cursor is the run id of the last run of the previous page (`next_cursor`).
pub(crate) async fn list(
    State(api): State<Api>,
    p: Result<Path<String>, PathRejection>,
    q: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let ty = path(p)?;
    let pairs = query(q)?;
    let bad = |m: String| Failure::invalid_args(m, None);
    let mut filter = crate::list_query::decode(&pairs).map_err(bad)?;
    filter.workflow_type = api.named_type(&ty)?.map(|wt| wt.name.to_string());
    let mut limit = LIST_PAGE;
    for (name, value) in &pairs {
        match name.as_str() {
            "limit" => {
                limit = value
                    .parse::<usize>()
                    .map_err(|_| bad(format!("limit must be a count, not {value:?}")))?
            }
            "cursor" if !value.is_empty() => filter.after_run_id = Some(value.clone()),
            _ => {}
        }
    }
    let limit = limit.clamp(1, LIST_PAGE_MAX);
    filter.limit = limit.saturating_add(1);
    let mut runs = api.client().list(filter).await?;
    let more = runs.len() > limit;
    runs.truncate(limit);
    let next_cursor = more
        .then(|| runs.last().map(|r| r.run_id.clone()))
        .flatten();
    let codec = Codec::of(&headers);
    match codec {
        Codec::Json => {
            let runs = runs
                .iter()
                .map(|r| RunBody::of(r, json::from_payload))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(codec.reply(200, &RunsPage { runs, next_cursor }))
        }
        Codec::Msgpack => {
            let runs = runs
                .iter()
                .map(|r| RunBody::of(r, |p| Ok::<_, Failure>(p.clone())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(codec.reply(200, &RunsPage { runs, next_cursor }))
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WaitParams {
    wait_ms: Option<u64>,
    wait: Option<String>,
}

fn wait_of(q: &WaitParams) -> Duration {
    Duration::from_millis(q.wait_ms.unwrap_or(WAIT_DEFAULT_MS).min(WAIT_MAX_MS))
}

/// `GET /{type}/runs/{id}/result?wait_ms=`: the result once the run (and the runs it
/// continued as) completed; 202 `{"status": "running"}` when the wait ran out first.
pub(crate) async fn result(
    State(api): State<Api>,
    p: RunPath,
    q: Result<Query<WaitParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    let q = query(q)?;
    let codec = Codec::of(&headers);
    let wt = match codec {
        Codec::Json => Some(api.run_type(&ty, &id).await?),
        Codec::Msgpack => api.named_type(&ty)?,
    };
    let outcome = tokio::time::timeout(wait_of(&q), api.client().result_raw(&id)).await;
    let Ok(value) = outcome else {
        return Ok(codec.reply(
            202,
            &PendingBody {
                status: "running".into(),
            },
        ));
    };
    let value = value?;
    match (codec, wt) {
        (Codec::Json, Some(wt)) => {
            let value = json::from_payload(&wt.output_with_names(&value)?)?;
            Ok(codec.reply(
                200,
                &ValueBody {
                    value: Some(value),
                    update_id: None,
                },
            ))
        }
        _ => Ok(codec.reply(
            200,
            &ValueBody {
                value: Some(value),
                update_id: None,
            },
        )),
    }
}

/// `GET /{type}/runs/{id}/updates/{update_id}?wait=&wait_ms=`: an update sent earlier, once
/// it reached `wait` (`completed` by default); 202 `{"status": "pending"}` when the wait ran
/// out first.
pub(crate) async fn wait_update(
    State(api): State<Api>,
    p: Result<Path<(String, String, String)>, PathRejection>,
    q: Result<Query<WaitParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id, update_id) = path(p)?;
    let q = query(q)?;
    api.named_type(&ty)?;
    let stage = stage(q.wait.as_deref())?;
    let codec = Codec::of(&headers);
    let wait = api.client().wait_update(&id, &update_id, stage);
    let Ok(value) = tokio::time::timeout(wait_of(&q), wait).await else {
        return Ok(codec.reply(
            202,
            &PendingBody {
                status: "pending".into(),
            },
        ));
    };
    let value = value?;
    let update_id = Some(update_id);
    match codec {
        // The update's name is not known here: the value as encoded (structs by position).
        Codec::Json => {
            let value = (stage == UpdateStage::Completed)
                .then(|| json::from_payload(&value))
                .transpose()?;
            Ok(codec.reply(200, &ValueBody { value, update_id }))
        }
        Codec::Msgpack => Ok(codec.reply(
            200,
            &ValueBody::<Payload> {
                value: Some(value),
                update_id,
            },
        )),
    }
}

/// `GET /_count?type=&status=&latest=&search=KEY=VALUE&started_after_ms=...&limit=&cursor=`
/// (the list's filter, with the type as a parameter) -> 200 `{"count": N}`.
pub(crate) async fn count(
    State(api): State<Api>,
    q: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let pairs = query(q)?;
    let bad = |m: String| Failure::invalid_args(m, None);
    let mut filter = crate::list_query::decode(&pairs).map_err(bad)?;
    for (name, value) in &pairs {
        match name.as_str() {
            "type" if !value.is_empty() => {
                filter.workflow_type = api.named_type(value)?.map(|wt| wt.name.to_string());
            }
            "limit" => {
                filter.limit = value
                    .parse::<usize>()
                    .map_err(|_| bad(format!("limit must be a count, not {value:?}")))?
            }
            "cursor" if !value.is_empty() => filter.after_run_id = Some(value.clone()),
            _ => {}
        }
    }
    let count = api.client().count(filter).await?;
    Ok(Codec::of(&headers).reply(200, &CountBody { count }))
}

/// `POST /{type}/runs/{id}/pause` (body `{"reason"}`, optional) -> 200 `{"status": "paused"}`.
/// The pause records the caller's token role (`admin` when the server checks no token).
pub(crate) async fn pause(
    State(api): State<Api>,
    p: RunPath,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    api.named_type(&ty)?;
    let codec = Codec::of(&headers);
    let b: ReasonBody = codec.decode(body, Some(ReasonBody::default()))?;
    let role = caller.map_or(TokenRole::Admin, |Extension(Caller(role))| role);
    let reason = b.reason.as_deref().unwrap_or("");
    api.client()
        .transport()
        .pause(&id, reason, role.as_str())
        .await?;
    Ok(codec.reply(200, &json!({ "status": "paused" })))
}

/// `POST /{type}/runs/{id}/unpause` -> 200 `{"status": "unpaused"}`.
pub(crate) async fn unpause(
    State(api): State<Api>,
    p: RunPath,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    api.named_type(&ty)?;
    api.client().unpause(&id).await?;
    Ok(Codec::of(&headers).reply(200, &json!({ "status": "unpaused" })))
}

/// How a run is ended from outside.
#[derive(Clone, Copy)]
enum Ending {
    Cancel,
    Terminate,
}

/// `POST /{type}/runs/{id}/cancel` -> 202 `{"status": "cancel_requested"}`.
pub(crate) async fn cancel(
    State(api): State<Api>,
    p: RunPath,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    end(api, p, headers, body, Ending::Cancel).await
}

/// `POST /{type}/runs/{id}/terminate` -> 200 `{"status": "terminated"}`.
pub(crate) async fn terminate(
    State(api): State<Api>,
    p: RunPath,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Failure> {
    end(api, p, headers, body, Ending::Terminate).await
}

/// Cancels or terminates with the body's reason (the body is optional).
async fn end(
    api: Api,
    p: RunPath,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
    ending: Ending,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    api.named_type(&ty)?;
    let codec = Codec::of(&headers);
    let b: ReasonBody = codec.decode(body, Some(ReasonBody::default()))?;
    let client = api.client();
    match ending {
        Ending::Cancel => {
            let reason = b.reason.as_deref().unwrap_or("cancelled over HTTP");
            client.cancel(&id, reason).await?;
            Ok(codec.reply(202, &json!({ "status": "cancel_requested" })))
        }
        Ending::Terminate => {
            let reason = b.reason.as_deref().unwrap_or("terminated over HTTP");
            client.terminate(&id, reason).await?;
            Ok(codec.reply(200, &json!({ "status": "terminated" })))
        }
    }
}
