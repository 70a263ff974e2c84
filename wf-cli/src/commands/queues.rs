//! `wf queues`: the flow limits the store holds on activity attempts, and its queues of
//! workflow starts (`queue:NAME`, in `workflow_queues.rs`). `list` shows both, `describe` one
//! scope's limits with the attempts running and waiting under each (or one queue's settings
//! and runs); `set-limit` and `remove-limit` change them while the engines run (new attempts
//! obey the change from the engines' next poll, a queue from their next admission pass). Over
//! `--db`, `--postgres` or `--url` alike.

use super::workflow_queues;
use super::{print_json, Ctx};
use crate::args::{QueueTarget, QueuesCommand};
use crate::exit::Failure;
use crate::render::table;
use serde_json::json;
use wf_core::{FlowKind, FlowLimit, FlowRule, FlowScope, FlowUsage, QueueUsage};
use wf_http::wire::{FlowLimitBody, FlowUsageBody};

/// `activity:NAME` and so on, as [`parse_scope`](crate::args::parse_scope) reads it.
fn scope_text(scope: &FlowScope) -> String {
    let kind = match scope {
        FlowScope::Activity(_) => "activity",
        FlowScope::TaskQueue(_) => "task-queue",
        FlowScope::Key(_) => "key",
    };
    format!("{kind}:{}", scope.name())
}

/// `wf queues list | describe | set-limit | remove-limit`.
pub async fn run(ctx: &Ctx<'_>, command: QueuesCommand) -> Result<(), Failure> {
    let limits = ctx.session.client.flow_limits();
    match command {
        QueuesCommand::List => {
            let queues = ctx.session.client.workflow_queues().usage().await?;
            list(ctx, limits.list().await?, &queues)
        }
        QueuesCommand::Describe {
            target: QueueTarget::Workflow(name),
        } => workflow_queues::describe(ctx, &name).await,
        QueuesCommand::SetLimit {
            target: QueueTarget::Workflow(name),
            concurrency,
            rate,
            per,
            burst,
        } => workflow_queues::set_limit(ctx, &name, concurrency, rate.zip(per), burst).await,
        QueuesCommand::RemoveLimit {
            target: QueueTarget::Workflow(name),
            rate,
            ..
        } => workflow_queues::remove_limit(ctx, &name, rate).await,
        QueuesCommand::Describe {
            target: QueueTarget::Flow(scope),
        } => {
            let usage: Vec<FlowUsage> = limits
                .usage()
                .await?
                .into_iter()
                .filter(|u| u.limit.scope == scope)
                .collect();
            describe(ctx, &scope, &usage)
        }
        QueuesCommand::SetLimit {
            target: QueueTarget::Flow(scope),
            concurrency,
            rate,
            per,
            burst,
        } => {
            let limit = match (concurrency, rate, per) {
                (Some(n), _, _) => FlowLimit::concurrency(scope, n),
                (None, Some(m), Some(per)) => {
                    let limit = FlowLimit::rate(scope, m, per);
                    match burst {
                        Some(b) => limit.burst(b),
                        None => limit,
                    }
                }
                _ => {
                    return Err(Failure::usage(
                        "give --concurrency N, or --rate M --per DURATION [--burst B]",
                    ))
                }
            };
            limits.set(limit.clone()).await?;
            if ctx.json {
                print_json(&serde_json::to_value(FlowLimitBody::of(&limit)).unwrap_or_default());
            } else {
                println!("{}: {}", scope_text(&limit.scope), rule_text(&limit.rule));
            }
            Ok(())
        }
        QueuesCommand::RemoveLimit {
            target: QueueTarget::Flow(scope),
            rate,
            ..
        } => {
            let kind = if rate {
                FlowKind::Rate
            } else {
                FlowKind::Concurrency
            };
            let removed = limits.remove(scope.clone(), kind).await?;
            if ctx.json {
                print_json(&json!({ "removed": removed }));
            } else if removed {
                println!("{}: {} limit removed", scope_text(&scope), kind.as_str());
            } else {
                println!("{}: no {} limit", scope_text(&scope), kind.as_str());
            }
            Ok(())
        }
    }
}

/// What a rule allows, for people.
fn rule_text(rule: &FlowRule) -> String {
    match rule {
        FlowRule::Concurrency { max } => format!("at most {max} at once"),
        FlowRule::Rate {
            limit,
            period,
            burst,
        } => format!("at most {limit} per {period:?}, burst {burst}"),
    }
}

/// `wf queues describe SCOPE`: its limits with the attempts running and waiting under each.
fn describe(ctx: &Ctx<'_>, scope: &FlowScope, usage: &[FlowUsage]) -> Result<(), Failure> {
    if ctx.json {
        let bodies: Vec<FlowUsageBody> = usage.iter().map(FlowUsageBody::of).collect();
        print_json(&serde_json::to_value(bodies).unwrap_or_default());
        return Ok(());
    }
    if usage.is_empty() {
        println!("{}: no flow limits", scope_text(scope));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = usage
        .iter()
        .map(|u| {
            vec![
                u.limit.rule.kind().as_str().to_string(),
                rule_text(&u.limit.rule),
                u.running.to_string(),
                u.waiting.to_string(),
                u.tokens
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    println!("{}", scope_text(scope));
    let header = ["KIND", "LIMIT", "RUNNING", "WAITING", "TOKENS"];
    println!("{}", table(&ctx.style, &header, &rows));
    Ok(())
}

/// `wf queues list`: the flow limits, then the queues of workflow starts. In JSON one array:
/// the limits' bodies, then each queue's settings and usage with `"scope": {"queue": NAME}`.
fn list(ctx: &Ctx<'_>, limits: Vec<FlowLimit>, queues: &[QueueUsage]) -> Result<(), Failure> {
    if ctx.json {
        let mut items: Vec<serde_json::Value> = limits
            .iter()
            .map(|l| serde_json::to_value(FlowLimitBody::of(l)).unwrap_or_default())
            .collect();
        items.extend(queues.iter().map(workflow_queues::list_item));
        print_json(&serde_json::Value::Array(items));
        return Ok(());
    }
    list_limits(ctx, &limits);
    workflow_queues::list(ctx, queues);
    Ok(())
}

/// The flow limits' section of `wf queues list`.
fn list_limits(ctx: &Ctx<'_>, limits: &[FlowLimit]) {
    if limits.is_empty() {
        println!("no flow limits");
        return;
    }
    let rows: Vec<Vec<String>> = limits
        .iter()
        .map(|l| {
            vec![
                scope_text(&l.scope),
                l.rule.kind().as_str().to_string(),
                rule_text(&l.rule),
            ]
        })
        .collect();
    println!("{}", table(&ctx.style, &["SCOPE", "KIND", "LIMIT"], &rows));
}
