//! `wf schedule create|list|describe|pause|unpause|trigger|delete`.

use super::{print_json, Ctx};
use crate::args::{ScheduleCommand, ScheduleCreateArgs};
use crate::exit::Failure;
use crate::render::{iso8601_ms, ms_of, table, when};
use serde_json::{json, Value};
use std::time::Duration;
use wf_core::wire::from_payload;
use wf_core::{
    CalendarSpec, IntervalSpec, OverlapPolicy, ScheduleAction, ScheduleDescription,
    SchedulePolicies, ScheduleSpec,
};

/// The spec, action and policies `wf schedule create`'s flags stand for.
fn new_schedule(
    a: &ScheduleCreateArgs,
) -> Result<(ScheduleSpec, ScheduleAction, SchedulePolicies), Failure> {
    let offset = a.offset.unwrap_or(Duration::ZERO);
    let mut spec = ScheduleSpec::default();
    for every in &a.every {
        spec.intervals.push(IntervalSpec {
            every: *every,
            offset,
        });
    }
    if a.offset.is_some() && a.every.is_empty() {
        return Err(Failure::usage(
            "--offset shifts an --every interval: give --every too",
        ));
    }
    for text in &a.calendar {
        spec.calendars.push(calendar(text).map_err(Failure::usage)?);
    }
    let value: Value = serde_json::from_str(&a.input).map_err(|e| {
        Failure::usage(format!(
            "--input is not JSON ({e}); give the workflow's input, e.g. '{{\"name\": \"x\"}}' or 'null'"
        ))
    })?;
    let action = ScheduleAction {
        workflow_type: a.workflow_type.clone(),
        workflow_id_prefix: a.id_prefix.clone().unwrap_or_else(|| a.id.clone()),
        input: wf_http::json::to_payload(&value).map_err(|e| Failure::usage(e.to_string()))?,
        task_queue: a.task_queue.clone(),
    };
    let overlap = match a.overlap.as_str() {
        "buffer-one" => OverlapPolicy::BufferOne,
        "buffer-all" => OverlapPolicy::BufferAll,
        "allow-all" => OverlapPolicy::AllowAll,
        "cancel-other" => OverlapPolicy::CancelOther,
        // clap allows only these names.
        _ => OverlapPolicy::Skip,
    };
    let policies = SchedulePolicies {
        overlap,
        catchup_window: a.catchup_window,
    };
    Ok((spec, action, policies))
}

/// A calendar from cron's five fields, `MINUTE HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK`.
fn calendar(text: &str) -> Result<CalendarSpec, String> {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let [minute, hour, dom, month, dow] = fields[..] else {
        return Err(format!(
            "--calendar {text:?} needs five fields, MINUTE HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK \
             (e.g. '30 9 * * 1-5')"
        ));
    };
    Ok(CalendarSpec {
        minute: field("minute", minute, 0, 59)?,
        hour: field("hour", hour, 0, 23)?,
        day_of_month: field("day of month", dom, 1, 31)?,
        month: field("month", month, 1, 12)?,
        day_of_week: field("day of week", dow, 0, 6)?,
    })
}

/// One calendar field: `*` (any: an empty list), or a comma list of numbers and ranges
/// `a-b`, each within `lo..=hi`.
fn field(name: &str, text: &str, lo: u8, hi: u8) -> Result<Vec<u8>, String> {
    if text == "*" {
        return Ok(Vec::new());
    }
    let number = |t: &str| match t.parse::<u8>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!(
            "calendar {name} {t:?} is not a number from {lo} to {hi} (or `*`, `a-b`, `a,b`)"
        )),
    };
    let mut out = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("calendar {name} range {part:?} runs backwards"));
                }
                out.extend(a..=b);
            }
            None => out.push(number(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

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
        ScheduleCommand::Create(args) => {
            let (spec, action, policies) = new_schedule(&args)?;
            schedules
                .create(args.id.as_str(), spec, action, policies)
                .await?;
            (args.id, "created")
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendars_read_cron_fields() {
        let c = calendar("30 9 * * 1-5").unwrap();
        assert_eq!(c.minute, vec![30]);
        assert_eq!(c.hour, vec![9]);
        assert!(c.day_of_month.is_empty() && c.month.is_empty());
        assert_eq!(c.day_of_week, vec![1, 2, 3, 4, 5]);
        let c = calendar("0,15,30-31 * 1 12 *").unwrap();
        assert_eq!(c.minute, vec![0, 15, 30, 31]);
        assert_eq!((c.day_of_month, c.month), (vec![1], vec![12]));
    }

    #[test]
    fn bad_calendars_say_what_is_wrong() {
        for (text, says) in [
            ("30 9 * *", "five fields"),
            ("60 * * * *", "minute \"60\""),
            ("* 5-3 * * *", "backwards"),
            ("* * 0 * *", "day of month"),
            ("* * * * 7", "day of week"),
            ("x * * * *", "minute \"x\""),
        ] {
            let err = calendar(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
