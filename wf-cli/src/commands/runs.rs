//! Reading runs: `wf list`, `wf describe`, `wf history [--follow]`, `wf export`.

use super::{print_json, Ctx};
use crate::args::{ExportArgs, ListArgs};
use crate::exit::{Failure, USAGE};
use crate::render::{iso8601_ms, ms_of, table, when};
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wf_core::wire::{event_attributes, from_payload};
use wf_core::{Description, HistoryEvent, ListFilter, RunStatus};
use wf_core::{Memo, SearchAttributes, SearchValue};

/// How often `--follow` looks for new events.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

fn parse_status(status: Option<String>) -> Result<Option<RunStatus>, Failure> {
    status
        .map(|s| {
            RunStatus::parse(&s).ok_or_else(|| {
                let all: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
                Failure::usage(format!(
                    "--status must be one of {}, not {s:?}",
                    all.join(", ")
                ))
            })
        })
        .transpose()
}

fn time_json(t: Option<SystemTime>) -> Value {
    t.map_or(Value::Null, |t| iso8601_ms(ms_of(t)).into())
}

/// The filter `wf list` asks for: ages count back from now.
pub(super) fn list_filter(args: ListArgs) -> Result<ListFilter, Failure> {
    let now = SystemTime::now();
    let ago = |age: Option<Duration>| age.map(|a| now.checked_sub(a).unwrap_or(UNIX_EPOCH));
    let mut search = Vec::with_capacity(args.search.len());
    for pair in &args.search {
        let (key, text) = pair
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("--search takes KEY=VALUE, not {pair:?}")))?;
        let value = SearchValue::parse_filter(text)
            .map_err(|e| Failure::usage(format!("--search {key}: {e}")))?;
        search.push((key.to_string(), value));
    }
    Ok(ListFilter {
        workflow_type: args.workflow_type,
        status: parse_status(args.status)?,
        latest_only: !args.all_runs,
        limit: args.limit,
        search,
        started_after: ago(args.started_after),
        started_before: ago(args.started_before),
        closed_after: ago(args.closed_after),
        closed_before: ago(args.closed_before),
        after_run_id: args.after,
        build_id: args.build_id,
    })
}

