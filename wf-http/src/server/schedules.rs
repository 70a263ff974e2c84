//! `/_schedules`: create, describe, list, pause, unpause, trigger and delete schedules (the
//! remote client's schedule calls; JSON works too, in serde's shape of the spec types).

use super::body::{Codec, Failure};
use super::messages::path;
use super::Api;
use crate::wire::{NewScheduleBody, NoteBody, ScheduleBody};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::json;
use wf_core::client::{NewSchedule, ScheduleChange};

type Body = Result<Bytes, BytesRejection>;
type IdPath = Result<Path<String>, PathRejection>;

/// `POST /_schedules/{id}` -> 201.
pub(crate) async fn create(
    State(api): State<Api>,
    p: IdPath,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let id = path(p)?;
    let codec = Codec::of(&headers);
    let b: NewScheduleBody = codec.decode(body, None)?;
    let schedule = NewSchedule {
        spec: b.spec,
        action: b.action,
        policies: b.policies,
    };
    api.client()
        .transport()
        .create_schedule(&id, schedule)
        .await?;
    Ok(codec.reply(201, &json!({ "schedule_id": id })))
}

/// `GET /_schedules/{id}`.
pub(crate) async fn describe(
    State(api): State<Api>,
    p: IdPath,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let id = path(p)?;
    let d = api.client().transport().describe_schedule(&id).await?;
    Ok(Codec::of(&headers).reply(200, &ScheduleBody::of(&d)))
}

/// `GET /_schedules`.
pub(crate) async fn list(State(api): State<Api>, headers: HeaderMap) -> Result<Response, Failure> {
    let all = api.client().transport().list_schedules().await?;
    let bodies: Vec<ScheduleBody> = all.iter().map(ScheduleBody::of).collect();
    Ok(Codec::of(&headers).reply(200, &bodies))
}

/// `POST /_schedules/{id}/{pause|unpause|trigger}`.
pub(crate) async fn change(
    State(api): State<Api>,
    p: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Failure> {
    let (id, action) = path(p)?;
    let codec = Codec::of(&headers);
    let b: NoteBody = codec.decode(body, Some(NoteBody::default()))?;
    let note = b.note.unwrap_or_default();
    let change = match action.as_str() {
        "pause" => ScheduleChange::Pause(note),
        "unpause" => ScheduleChange::Unpause(note),
        "trigger" => ScheduleChange::Trigger,
        other => {
            return Err(Failure::not_found(format!(
                "a schedule takes pause, unpause or trigger, not {other:?}"
            )))
        }
    };
    api.client()
        .transport()
        .change_schedule(&id, change)
        .await?;
    Ok(codec.reply(200, &json!({ "schedule_id": id })))
}

/// `DELETE /_schedules/{id}`.
pub(crate) async fn delete(
    State(api): State<Api>,
    p: IdPath,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let id = path(p)?;
    api.client().transport().delete_schedule(&id).await?;
    Ok(Codec::of(&headers).reply(200, &json!({ "schedule_id": id })))
}
