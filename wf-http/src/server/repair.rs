//! Repairing one run (admin): `POST /{type}/runs/{id}/reset`, `.../fork`, `.../resume` and
//! `DELETE /{type}/runs/{id}`. Each records the caller's token role as who did it.

use super::auth::{Caller, Role};
use super::body::{Codec, Failure};
use super::messages::path;
use super::Api;
use crate::wire::{reset_point, RepairBody, RepairReply};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Extension;
use wf_core::{RepairAction, RepairRequest, ResetPoint};

type RunPath = Result<Path<(String, String)>, PathRejection>;
type Body = Result<Bytes, BytesRejection>;
type Who = Option<Extension<Caller>>;

/// `POST /{type}/runs/{id}/reset` `{"to" | "to_event", "drop_messages", "reason"}` -> 200
/// `{"status": "reset", "workflow_id", "run_id"}` (the new run).
pub(crate) async fn reset(
    State(api): State<Api>,
    who: Who,
    p: RunPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let action = |b: &RepairBody| {
        let to = match (b.to.as_deref(), b.to_event) {
            (Some(name), None) => reset_point(name).ok_or_else(|| {
                Failure::invalid_args(
                    format!("to must be \"first-task\" or \"last-good-task\", not {name:?}"),
                    None,
                )
            })?,
            (None, Some(n)) => ResetPoint::Event(n),
            _ => {
                return Err(Failure::invalid_args(
                    "a reset needs one of \"to\" (first-task, last-good-task) or \"to_event\""
                        .into(),
                    None,
                ))
            }
        };
        Ok(RepairAction::Reset {
            to,
            drop_messages: b.drop_messages,
        })
    };
    repair(api, who, p, headers, body, "reset", action).await
}

/// `POST /{type}/runs/{id}/fork` `{"new_workflow_id", "at_event", "reason"}` -> 200
/// `{"status": "forked", "workflow_id", "run_id"}` (the fork's).
pub(crate) async fn fork(
    State(api): State<Api>,
    who: Who,
    p: RunPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let action = |b: &RepairBody| match (&b.new_workflow_id, b.at_event) {
        (Some(new_workflow_id), Some(at_event)) => Ok(RepairAction::Fork {
            new_workflow_id: new_workflow_id.clone(),
            at_event,
        }),
        _ => Err(Failure::invalid_args(
            "a fork needs \"new_workflow_id\" and \"at_event\"".into(),
            None,
        )),
    };
    repair(api, who, p, headers, body, "forked", action).await
}

/// `POST /{type}/runs/{id}/resume` `{"reason"}` (optional) -> 200
/// `{"status": "resumed", "workflow_id", "run_id"}`.
pub(crate) async fn resume(
    State(api): State<Api>,
    who: Who,
    p: RunPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let action = |_: &RepairBody| Ok(RepairAction::Resume);
    repair(api, who, p, headers, body, "resumed", action).await
}

/// `DELETE /{type}/runs/{id}` `{"reason"}` (optional) -> 200
/// `{"status": "deleted", "workflow_id", "run_id"}` (the deleted run).
pub(crate) async fn delete(
    State(api): State<Api>,
    who: Who,
    p: RunPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let action = |_: &RepairBody| Ok(RepairAction::Delete);
    repair(api, who, p, headers, body, "deleted", action).await
}

/// Decodes the body (optional), builds the action, and sends the repair as the caller's role.
async fn repair(
    api: Api,
    who: Who,
    p: RunPath,
    headers: HeaderMap,
    body: Body,
    status: &str,
    action: impl FnOnce(&RepairBody) -> Result<RepairAction, Failure>,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    api.named_type(&ty)?;
    let codec = Codec::of(&headers);
    let b: RepairBody = codec.decode(body, Some(RepairBody::default()))?;
    let action = action(&b)?;
    // No token check configured: the caller is the server's operator, as `/_whoami` says.
    let role = who.map_or(Role::Admin, |Extension(Caller(role))| role);
    let request = RepairRequest::new(id, action)
        .reason(b.reason.unwrap_or_default())
        .identity(format!("http:{}", role.as_str()));
    let report = api.client().repair(request).await?;
    let reply = RepairReply {
        status: status.to_string(),
        workflow_id: report.workflow_id,
        run_id: report.run_id,
    };
    Ok(codec.reply(200, &reply))
}
