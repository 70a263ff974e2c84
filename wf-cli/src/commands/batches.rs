//! `wf batch`: signal, cancel, terminate, reset, pause, unpause or delete every run a filter
//! selects, as a durable batch the engines on the store carry out (a client-only `--db`/`--postgres` session stores it; the
//! engines serving that store, or the server behind `--url`, act on the runs). Without
//! `--yes` it says how many runs the filter selects and asks (refusing when stdin is not a
//! terminal); then it prints a progress line until the batch ends, unless `--json` or
//! `--no-wait`. `wf batch list|describe ID|cancel ID` read and stop batches.

use super::messages::args_payload;
use super::runs::list_filter;
use super::{print_json, Ctx};
use crate::args::{BatchCommand, BatchStartArgs};
use crate::exit::{Failure, DECLINED, ERROR, USAGE};
use crate::render::{iso8601_ms, table};
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};
use std::time::Duration;
use wf_core::{BatchAction, BatchDescription, BatchRequest, BatchStatus, ListFilter};

/// How often the progress line refreshes.
const POLL: Duration = Duration::from_millis(200);

/// `wf batch ...`.
pub async fn run(ctx: &Ctx<'_>, command: BatchCommand) -> Result<(), Failure> {
    match command {
        BatchCommand::Signal {
            name,
            args_json,
            start: args,
        } => {
            let action = BatchAction::Signal {
                name,
                args: args_payload(&args_json)?,
            };
            start(ctx, action, args).await
        }
        BatchCommand::Cancel {
            batch: Some(id), ..
        } => {
            let b = ctx.session.client.batches().cancel(&id).await?;
            show(ctx, &b, &format!("batch {id} is {}", b.status.as_str()));
            Ok(())
        }
        BatchCommand::Cancel {
            batch: None,
            start: args,
        } => start(ctx, BatchAction::Cancel, args).await,
        BatchCommand::Terminate(args) => start(ctx, BatchAction::Terminate, args).await,
        BatchCommand::Reset {
            to,
            drop_messages,
            start: args,
        } => {
            let to = wf_http::wire::reset_point(&to).ok_or_else(|| {
                Failure::new(
                    USAGE,
                    format!("--to is first-task or last-good-task, not {to:?}"),
                )
            })?;
            start(ctx, BatchAction::Reset { to, drop_messages }, args).await
        }
        BatchCommand::Pause(args) => start(ctx, BatchAction::Pause, args).await,
        BatchCommand::Unpause(args) => start(ctx, BatchAction::Unpause, args).await,
        BatchCommand::Delete(args) => start(ctx, BatchAction::Delete, args).await,
        BatchCommand::List => list(ctx).await,
        BatchCommand::Describe { id } => {
            let b = ctx.session.client.batches().describe(&id).await?;
            show(ctx, &b, &describe_text(&b));
            Ok(())
        }
    }
}

async fn start(ctx: &Ctx<'_>, action: BatchAction, args: BatchStartArgs) -> Result<(), Failure> {
    let client = &ctx.session.client;
    let filter = ListFilter {
        limit: 0,
        after_run_id: None,
        ..list_filter(args.filter)?
    };
    let kind = action.kind();
    if !args.yes {
        // The store counts them (`GET /_count` over HTTP), without listing them.
        let n = client.count(filter.clone()).await?;
        if !std::io::stdin().is_terminal() {
            return Err(Failure::new(
                USAGE,
                format!("the filter selects {n} runs; add --yes to {kind} them (stdin is not a terminal, so wf cannot ask)"),
            ));
        }
        eprint!("{kind} {n} runs? [y/N] ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Err(Failure::new(DECLINED, "nothing done"));
        }
    }
    let request = BatchRequest {
        batch_id: args.id,
        filter,
        action,
        reason: args.reason,
        rate_per_s: args.rate,
    };
    let started = client.batches().start(request).await?;
    let id = started.batch_id.clone();
    if args.no_wait {
        show(
            ctx,
            &started,
            &format!("batch {id} started: {kind} {} runs", started.selected),
        );
        return Ok(());
    }
    let progress = !ctx.json;
    let mut b = started;
    while b.status == BatchStatus::Running {
        if progress {
            eprint!(
                "\rbatch {id}: {kind} {} of {} runs, {} failed ",
                b.done, b.selected, b.failed
            );
            std::io::stderr().flush()?;
        }
        tokio::time::sleep(POLL).await;
        b = client.batches().describe(&id).await?;
    }
    if progress {
        eprintln!();
    }
    show(ctx, &b, &describe_text(&b));
    match b.status {
        BatchStatus::Failed => Err(Failure::new(
            ERROR,
            format!(
                "batch {id} failed: {}",
                b.last_error.clone().unwrap_or_default()
            ),
        )),
        _ => Ok(()),
    }
}

