//! The routes that write or ask a run: start, signal, update, query. JSON arguments are
//! checked against the handler's parameters (a bad one is a 400 naming it); MessagePack
//! arguments go to the engine as they are, which checks them itself.

use super::body::{Codec, Failure};
use super::Api;
use crate::json;
use crate::suggest;
use crate::wire::{
    QueryBody, RetryBody, SignalBody, StartBody, StartedBody, UpdateBody, ValueBody,
};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;
use std::time::Duration;
use wf_core::client::{SignalRequest, UpdateRequest};
use wf_core::wire::new_id;
use wf_core::Memo;
use wf_core::{
    HandlerInfo, IdConflictPolicy, IdReusePolicy, Payload, Role, StartOptions, UpdateStage,
    WfError, WorkflowType,
};

type Body = Result<Bytes, BytesRejection>;

/// Path parameters, or a 400 in our error shape.
pub(crate) fn path<T>(p: Result<Path<T>, PathRejection>) -> Result<T, Failure> {
    p.map(|Path(t)| t)
        .map_err(|e| Failure::invalid_args(format!("bad path: {e}"), None))
}

/// `POST /{type}/runs`.
pub(crate) async fn start(
    State(api): State<Api>,
    p: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let ty = path(p)?;
    let codec = Codec::of(&headers);
    let wt = api
        .named_type(&ty)?
        .ok_or_else(|| Failure::not_found(format!("start a run of a named type, not {ty:?}")))?;
    let (b, input, memo) = match codec {
        Codec::Json => {
            let b: StartBody<Value> = codec.decode(body, None)?;
            let input = b.input.clone().unwrap_or(Value::Null);
            let parts = payloads(b, Value::Null, |v| Ok(json::to_payload(&v)?))?;
            check_input(wt, &input, &parts.1)?;
            parts
        }
        Codec::Msgpack => {
            let b: StartBody<Payload> = codec.decode(body, None)?;
            payloads(b, Payload::encode(&())?, Ok)?
        }
    };
    let StartBody {
        id,
        conflict,
        task_queue,
        id_reuse,
        request_id,
        messages,
        execution_timeout_ms,
        run_timeout_ms,
        retry_policy,
        start_delay_ms,
        debounce_key,
        debounce_window_ms,
        debounce_max_ms,
        queue,
        queue_priority,
        dedupe_id,
        fairness_key,
        fairness_weight,
        ..
    } = b;
    let debounce = match (debounce_key, debounce_window_ms) {
        (Some(key), Some(window)) => Some(wf_core::Debounce {
            key,
            window: Duration::from_millis(window),
            max_wait: debounce_max_ms.map(Duration::from_millis),
        }),
        (None, None) => None,
        _ => {
            return Err(Failure::invalid_args(
                "a debounced start gives both debounce_key and debounce_window_ms".into(),
                None,
            ))
        }
    };
    let options = StartOptions {
        id_conflict: conflict_policy(conflict.as_deref())?,
        id_reuse: reuse_policy(id_reuse.as_deref())?,
        task_queue,
        request_id,
        memo,
        execution_timeout: execution_timeout_ms.map(Duration::from_millis),
        run_timeout: run_timeout_ms.map(Duration::from_millis),
        retry_policy: retry_policy.map(RetryBody::into_policy),
        start_delay: start_delay_ms.map(Duration::from_millis),
        debounce,
        queue,
        queue_priority: queue_priority.unwrap_or(0),
        dedupe_id,
        fairness_key,
        fairness_weight,
    };
    let started = api
        .client()
        .transport()
        .start(wf_core::client::StartRequest {
            workflow_id: id.clone(),
            // The path's name: the type's own, or one a dynamic workflow type runs.
            workflow_type: ty,
            input,
            options,
            messages,
        })
        .await?;
    let status = if started.started { 201 } else { 200 };
    Ok(codec.reply(
        status,
        &StartedBody {
            // A debounced start answers the waiting run's workflow id.
            workflow_id: if started.workflow_id.is_empty() {
                id
            } else {
                started.workflow_id
            },
            run_id: started.run_id,
            started: started.started,
        },
    ))
}

