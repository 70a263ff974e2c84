//! Writing to runs: `wf start`, `wf signal`, `wf update`, `wf query`, `wf result`, `wf cancel`,
//! `wf terminate`, `wf pause`, `wf unpause`.
//!
//! Arguments are a JSON array, one element per handler parameter, sent as the MessagePack
//! tuple the handler decodes (objects become maps, which decode into structs by field name).
//! Over `--url` the server decodes them with the handler's types before it accepts the
//! message; over `--db` no workflow code is at hand, so the types are checked only when a
//! worker runs the handler.

use super::{print_json, Ctx};
use crate::exit::{Failure, DECLINED, USAGE};
use serde_json::{json, Value};
use std::time::Duration;
use wf_core::wire::from_payload;
use wf_core::{Payload, StartOptions, UpdateStage};

/// The handler's argument tuple from `ARGS_JSON`.
pub(super) fn args_payload(args_json: &str) -> Result<Payload, Failure> {
    let value: Value = serde_json::from_str(args_json).map_err(|e| {
        Failure::usage(format!(
            "ARGS_JSON is not JSON ({e}); give an array such as '[\"x\", 2]'"
        ))
    })?;
    if !value.is_array() {
        return Err(Failure::usage(format!(
            "ARGS_JSON must be a JSON array of the handler's arguments (e.g. '[{value}]'), not {value}"
        )));
    }
    // A handler without parameters decodes `()`, which MessagePack writes as nil, not as
    // an empty array.
    let payload = match value.as_array() {
        Some(items) if items.is_empty() => Payload::encode(&()),
        _ => wf_http::json::to_payload(&value),
    };
    payload.map_err(|e| Failure::usage(e.to_string()))
}

/// A handler's result as JSON (its bytes as numbers if it is not MessagePack).
pub(super) fn value_json(payload: &Payload) -> Value {
    from_payload(payload)
        .unwrap_or_else(|_| Value::Array(payload.as_bytes().iter().map(|b| (*b).into()).collect()))
}

fn done(ctx: &Ctx<'_>, what: Value, line: String) {
    if ctx.json {
        print_json(&what);
    } else {
        println!("{line}");
    }
}

/// `wf signal ID NAME [ARGS_JSON] [--id X]`.
pub async fn signal(
    ctx: &Ctx<'_>,
    id: &str,
    name: &str,
    args_json: &str,
    signal_id: Option<String>,
) -> Result<(), Failure> {
    let args = args_payload(args_json)?;
    ctx.session
        .client
        .signal_raw(id, name, args, signal_id.clone())
        .await?;
    done(
        ctx,
        json!({"workflow_id": id, "signal": name, "signal_id": signal_id}),
        format!("signal {name} sent to {id}"),
    );
    Ok(())
}

/// A fresh update id, so that a timed-out wait can be resumed with `--id`.
fn fresh_update_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("wf-cli-{}-{nanos:x}", std::process::id())
}

/// `wf update ID NAME [ARGS_JSON] [--id X] [--timeout 30s]`: waits for the handler's value.
pub async fn update(
    ctx: &Ctx<'_>,
    id: &str,
    name: &str,
    args_json: &str,
    update_id: Option<String>,
    timeout: Duration,
) -> Result<(), Failure> {
    let args = args_payload(args_json)?;
    let update_id = update_id.unwrap_or_else(fresh_update_id);
    let client = &ctx.session.client;
    let call = client.update_raw(
        id,
        name,
        args,
        Some(update_id.clone()),
        UpdateStage::Completed,
    );
    let (update_id, value) = match tokio::time::timeout(timeout, call).await {
        Ok(result) => result?,
        Err(_) => {
            return Err(Failure::new(
                DECLINED,
                format!(
                "update {update_id} of {id} did not finish within {timeout:?}; it stays queued: \
                     wait again with `wf update {id} {name} '{args_json}' --id {update_id}`"
            ),
            ))
        }
    };
    let value = value_json(&value);
    done(
        ctx,
        json!({"workflow_id": id, "update": name, "update_id": update_id, "result": value}),
        value.to_string(),
    );
    Ok(())
}

