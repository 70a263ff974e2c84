//! Asynchronous activity completion from a shell: `wf activity complete TOKEN [RESULT_JSON]`,
//! `wf activity fail TOKEN MESSAGE [--kind K] [--non-retryable]`, `wf activity heartbeat TOKEN
//! [DETAILS_JSON]`. TOKEN is the string `ActivityContext::task_token` gave the activity.

use super::{print_json, Ctx};
use crate::args::ActivityCommand;
use crate::exit::Failure;
use serde_json::{json, Value};
use wf_core::{ActivityError, ActivityResponse, Payload};

/// A JSON value as the payload a typed decoder reads (`null` is the unit value).
fn value_payload(what: &str, value_json: &str) -> Result<Payload, Failure> {
    let value: Value = serde_json::from_str(value_json).map_err(|e| {
        Failure::usage(format!(
            "{what} is not JSON ({e}); quote strings: '\"approved\"'"
        ))
    })?;
    wf_http::json::to_payload(&value).map_err(|e| Failure::usage(e.to_string()))
}

/// `wf activity ...`.
pub async fn run(ctx: &Ctx<'_>, command: ActivityCommand) -> Result<(), Failure> {
    let (token, response, done) = match command {
        ActivityCommand::Complete { token, result_json } => {
            let result = value_payload("RESULT_JSON", &result_json)?;
            (token, ActivityResponse::Complete(result), "completed")
        }
        ActivityCommand::Fail {
            token,
            message,
            kind,
            non_retryable,
        } => {
            let error = ActivityError {
                kind: kind.unwrap_or_else(|| "retryable".into()),
                message,
                non_retryable,
            };
            (token, ActivityResponse::Fail(error), "failed")
        }
        ActivityCommand::Heartbeat {
            token,
            details_json,
        } => {
            let details = value_payload("DETAILS_JSON", &details_json)?;
            (
                token,
                ActivityResponse::Heartbeat(details),
                "heartbeat recorded",
            )
        }
    };
    ctx.session
        .client
        .respond_activity(&token, response)
        .await?;
    if ctx.json {
        print_json(&json!({ "status": done }));
    } else {
        println!("activity {done}");
    }
    Ok(())
}
