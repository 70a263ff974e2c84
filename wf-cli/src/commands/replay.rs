//! `wf replay --history DIR [--exec PROGRAM ARGS...]`. wf has none of your workflow code, so
//! it cannot replay a history itself: it checks that every file is a history this engine
//! reads and prints what each holds; with `--exec` it then runs your replay test binary (a
//! test calling `Replayer::replay_dir`) with `WF_REPLAY_HISTORY` set to the folder.

use super::print_json;
use crate::exit::{Failure, REPLAY_FAILED, USAGE};
use crate::render::{iso8601_ms, table, Style};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use wf_core::History;

/// The variable naming the history folder for the program run by `--exec`.
pub const HISTORY_VAR: &str = "WF_REPLAY_HISTORY";

fn files(path: &Path) -> Result<Vec<PathBuf>, Failure> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| {
        Failure::new(
            crate::exit::NOT_FOUND,
            format!("cannot read history folder {}: {e}", path.display()),
        )
    })?;
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    Ok(out)
}

/// Runs `wf replay`.
pub fn run(style: &Style, json: bool, path: &Path, exec: &[String]) -> Result<(), Failure> {
    let files = files(path)?;
    let mut rows = Vec::new();
    let mut items = Vec::new();
    let mut bad = 0;
    for file in &files {
        let read = std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|text| History::from_json(&text).map_err(|e| e.to_string()));
        let name = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        match read {
            Ok(h) => {
                // A closed run shows how it ended; an open one, its last event's time.
                let end = h.events.iter().find(|e| e.kind.is_terminal());
                let state = end.map_or("open", |e| e.kind.name());
                let last_time = h
                    .events
                    .last()
                    .map_or("-".into(), |e| iso8601_ms(e.time_ms));
                items.push(json!({
                    "file": name, "ok": true, "workflow_type": h.workflow_type,
                    "workflow_id": h.workflow_id, "run_id": h.run_id,
                    "events": h.events.len(), "state": state,
                }));
                rows.push(vec![
                    name,
                    h.workflow_type,
                    h.workflow_id,
                    h.events.len().to_string(),
                    format!(
                        "{state} {}",
                        style.dim(&format!("(last event {last_time})"))
                    ),
                ]);
            }
            Err(e) => {
                bad += 1;
                items.push(json!({"file": name, "ok": false, "error": e}));
                rows.push(vec![
                    name,
                    style.error("invalid"),
                    e,
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    if json {
        print_json(&Value::Array(items));
    } else if rows.is_empty() {
        println!("no histories (*.json) in {}", path.display());
    } else {
        let header = ["FILE", "TYPE", "WORKFLOW ID", "EVENTS", "STATE"];
        println!("{}", table(style, &header, &rows));
    }
    if bad > 0 {
        return Err(Failure::new(
            REPLAY_FAILED,
            format!("{bad} of {} history files are invalid", files.len()),
        ));
    }
    let Some((program, args)) = exec.split_first() else {
        return Ok(());
    };
    let status = std::process::Command::new(program)
        .args(args)
        .env(HISTORY_VAR, path)
        .status()
        .map_err(|e| Failure::new(USAGE, format!("cannot run {program}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(
            REPLAY_FAILED,
            format!("{program} failed ({status}): some histories do not replay on this code"),
        ))
    }
}