/// `wf query ID NAME [ARGS_JSON] [--at-event N]` (with `--url` only; with `--at-event`, as of
/// that history event, by replay).
pub async fn query(
    ctx: &Ctx<'_>,
    id: &str,
    name: &str,
    args_json: &str,
    at_event: Option<u64>,
) -> Result<(), Failure> {
    if !ctx.session.is_remote() {
        return Err(Failure::new(
            USAGE,
            "queries run the workflow's code, which wf does not have: use --url with a process \
             that serves this workflow type (wf-http)",
        ));
    }
    let args = args_payload(args_json)?;
    let client = &ctx.session.client;
    let value = match at_event {
        Some(n) => client.query_at(id, name, args, n).await?,
        None => client.query_raw(id, name, args).await?,
    };
    let value = value_json(&value);
    if ctx.json {
        let mut out = json!({"workflow_id": id, "query": name, "result": value});
        if let Some(n) = at_event {
            out["at_event"] = json!(n);
        }
        print_json(&out);
    } else {
        println!("{value}");
    }
    Ok(())
}

/// `wf cancel ID [--reason R]`.
pub async fn cancel(ctx: &Ctx<'_>, id: &str, reason: &str) -> Result<(), Failure> {
    ctx.session.client.cancel(id, reason).await?;
    done(
        ctx,
        json!({"workflow_id": id, "cancel_requested": true}),
        format!("cancellation of {id} requested"),
    );
    Ok(())
}

/// `wf terminate ID [--reason R]`.
pub async fn terminate(ctx: &Ctx<'_>, id: &str, reason: &str) -> Result<(), Failure> {
    ctx.session.client.terminate(id, reason).await?;
    done(
        ctx,
        json!({"workflow_id": id, "terminated": true}),
        format!("{id} terminated"),
    );
    Ok(())
}

/// `wf start TYPE ID [INPUT_JSON]`.
pub async fn start(
    ctx: &Ctx<'_>,
    workflow_type: &str,
    id: &str,
    input_json: &str,
    start_delay: Option<std::time::Duration>,
) -> Result<(), Failure> {
    let value: Value = serde_json::from_str(input_json).map_err(|e| {
        Failure::usage(format!(
            "INPUT_JSON is not JSON ({e}); give the workflow's input, e.g. '{{\"name\": \"x\"}}' or 'null'"
        ))
    })?;
    let input = wf_http::json::to_payload(&value).map_err(|e| Failure::usage(e.to_string()))?;
    let run_id = ctx
        .session
        .client
        .start_raw(
            id,
            workflow_type,
            input,
            StartOptions {
                start_delay,
                ..StartOptions::default()
            },
        )
        .await?;
    done(
        ctx,
        json!({"workflow_id": id, "workflow_type": workflow_type, "run_id": run_id}),
        format!("started {id} ({workflow_type}), run {run_id}"),
    );
    Ok(())
}

/// `wf result ID [--wait D]`.
pub async fn result(ctx: &Ctx<'_>, id: &str, wait: Duration) -> Result<(), Failure> {
    let client = &ctx.session.client;
    let Ok(outcome) = tokio::time::timeout(wait, client.result_raw(id)).await else {
        return Err(Failure::from(wf_core::WfError::Timeout(format!(
            "{id} did not close within {wait:?}; wait longer with --wait"
        ))));
    };
    let value = value_json(&outcome?);
    if ctx.json {
        print_json(&json!({"workflow_id": id, "result": value}));
    } else {
        println!("{value}");
    }
    Ok(())
}

/// `wf pause ID [--reason R]`.
pub async fn pause(ctx: &Ctx<'_>, id: &str, reason: &str) -> Result<(), Failure> {
    ctx.session.client.pause(id, reason).await?;
    done(
        ctx,
        json!({"workflow_id": id, "paused": true}),
        format!("{id} paused"),
    );
    Ok(())
}

/// `wf unpause ID`.
pub async fn unpause(ctx: &Ctx<'_>, id: &str) -> Result<(), Failure> {
    ctx.session.client.unpause(id).await?;
    done(
        ctx,
        json!({"workflow_id": id, "paused": false}),
        format!("{id} unpaused"),
    );
    Ok(())
}
