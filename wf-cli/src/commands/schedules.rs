//! `wf schedule list|describe|pause|unpause|trigger|delete`.

use super::{print_json, Ctx};
use crate::args::ScheduleCommand;
use crate::exit::Failure;
use crate::render::{iso8601_ms, ms_of, table, when};
use serde_json::{json, Value};
use wf_core::wire::from_payload;
use wf_core::ScheduleDescription;

fn schedule_json(d: &ScheduleDescription) -> Value {
    json!({
        "schedule_id": d.schedule_id,
        "spec": format!("{:?}", d.spec),
        "workflow_type": d.action.workflow_type,
        "workflow_id_prefix": d.action.workflow_id_prefix,
        "input": from_payload(&d.action.input).ok(),
        "paused": d.paused,
        "note": d.note,
        "next_fires": d.next_fires.iter().map(|t| iso8601_ms(ms_of(*t))).collect::<Vec<_>>(),
        "recent_actions": d.recent_actions.iter().map(|a| json!({
            "fire_time": iso8601_ms(a.fire_ms), "workflow_id": a.workflow_id,
        })).collect::<Vec<_>>(),
        "running": d.running,
        "buffered": d.buffered,
        "skipped": d.skipped,
        "missed_catchup": d.missed_catchup,
        "last_error": d.last_error,
    })
}

/// Runs a schedule command.
pub async fn run(ctx: &Ctx<'_>, command: ScheduleCommand) -> Result<(), Failure> {
    let schedules = ctx.session.client.schedules();
    let s = &ctx.style;
    let (id, done) = match command {
        ScheduleCommand::List => {
            let all = schedules.list().await?;
            if ctx.json {
                print_json(&Value::Array(all.iter().map(schedule_json).collect()));
            } else if all.is_empty() {
                println!("no schedules");
            } else {
                let rows: Vec<Vec<String>> = all
                    .iter()
                    .map(|d| {
                        vec![
                            d.schedule_id.clone(),
                            d.action.workflow_type.clone(),
                            if d.paused {
                                s.status("paused")
                            } else {
                                s.status("running")
                            },
                            d.next_fires.first().map_or("-".into(), |t| when(s, *t)),
                            d.running.len().to_string(),
                        ]
                    })
                    .collect();
                let header = ["SCHEDULE ID", "TYPE", "STATE", "NEXT FIRE", "RUNNING"];
                println!("{}", table(s, &header, &rows));
            }
            return Ok(());
        }
        ScheduleCommand::Describe { id } => {
            let d = schedules.handle(id).describe().await?;
            if ctx.json {
                print_json(&schedule_json(&d));
                return Ok(());
            }
            let state = if d.paused { "paused" } else { "running" };
            println!("{}  {}", s.bold("schedule id"), d.schedule_id);
            println!("{}         {:?}", s.bold("spec"), d.spec);
            println!(
                "{}       starts {} as {}-<fire time>",
                s.bold("action"),
                d.action.workflow_type,
                d.action.workflow_id_prefix
            );
            println!("{}        {}", s.bold("state"), s.status(state));
            if !d.note.is_empty() {
                println!("{}         {}", s.bold("note"), d.note);
            }
            for t in &d.next_fires {
                println!("{}    {}", s.bold("next fire"), when(s, *t));
            }
            for a in &d.recent_actions {
                println!(
                    "{}       {} -> {}",
                    s.bold("fired"),
                    iso8601_ms(a.fire_ms),
                    a.workflow_id
                );
            }
            println!(
                "{}      {} running, {} buffered, {} skipped, {} missed",
                s.bold("actions"),
                d.running.len(),
                d.buffered,
                d.skipped,
                d.missed_catchup
            );
            if let Some(e) = &d.last_error {
                println!("{}   {e}", s.error("last error"));
            }
            return Ok(());
        }
        ScheduleCommand::Pause { id, note } => {
            schedules.handle(id.as_str()).pause(&note).await?;
            (id, "paused")
        }
        ScheduleCommand::Unpause { id, note } => {
            schedules.handle(id.as_str()).unpause(&note).await?;
            (id, "unpaused")
        }
        ScheduleCommand::Trigger { id } => {
            schedules.handle(id.as_str()).trigger().await?;
            (id, "triggered")
        }
        ScheduleCommand::Delete { id } => {
            schedules.handle(id.as_str()).delete().await?;
            (id, "deleted")
        }
    };
    if ctx.json {
        print_json(&json!({"schedule_id": id, "done": done}));
    } else {
        println!("schedule {id} {done}");
    }
    Ok(())
}