/// JSON input that does not decode as the type's input is a 400 before anything is stored.
/// A start body's input (`absent` when it has none) and memo values as payloads, each
/// converted by `to_payload` (JSON's values are encoded; MessagePack's already are), and the
/// rest of the body.
fn payloads<V>(
    mut b: StartBody<V>,
    absent: V,
    to_payload: impl Fn(V) -> Result<Payload, Failure>,
) -> Result<(StartBody<()>, Payload, Memo), Failure> {
    let input = to_payload(b.input.take().unwrap_or(absent))?;
    let memo = std::mem::take(&mut b.memo)
        .into_iter()
        .map(|(k, v)| Ok((k, to_payload(v)?)))
        .collect::<Result<_, Failure>>()?;
    Ok((b.without_input(), input, memo))
}

fn check_input(wt: &WorkflowType, json_input: &Value, input: &Payload) -> Result<(), Failure> {
    if wt.check_input(input).is_ok() {
        return Ok(());
    }
    // The error again, in JSON terms.
    match json::check_input(wt, json_input) {
        Ok(_) => Ok(()),
        Err(e) => Err(Failure::invalid_args(e.message, None)),
    }
}

fn conflict_policy(s: Option<&str>) -> Result<IdConflictPolicy, Failure> {
    match s {
        None | Some("fail") => Ok(IdConflictPolicy::Fail),
        Some("use_existing") => Ok(IdConflictPolicy::UseExisting),
        Some("terminate_existing") => Ok(IdConflictPolicy::TerminateExisting),
        Some(other) => Err(Failure::invalid_args(
            format!("conflict must be fail, use_existing or terminate_existing, not {other:?}"),
            None,
        )),
    }
}

/// JSON arguments for the handler `name` of `role`: checked against its parameters, or, for
/// a name only the type's dynamic handler takes, positional (that handler decodes them).
fn handler_args(
    wt: &WorkflowType,
    name: &str,
    role: Role,
    json_args: Option<&Value>,
) -> Result<Payload, Failure> {
    if wt.handler(name, role).is_none() && wt.dynamic.has(role) {
        return positional(json_args.cloned(), "a dynamic handler");
    }
    args(handler(wt, name, role)?, json_args)
}

fn reuse_policy(s: Option<&str>) -> Result<IdReusePolicy, Failure> {
    match s {
        None => Ok(IdReusePolicy::default()),
        Some(s) => IdReusePolicy::parse(s).ok_or_else(|| {
            Failure::invalid_args(
                format!(
                    "id_reuse must be allow_duplicate, allow_duplicate_failed_only or \
                     reject_duplicate, not {s:?}"
                ),
                None,
            )
        }),
    }
}

/// The handler `name` of `role`, or a 404 that lists the ones there are.
fn handler<'t>(wt: &'t WorkflowType, name: &str, role: Role) -> Result<&'t HandlerInfo, Failure> {
    wt.handler(name, role).ok_or_else(|| {
        let names: Vec<&str> = wt
            .handlers
            .iter()
            .filter(|h| h.role == role)
            .map(|h| h.name)
            .collect();
        let has = if names.is_empty() {
            format!("{} has no {role} handlers", wt.name)
        } else {
            format!("{} has {}: {}", wt.name, role.plural(), names.join(", "))
        };
        Failure::from(WfError::Unknown {
            kind: role.as_str(),
            name: name.to_string(),
            hint: suggest::with_suggestion(has, name, names.iter().copied()),
        })
    })
}

/// JSON arguments as the handler's tuple, or a 400 naming the parameter.
fn args(h: &HandlerInfo, args: Option<&Value>) -> Result<Payload, Failure> {
    json::args_payload(h, args).map_err(|e| match e.too_large {
        Some(too_large) => Failure::from(too_large),
        None => Failure::invalid_args(e.message, e.param),
    })
}

/// Encoded arguments, `()` when absent.
fn raw_args(args: Option<Payload>) -> Result<Payload, Failure> {
    match args {
        Some(a) => Ok(a),
        None => Ok(Payload::encode(&())?),
    }
}