async fn list(ctx: &Ctx<'_>) -> Result<(), Failure> {
    let all = ctx.session.client.batches().list().await?;
    if ctx.json {
        print_json(&Value::Array(all.iter().map(batch_json).collect()));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|b| {
            vec![
                b.batch_id.clone(),
                b.action.kind().to_string(),
                ctx.style.status(b.status.as_str()),
                format!("{}/{}", b.done, b.selected),
                b.failed.to_string(),
                iso8601_ms(b.created_ms),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &ctx.style,
            &["BATCH", "ACTION", "STATUS", "DONE", "FAILED", "STARTED"],
            &rows
        )
    );
    Ok(())
}

fn show(ctx: &Ctx<'_>, b: &BatchDescription, text: &str) {
    if ctx.json {
        print_json(&batch_json(b));
    } else {
        println!("{text}");
    }
}

fn describe_text(b: &BatchDescription) -> String {
    let mut lines = vec![
        format!("batch      {}", b.batch_id),
        format!("action     {}", action_text(&b.action)),
        format!("status     {}", b.status.as_str()),
        format!("selected   {}", b.selected),
        format!("done       {}", b.done),
        format!("failed     {}", b.failed),
        format!("reason     {}", b.reason),
        format!("started    {}", iso8601_ms(b.created_ms)),
    ];
    if let Some(rate) = b.rate_per_s {
        lines.push(format!("rate       {rate} runs/s"));
    }
    if let Some(t) = b.closed_ms {
        lines.push(format!("finished   {}", iso8601_ms(t)));
    }
    if let Some(e) = &b.last_error {
        lines.push(format!("last error {e}"));
    }
    lines.join("\n")
}

fn action_text(a: &BatchAction) -> String {
    match a {
        BatchAction::Signal { name, .. } => format!("signal {name}"),
        BatchAction::Reset { to, drop_messages } => match drop_messages {
            true => format!("reset to {to}, dropping later messages"),
            false => format!("reset to {to}"),
        },
        other => other.kind().to_string(),
    }
}

fn batch_json(b: &BatchDescription) -> Value {
    let signal = match &b.action {
        BatchAction::Signal { name, args } => json!({
            "name": name,
            "args": wf_http::json::from_payload(args).unwrap_or(Value::Null),
        }),
        _ => Value::Null,
    };
    let reset = match &b.action {
        BatchAction::Reset { to, drop_messages } => {
            json!({"to": to.to_string(), "drop_messages": drop_messages})
        }
        _ => Value::Null,
    };
    json!({
        "batch_id": b.batch_id,
        "action": b.action.kind(),
        "signal": signal,
        "reset": reset,
        "workflow_type": b.filter.workflow_type,
        "status_filter": b.filter.status.map(|s| s.as_str()),
        "reason": b.reason,
        "rate": b.rate_per_s,
        "status": b.status.as_str(),
        "selected": b.selected,
        "done": b.done,
        "failed": b.failed,
        "last_error": b.last_error,
        "created": iso8601_ms(b.created_ms),
        "closed": b.closed_ms.map(iso8601_ms),
    })
}