/// A run's search attributes as a JSON object (`{"customer": "acme"}`).
fn search_json(attributes: &SearchAttributes) -> Value {
    attributes
        .iter()
        .map(|(k, v)| (k.clone(), v.to_json()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// A run's memo as a JSON object.
fn memo_json(memo: &Memo) -> Value {
    memo.iter()
        .map(|(k, v)| (k.clone(), from_payload(v).unwrap_or(Value::Null)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `k=v k2=v2`, for tables.
fn search_line(attributes: &SearchAttributes) -> String {
    let pairs: Vec<String> = attributes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.join(" ")
}

/// `wf list`: a table of runs with their start and close times.
pub async fn list(ctx: &Ctx<'_>, args: ListArgs) -> Result<(), Failure> {
    let filter = list_filter(args)?;
    let client = &ctx.session.client;
    let runs = client.list(filter).await?;
    let mut rows = Vec::with_capacity(runs.len());
    let mut items = Vec::with_capacity(runs.len());
    for run in runs {
        items.push(json!({
            "workflow_id": run.workflow_id,
            "run_id": run.run_id,
            "workflow_type": run.workflow_type,
            "status": run.status.as_str(),
            "history_length": run.history_length,
            "started_at": time_json(Some(run.started_at)),
            "closed_at": time_json(run.closed_at),
            "search_attributes": search_json(&run.search_attributes),
            "memo": memo_json(&run.memo),
            "build_id": run.build_id,
            "paused": run.paused,
            "queue": run.queue,
            "queue_position": run.queue_position,
        }));
        let status = status_cell(&ctx.style, run.status.as_str(), run.paused);
        rows.push(vec![
            run.workflow_id,
            run.workflow_type,
            match (&run.queue, run.queue_position) {
                (Some(queue), Some(n)) => format!("{status} (held: #{n} on {queue})"),
                _ => status,
            },
            when(&ctx.style, run.started_at),
            run.closed_at.map_or("-".into(), |t| when(&ctx.style, t)),
            run.history_length.to_string(),
            search_line(&run.search_attributes),
            ctx.style.dim(&run.run_id),
        ]);
    }
    if ctx.json {
        print_json(&Value::Array(items));
    } else if rows.is_empty() {
        println!("no runs");
    } else {
        let header = [
            "WORKFLOW ID",
            "TYPE",
            "STATUS",
            "STARTED",
            "CLOSED",
            "EVENTS",
            "SEARCH",
            "RUN ID",
        ];
        println!("{}", table(&ctx.style, &header, &rows));
    }
    Ok(())
}

/// `wf count [filters]`.
pub async fn count(ctx: &Ctx<'_>, args: ListArgs) -> Result<(), Failure> {
    let mut filter = list_filter(args)?;
    filter.limit = 0;
    filter.after_run_id = None;
    let count = ctx.session.client.count(filter).await?;
    if ctx.json {
        print_json(&json!({ "count": count }));
    } else {
        println!("{count}");
    }
    Ok(())
}

fn description_json(d: &Description) -> Value {
    json!({
        "workflow_id": d.workflow_id,
        "run_id": d.run_id,
        "workflow_type": d.workflow_type,
        "task_queue": d.task_queue,
        "status": d.status.as_str(),
        "history_length": d.history_length,
        "history_bytes": d.history_bytes,
        "started_at": time_json(Some(d.started_at)),
        "start_at": time_json(d.start_at),
        "closed_at": time_json(d.closed_at),
        "pending_activities": d.pending_activities.iter().map(|a| json!({
            "seq": a.seq, "name": a.name, "attempt": a.attempt, "last_failure": a.last_failure,
            "attempt_deadline": time_json(a.attempt_deadline),
            "heartbeat_details": a.heartbeat_details.as_ref().and_then(|p| from_payload(p).ok()),
        })).collect::<Vec<_>>(),
        "pending_updates": d.pending_updates.iter().map(|u| json!({
            "update_id": u.update_id, "name": u.name, "accepted": u.accepted,
        })).collect::<Vec<_>>(),
        "buffered_signals": d.buffered_signals,
        "running_handlers": d.running_handlers,
        "task_failure": d.task_failure.as_ref().map(|f| json!({
            "message": f.message, "nondeterminism": f.nondeterminism, "attempts": f.attempts,
            "retry_at": iso8601_ms(f.retry_at_ms),
        })),
        "search_attributes": search_json(&d.search_attributes),
        "memo": memo_json(&d.memo),
        "attempt": d.attempt,
        "repaired_from": d.repaired_from.as_ref().map(|o| json!({
            "kind": o.kind.as_str(), "workflow_id": o.workflow_id, "run_id": o.run_id,
            "at_event": o.at_event, "reason": o.reason, "identity": o.identity,
            "at": iso8601_ms(o.at_ms),
        })),
        "result": d.result.as_ref().and_then(|p| from_payload(p).ok()),
        "failure": d.failure,
        "paused": d.paused.as_ref().map(|p| json!({
            "by": p.by, "reason": p.reason, "since": time_json(Some(p.since)),
        })),
        "blocked_on": serde_json::to_value(&d.blocked_on).unwrap_or_default(),
    })
}

/// One row per wait of each part of the run (`blocked run`, `blocked update hold (id ..)`);
/// a part waiting on nothing the engine can name gets one row saying so.
fn blocked_rows(s: &crate::render::Style, parts: &[wf_core::BlockedPart]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for part in parts {
        let key = format!("blocked {}", part.part);
        if part.waits.is_empty() {
            rows.push(vec![key.clone(), s.dim("on a future of its own")]);
        }
        for w in &part.waits {
            let mut line = w.kind.as_str().to_string();
            if !w.name.is_empty() {
                line.push_str(&format!(" {:?}", w.name));
            }
            if let Some(attempt) = w.attempt {
                line.push_str(&format!(" (attempt {attempt})"));
            }
            if let Some(at) = &w.location {
                line.push_str(&format!(" at {at}"));
            }
            if let Some(ms) = w.deadline_ms {
                let word = match w.kind {
                    wf_core::BlockKind::Timer => "fires",
                    _ => "until",
                };
                line.push_str(&format!(", {word} {}", iso8601_ms(ms)));
            }
            rows.push(vec![key.clone(), line]);
        }
    }
    rows
}

/// `wf describe ID`.
pub async fn describe(ctx: &Ctx<'_>, id: &str) -> Result<(), Failure> {
    let d = ctx.session.client.describe(id).await?;
    if ctx.json {
        print_json(&description_json(&d));
        return Ok(());
    }
    let s = &ctx.style;
    let mut rows = vec![
        vec!["workflow id".into(), d.workflow_id.clone()],
        vec!["run id".into(), d.run_id.clone()],
        vec!["type".into(), d.workflow_type.clone()],
        vec!["task queue".into(), d.task_queue.clone()],
        vec![
            "status".into(),
            status_cell(s, d.status.as_str(), d.paused.is_some()),
        ],
        vec!["attempt".into(), d.attempt.to_string()],
        vec!["started".into(), when(s, d.started_at)],
        vec![
            "first task due".into(),
            d.start_at.map_or("at once".into(), |t| when(s, t)),
        ],
        vec![
            "closed".into(),
            d.closed_at.map_or("-".into(), |t| when(s, t)),
        ],
        vec![
            "history".into(),
            format!("{} events, {} bytes", d.history_length, d.history_bytes),
        ],
    ];
    if let Some(p) = &d.paused {
        let reason = if p.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", p.reason)
        };
        rows.push(vec![
            "paused".into(),
            format!("by {} {}{reason}", p.by, when(s, p.since)),
        ]);
    }
    if let Some(failure) = &d.failure {
        rows.push(vec![s.error("failure"), failure.clone()]);
    }
    if let Some(result) = &d.result {
        let value = from_payload(result)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| format!("{} bytes", result.as_bytes().len()));
        rows.push(vec!["result".into(), value]);
    }
    for (key, value) in &d.search_attributes {
        rows.push(vec![format!("search {key}"), value.to_string()]);
    }
    for (key, value) in &d.memo {
        rows.push(vec![format!("memo {key}"), value.display()]);
    }
    for a in &d.pending_activities {
        let failure = a
            .last_failure
            .as_ref()
            .map(|f| format!(", last failure: {f}"))
            .unwrap_or_default();
        let deadline = a
            .attempt_deadline
            .map(|t| format!(", times out {}", when(s, t)))
            .unwrap_or_default();
        rows.push(vec![
            "pending activity".into(),
            format!(
                "#{} {} (attempt {}{failure}{deadline})",
                a.seq, a.name, a.attempt
            ),
        ]);
    }
    for u in &d.pending_updates {
        let stage = if u.accepted {
            "running"
        } else {
            "waiting for validation"
        };
        rows.push(vec![
            "pending update".into(),
            format!("{} {} ({stage})", u.name, s.dim(&u.update_id)),
        ]);
    }
    if !d.buffered_signals.is_empty() {
        rows.push(vec![
            "buffered signals".into(),
            d.buffered_signals.join(", "),
        ]);
    }
    if !d.running_handlers.is_empty() {
        rows.push(vec![
            "running handlers".into(),
            d.running_handlers.join(", "),
        ]);
    }
    if let Some(o) = &d.repaired_from {
        rows.push(vec![
            "repaired".into(),
            format!(
                "{} of {} run {} at event {}, by {} at {}: {}",
                o.kind,
                o.workflow_id,
                o.run_id,
                o.at_event,
                o.identity,
                iso8601_ms(o.at_ms),
                o.reason
            ),
        ]);
    }
    if let Some(f) = &d.task_failure {
        let kind = if f.nondeterminism {
            "nondeterminism"
        } else {
            "failure"
        };
        rows.push(vec![
            s.error("task failure"),
            format!(
                "{kind} after {} attempts, next at {}: {}",
                f.attempts,
                iso8601_ms(f.retry_at_ms),
                f.message
            ),
        ]);
    }
    rows.extend(blocked_rows(s, &d.blocked_on));
    let width = rows.iter().map(|r| r[0].len()).max().unwrap_or(0);
    for row in rows {
        let pad = " ".repeat(width.saturating_sub(row[0].len()) + 2);
        println!("{}{pad}{}", s.bold(&row[0]), row[1]);
    }
    Ok(())
}

fn event_json(e: &HistoryEvent) -> Result<Value, Failure> {
    let attributes = event_attributes(&e.kind)
        .map_err(|err| Failure::new(crate::exit::ERROR, format!("event {}: {err}", e.event_id)))?;
    Ok(json!({
        "event_id": e.event_id,
        "time": iso8601_ms(e.time_ms),
        "type": e.kind.name(),
        "attributes": attributes,
    }))
}

fn print_events(ctx: &Ctx<'_>, events: &[HistoryEvent]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    for e in events {
        let line = if ctx.json {
            // One JSON object per line, so that `--follow --json` streams.
            event_json(e)?.to_string()
        } else {
            let details = event_attributes(&e.kind)
                .map(|v| {
                    if v.is_null() {
                        String::new()
                    } else {
                        v.to_string()
                    }
                })
                .unwrap_or_else(|_| e.kind.details());
            format!(
                "{:>5}  {}  {:<22} {}",
                e.event_id,
                ctx.style.dim(&iso8601_ms(e.time_ms)),
                ctx.style.bold(e.kind.name()),
                details
            )
        };
        writeln!(out, "{line}").map_err(Failure::from)?;
    }
    out.flush().map_err(Failure::from)
}

/// `wf history ID [--follow]`: one line per event, details decoded to JSON; with `--json`,
/// one JSON object per line.
pub async fn history(ctx: &Ctx<'_>, id: &str, follow: bool) -> Result<(), Failure> {
    let client = &ctx.session.client;
    let d = client.describe(id).await?;
    let mut printed = 0u64;
    loop {
        let events = client.run_history(&d.run_id, id).await?;
        let new: Vec<HistoryEvent> = events
            .into_iter()
            .filter(|e| e.event_id > printed)
            .collect();
        if let Some(last) = new.last() {
            printed = last.event_id;
        }
        print_events(ctx, &new)?;
        let closed = new.iter().any(|e| e.kind.is_terminal());
        if !follow || closed {
            return Ok(());
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
}

/// `wf export ID` (the document on stdout) or `wf export --out DIR` (one file per run).
pub async fn export(ctx: &Ctx<'_>, args: ExportArgs) -> Result<(), Failure> {
    let client = &ctx.session.client;
    let Some(dir) = args.out else {
        let Some(id) = args.id else {
            return Err(Failure::usage(
                "wf export needs a workflow id (wf export ID > run.json), or --out DIR for many runs",
            ));
        };
        let history = client.export(&id).await?;
        let text = history
            .to_json()
            .map_err(|e| Failure::new(crate::exit::ERROR, e.to_string()))?;
        println!("{text}");
        return Ok(());
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::new(USAGE, format!("cannot create {}: {e}", dir.display())))?;
    let runs = match args.id {
        Some(id) => {
            let d = client.describe(&id).await?;
            vec![(id, d.run_id, d.workflow_type)]
        }
        None => client
            .list(ListFilter {
                workflow_type: args.workflow_type,
                status: parse_status(args.status)?,
                latest_only: false,
                limit: args.limit,
                ..ListFilter::default()
            })
            .await?
            .into_iter()
            .map(|r| (r.workflow_id, r.run_id, r.workflow_type))
            .collect(),
    };
    let total = runs.len();
    let progress = !ctx.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut written = Vec::with_capacity(total);
    for (i, (workflow_id, run_id, workflow_type)) in runs.into_iter().enumerate() {
        let history = client
            .export_run(&workflow_id, &run_id, &workflow_type)
            .await?;
        let text = history
            .to_json()
            .map_err(|e| Failure::new(crate::exit::ERROR, e.to_string()))?;
        let file = dir.join(format!("{}.{run_id}.json", file_safe(&workflow_id)));
        std::fs::write(&file, text).map_err(|e| {
            Failure::new(
                crate::exit::ERROR,
                format!("writing {}: {e}", file.display()),
            )
        })?;
        if progress {
            eprint!("\rexported {}/{total}", i + 1);
        }
        written.push(file);
    }
    if progress {
        eprintln!();
    }
    if ctx.json {
        let files: Vec<Value> = written
            .iter()
            .map(|p| p.display().to_string().into())
            .collect();
        print_json(&json!({ "exported": files }));
    } else {
        println!("exported {total} runs to {}", dir.display());
    }
    Ok(())
}

/// A workflow id as a file name: characters other than letters, digits, `-`, `_` and `.`
/// become `_`.
fn file_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A run's status for a table, with `(paused)` after a paused run's.
fn status_cell(style: &crate::render::Style, status: &str, paused: bool) -> String {
    let cell = style.status(status);
    if paused {
        format!("{cell} (paused)")
    } else {
        cell
    }
}