/// A value returned by a handler, as JSON (structs as the handler encoded them: by position
/// when it is Rust code's, arrays).
fn value_json(value: &Payload) -> Result<Value, Failure> {
    Ok(json::from_payload(value)?)
}

/// `POST /{type}/runs/{id}/signal` -> 202 `{"status": "delivered" | "buffered"}`; a JSON
/// answer adds `"handler"` (whether a handler of the type takes the name) and, when none
/// does, a `"hint"`.
pub(crate) async fn signal(
    State(api): State<Api>,
    p: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    let codec = Codec::of(&headers);
    let (name, payload, signal_id, handler) = match codec {
        Codec::Json => {
            let b: SignalBody<Value> = codec.decode(body, None)?;
            let wt = api.run_type(&ty, &id).await?;
            let payload = match wt.handler(&b.name, Role::Signal) {
                Some(h) => args(h, b.args.as_ref())?,
                // No handler (or the dynamic one): kept for `ctx.wait_for_signal` (positional
                // arguments).
                None => positional(b.args, "a signal without a handler")?,
            };
            let handled = wt.handler(&b.name, Role::Signal).is_some() || wt.dynamic.signal;
            let hint = (!handled).then(|| no_handler_hint(wt, &b.name));
            (b.name, payload, b.signal_id, Some((handled, hint)))
        }
        Codec::Msgpack => {
            let b: SignalBody<Payload> = codec.decode(body, None)?;
            (b.name, raw_args(b.args)?, b.signal_id, None)
        }
    };
    // The engine says whether a handler takes it or it waits in history for
    // `ctx.wait_for_signal` (or a later version of the code).
    let status = api
        .client()
        .send_signal(SignalRequest {
            workflow_id: &id,
            name: &name,
            args: payload,
            signal_id,
            handled: None,
        })
        .await?;
    let mut answer = serde_json::json!({ "status": status.as_str() });
    // JSON callers learn whether a handler of the type takes the name (a typo is buffered
    // too, as it may be meant for `ctx.wait_for_signal` or a later version of the code).
    if let Some((handled, hint)) = handler {
        answer["handler"] = Value::Bool(handled);
        if let Some(hint) = hint {
            answer["hint"] = Value::String(hint);
        }
    }
    Ok(codec.reply(202, &answer))
}

/// What a JSON caller is told of a signal no handler of `wt` takes.
fn no_handler_hint(wt: &WorkflowType, name: &str) -> String {
    let names = wt
        .handlers
        .iter()
        .filter(|h| h.role == Role::Signal)
        .map(|h| h.name);
    let guess =
        suggest::nearest(name, names).map_or(".".to_string(), |k| format!("; did you mean {k:?}?"));
    format!(
        "{} has no signal handler named {name:?}{guess} It is kept and delivered if a \
         handler for it exists later (or read by ctx.wait_for_signal).",
        wt.name
    )
}

/// Arguments as a JSON array, encoded as the tuple a Rust sender would send; `what` names
/// the receiver in the error.
pub(crate) fn positional(args: Option<Value>, what: &str) -> Result<Payload, Failure> {
    let tuple = match args {
        None | Some(Value::Null) => return Ok(Payload::encode(&())?),
        Some(Value::Array(a)) if a.is_empty() => return Ok(Payload::encode(&())?),
        Some(a @ Value::Array(_)) => a,
        Some(_) => {
            return Err(Failure::invalid_args(
                format!("{what} takes its arguments as an array"),
                None,
            ))
        }
    };
    Ok(json::to_payload(&tuple)?)
}

