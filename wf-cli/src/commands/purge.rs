//! `wf purge --closed-before 30d`: retention on demand. Deletes the runs closed more than that
//! long ago (with their histories, updates and dedupe ids), batch after batch, each batch one
//! transaction so that a serving engine's live runs commit between them; a progress bar on a
//! terminal; `--dry-run` only counts.

use super::{print_json, Ctx};
use crate::exit::{Failure, USAGE};
use crate::render::{iso8601_ms, ms_of};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::time::{Duration, SystemTime};
use wf_core::PurgeRequest;

/// The width of the progress bar, in cells.
const BAR: usize = 30;

/// `wf purge`.
pub async fn run(ctx: &Ctx<'_>, age: Duration, dry_run: bool, batch: usize) -> Result<(), Failure> {
    if batch == 0 {
        return Err(Failure::new(USAGE, "--batch must be at least 1"));
    }
    let closed_before = SystemTime::now().checked_sub(age).ok_or_else(|| {
        Failure::new(
            USAGE,
            format!("--closed-before {age:?} reaches before 1970"),
        )
    })?;
    let cutoff = iso8601_ms(ms_of(closed_before));
    let client = &ctx.session.client;
    let request = PurgeRequest {
        closed_before,
        batch,
        dry_run: true,
    };
    let progress = !ctx.json && std::io::stderr().is_terminal();
    let total = if dry_run || progress {
        Some(client.purge(request.clone()).await?.runs)
    } else {
        None
    };
    if dry_run {
        let runs = total.unwrap_or(0);
        if ctx.json {
            print_json(&json!({ "dry_run": true, "closed_before": cutoff, "runs": runs }));
        } else {
            println!("would purge {runs} runs closed before {cutoff}");
        }
        return Ok(());
    }
    let request = PurgeRequest {
        dry_run: false,
        ..request
    };
    let mut purged = 0u64;
    loop {
        let report = client.purge(request.clone()).await?;
        purged += report.runs;
        if let (true, Some(total)) = (progress, total) {
            eprint!("\r{}", bar(purged, total));
            let _ = std::io::stderr().flush();
        }
        if !report.more {
            break;
        }
    }
    if progress {
        eprintln!();
    }
    if ctx.json {
        print_json(&json!({ "purged": purged, "closed_before": cutoff }));
    } else {
        println!("purged {purged} runs closed before {cutoff}");
    }
    Ok(())
}

/// `[#########.....................]  300/1000 runs purged` (runs that closed meanwhile may
/// take it past the count made at the start: it then reads full).
fn bar(done: u64, total: u64) -> String {
    let total = total.max(done).max(1);
    let filled = ((u128::from(done) * BAR as u128) / u128::from(total)) as usize;
    format!(
        "[{}{}] {done}/{total} runs purged",
        "#".repeat(filled),
        ".".repeat(BAR - filled)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_progress_and_never_overflows() {
        assert_eq!(bar(0, 10), format!("[{}] 0/10 runs purged", ".".repeat(30)));
        assert_eq!(
            bar(5, 10),
            format!("[{}{}] 5/10 runs purged", "#".repeat(15), ".".repeat(15))
        );
        assert_eq!(
            bar(12, 10),
            format!("[{}] 12/12 runs purged", "#".repeat(30))
        );
        assert_eq!(bar(0, 0), format!("[{}] 0/1 runs purged", ".".repeat(30)));
    }
}
