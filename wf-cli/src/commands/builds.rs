//! `wf builds`: worker versioning for operators. Lists running runs by build id (pinned,
//! auto-upgrade, not started) with the task queues each build is current for, so that an old
//! build is stopped once nothing is pinned to it; `set-current` makes a build current for a
//! task queue, `move` moves a run whose build is gone.

use super::{print_json, Ctx};
use crate::args::{BuildsArgs, BuildsCommand};
use crate::exit::Failure;
use crate::render::table;
use serde_json::json;

/// `wf builds [--queue Q] [set-current Q BUILD | move ID BUILD]`.
pub async fn run(ctx: &Ctx<'_>, args: BuildsArgs) -> Result<(), Failure> {
    let client = &ctx.session.client;
    match args.command {
        Some(BuildsCommand::SetCurrent { queue, build }) => {
            client.set_current_build(&queue, &build).await?;
            if ctx.json {
                print_json(&json!({ "task_queue": queue, "current_build": build }));
            } else {
                println!("build {build} is current for task queue {queue}");
            }
            Ok(())
        }
        Some(BuildsCommand::Move { id, build }) => {
            client.move_to_build(&id, &build).await?;
            if ctx.json {
                print_json(&json!({ "workflow_id": id, "build_id": build }));
            } else {
                println!("workflow {id} moved to build {build}");
            }
            Ok(())
        }
        None => list(ctx, args.queue).await,
    }
}

/// The builds and their counts.
async fn list(ctx: &Ctx<'_>, queue: Option<String>) -> Result<(), Failure> {
    let builds = ctx.session.client.build_ids(queue.as_deref()).await?;
    if ctx.json {
        let items = serde_json::to_value(&builds).unwrap_or_default();
        print_json(&items);
        return Ok(());
    }
    if builds.is_empty() {
        println!("no builds");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = builds
        .iter()
        .map(|b| {
            vec![
                b.build_id.clone(),
                if b.current_for.is_empty() {
                    "-".into()
                } else {
                    b.current_for.join(",")
                },
                b.pinned.to_string(),
                b.auto_upgrade.to_string(),
                b.not_started.to_string(),
                if b.drained() {
                    ctx.style.dim("drained")
                } else {
                    "in use".into()
                },
            ]
        })
        .collect();
    let header = [
        "BUILD",
        "CURRENT FOR",
        "PINNED",
        "AUTO-UPGRADE",
        "NOT STARTED",
        "STATE",
    ];
    println!("{}", table(&ctx.style, &header, &rows));
    Ok(())
}