/// `POST /{type}/runs/{id}/update` -> 200 `{"value", "update_id"}`.
pub(crate) async fn update(
    State(api): State<Api>,
    p: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    let codec = Codec::of(&headers);
    let (name, payload, update_id, wait, timeout_ms) = match codec {
        Codec::Json => {
            let b: UpdateBody<Value> = codec.decode(body, None)?;
            let wt = api.run_type(&ty, &id).await?;
            let payload = handler_args(wt, &b.name, Role::Update, b.args.as_ref())?;
            (b.name, payload, b.update_id, b.wait, b.timeout_ms)
        }
        Codec::Msgpack => {
            let b: UpdateBody<Payload> = codec.decode(body, None)?;
            let payload = raw_args(b.args)?;
            (b.name, payload, b.update_id, b.wait, b.timeout_ms)
        }
    };
    let stage = stage(wait.as_deref())?;
    // The engine waits at most `timeout_ms` (else its own default) and answers `Timeout` with
    // the update still queued. With a timeout of its own the update gets its id here, so that
    // the 504 names the id to ask again with.
    let update_id = match timeout_ms {
        Some(_) => Some(update_id.unwrap_or_else(new_id)),
        None => update_id,
    };
    let known_id = update_id.clone();
    let sent = api
        .client()
        .send_update(UpdateRequest {
            workflow_id: &id,
            name: &name,
            args: payload,
            update_id,
            stage,
            timeout: timeout_ms.map(Duration::from_millis),
        })
        .await;
    let (update_id, value) = match sent {
        Ok((update_id, value)) => (
            update_id,
            (stage == UpdateStage::Completed).then_some(value),
        ),
        Err(e @ WfError::Timeout(_)) => {
            let mut failure = Failure::from(e);
            if let Some(update_id) = &known_id {
                failure.set_update_id(update_id);
            }
            return Err(failure);
        }
        Err(e) => return Err(e.into()),
    };
    match codec {
        Codec::Json => {
            let value = value.map(|v| value_json(&v)).transpose()?;
            Ok(codec.reply(
                200,
                &ValueBody {
                    value,
                    update_id: Some(update_id),
                },
            ))
        }
        Codec::Msgpack => Ok(codec.reply(
            200,
            &ValueBody {
                value,
                update_id: Some(update_id),
            },
        )),
    }
}

/// The stage an update call waits for: `completed` (the default), `accepted` or `admitted`
/// (durably recorded, before its validator ran).
pub(crate) fn stage(wait: Option<&str>) -> Result<UpdateStage, Failure> {
    match wait {
        None | Some("completed") => Ok(UpdateStage::Completed),
        Some("accepted") => Ok(UpdateStage::Accepted),
        Some("admitted") => Ok(UpdateStage::Admitted),
        Some(other) => Err(Failure::invalid_args(
            format!("wait must be completed, accepted or admitted, not {other:?}"),
            None,
        )),
    }
}

/// `?at_event=N` on the query route: answer as of history event N (by replay).
#[derive(serde::Deserialize)]
pub(crate) struct QueryAt {
    at_event: Option<u64>,
}

/// `POST /{type}/runs/{id}/query[?at_event=N]` -> 200 `{"value"}`; with `at_event`, the
/// answer is the state as of that history event, rebuilt by replay (400 `invalid_argument`
/// when N is outside the history).
pub(crate) async fn query(
    State(api): State<Api>,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<QueryAt>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    let at = q
        .map(|Query(q)| q.at_event)
        .map_err(|e| Failure::invalid_args(format!("bad query string: {e}"), None))?;
    let client = api.client();
    let run = id.as_str();
    let ask = |name: String, payload: Payload| async move {
        match at {
            Some(n) => client.query_at(run, &name, payload, n).await,
            None => client.query_raw(run, &name, payload).await,
        }
    };
    let codec = Codec::of(&headers);
    match codec {
        Codec::Json => {
            let b: QueryBody<Value> = codec.decode(body, None)?;
            let wt = api.run_type(&ty, &id).await?;
            let payload = handler_args(wt, &b.name, Role::Query, b.args.as_ref())?;
            let value = ask(b.name, payload).await?;
            let value = Some(value_json(&value)?);
            Ok(codec.reply(
                200,
                &ValueBody {
                    value,
                    update_id: None,
                },
            ))
        }
        Codec::Msgpack => {
            let b: QueryBody<Payload> = codec.decode(body, None)?;
            let value = ask(b.name, raw_args(b.args)?).await?;
            Ok(codec.reply(
                200,
                &ValueBody {
                    value: Some(value),
                    update_id: None,
                },
            ))
        }
    }
}
