//! `wf queues ... queue:NAME`: the queues of workflow starts, beside the flow limits in
//! `queues.rs`. `list` adds a section of the queues with settings or runs, `describe` shows one
//! queue's settings with its runs waiting (held) and running (admitted), and `set-limit` /
//! `remove-limit` change one of its two limits, keeping the other (read, changed, written
//! back: two operators changing one queue at once may lose one change).

use super::{print_json, Ctx};
use crate::exit::Failure;
use crate::render::table;
use serde_json::json;
use std::time::Duration;
use wf_core::{QueueUsage, WorkflowQueue};
use wf_http::wire::{QueueUsageBody, WorkflowQueueBody};

/// The queue's settings, for people.
fn settings_text(q: &WorkflowQueue) -> String {
    let mut parts = Vec::new();
    if let Some(n) = q.concurrency {
        parts.push(format!("at most {n} at once"));
    }
    if let Some((limit, period)) = q.rate {
        parts.push(format!("at most {limit} per {period:?}"));
    }
    match parts.is_empty() {
        true => "no limits (admits every start at once)".into(),
        false => parts.join(", "),
    }
}

/// A queue's item in `wf queues list --json`: its usage body, with `"scope": {"queue": NAME}`
/// beside the flow limits' scopes.
pub(super) fn list_item(u: &QueueUsage) -> serde_json::Value {
    let mut item = serde_json::to_value(QueueUsageBody::of(u)).unwrap_or_default();
    if let Some(fields) = item.as_object_mut() {
        fields.insert("scope".into(), json!({ "queue": u.queue.name }));
    }
    item
}

/// The queues' section of `wf queues list`.
pub(super) fn list(ctx: &Ctx<'_>, queues: &[QueueUsage]) {
    if queues.is_empty() {
        println!("no workflow queues");
        return;
    }
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = queues
        .iter()
        .map(|u| {
            vec![
                format!("queue:{}", u.queue.name),
                u.queue.concurrency.map_or_else(dash, |n| n.to_string()),
                u.queue
                    .rate
                    .map_or_else(dash, |(m, per)| format!("{m} per {per:?}")),
                u.waiting.to_string(),
                u.running.to_string(),
            ]
        })
        .collect();
    let header = ["QUEUE", "CONCURRENCY", "RATE", "WAITING", "RUNNING"];
    println!("{}", table(&ctx.style, &header, &rows));
}

/// `wf queues describe queue:NAME`.
pub(super) async fn describe(ctx: &Ctx<'_>, name: &str) -> Result<(), Failure> {
    let u = ctx.session.client.workflow_queues().describe(name).await?;
    if ctx.json {
        print_json(&serde_json::to_value(QueueUsageBody::of(&u)).unwrap_or_default());
        return Ok(());
    }
    let settings = match u.configured {
        true => settings_text(&u.queue),
        false => "no settings (admits every start at once)".into(),
    };
    println!("queue:{name}: {settings}");
    let tokens = u.tokens.map_or_else(|| "-".into(), |t| t.to_string());
    let rows = [vec![u.waiting.to_string(), u.running.to_string(), tokens]];
    println!(
        "{}",
        table(&ctx.style, &["WAITING", "RUNNING", "TOKENS"], &rows)
    );
    Ok(())
}

/// The queue's settings as the store holds them (none: a queue without limits).
async fn current(ctx: &Ctx<'_>, name: &str) -> Result<Option<WorkflowQueue>, Failure> {
    let queues = ctx.session.client.workflow_queues().list().await?;
    Ok(queues.into_iter().find(|q| q.name == name))
}

/// Prints the settings now held.
fn print_settings(ctx: &Ctx<'_>, queue: &WorkflowQueue) {
    if ctx.json {
        print_json(&serde_json::to_value(WorkflowQueueBody::of(queue)).unwrap_or_default());
    } else {
        println!("queue:{}: {}", queue.name, settings_text(queue));
    }
}

/// `wf queues set-limit queue:NAME (--concurrency N | --rate M --per D)`: the other limit
/// stays.
pub(super) async fn set_limit(
    ctx: &Ctx<'_>,
    name: &str,
    concurrency: Option<u32>,
    rate: Option<(u32, Duration)>,
    burst: Option<u32>,
) -> Result<(), Failure> {
    if burst.is_some() {
        return Err(Failure::usage(
            "a queue's rate takes no --burst: after a quiet spell it admits at most its --rate M at once",
        ));
    }
    let mut queue = current(ctx, name)
        .await?
        .unwrap_or_else(|| WorkflowQueue::new(name));
    match (concurrency, rate) {
        (Some(n), _) => queue.concurrency = Some(n),
        (None, Some(rate)) => queue.rate = Some(rate),
        (None, None) => {
            return Err(Failure::usage(
                "give --concurrency N, or --rate M --per DURATION",
            ))
        }
    }
    ctx.session
        .client
        .workflow_queues()
        .set(queue.clone())
        .await?;
    print_settings(ctx, &queue);
    Ok(())
}

/// `wf queues remove-limit queue:NAME (--concurrency | --rate)`: a queue left with neither
/// limit loses its settings.
pub(super) async fn remove_limit(ctx: &Ctx<'_>, name: &str, rate: bool) -> Result<(), Failure> {
    let kind = if rate { "rate" } else { "concurrency" };
    let queues = ctx.session.client.workflow_queues();
    let removed = match current(ctx, name).await? {
        Some(mut queue) if rate && queue.rate.is_some() || !rate && queue.concurrency.is_some() => {
            if rate {
                queue.rate = None;
            } else {
                queue.concurrency = None;
            }
            if queue.rate.is_none() && queue.concurrency.is_none() {
                queues.remove(name).await?;
            } else {
                queues.set(queue).await?;
            }
            true
        }
        _ => false,
    };
    if ctx.json {
        print_json(&json!({ "removed": removed }));
    } else if removed {
        println!("queue:{name}: {kind} limit removed");
    } else {
        println!("queue:{name}: no {kind} limit");
    }
    Ok(())
}
