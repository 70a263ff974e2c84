//! Repairing one run: `wf reset`, `wf fork`, `wf resume`, `wf delete`.

use super::{print_json, Ctx};
use crate::args::ResetArgs;
use crate::exit::Failure;
use serde_json::json;
use wf_core::{RepairAction, RepairRequest, ResetPoint};

/// `wf reset ID (--to first-task | --to last-good-task | --to-event N) [--drop-messages]
/// [--reason R]`.
pub async fn reset(ctx: &Ctx<'_>, args: ResetArgs) -> Result<(), Failure> {
    let to = match (args.to.as_deref(), args.to_event) {
        (Some("first-task"), _) => ResetPoint::FirstTask,
        (Some(_), _) => ResetPoint::LastGoodTask,
        (None, Some(n)) => ResetPoint::Event(n),
        // clap requires one of the two.
        (None, None) => ResetPoint::LastGoodTask,
    };
    let action = RepairAction::Reset {
        to,
        drop_messages: args.drop_messages,
    };
    run(ctx, &args.id, action, &args.reason).await
}

/// Sends a repair of `id`'s latest run and prints what it did.
pub async fn run(
    ctx: &Ctx<'_>,
    id: &str,
    action: RepairAction,
    reason: &str,
) -> Result<(), Failure> {
    let verb = match &action {
        RepairAction::Reset { .. } => "reset",
        RepairAction::Fork { .. } => "forked",
        RepairAction::Resume => "resumed",
        RepairAction::Delete => "deleted",
    };
    let request = RepairRequest::new(id, action).reason(reason);
    let report = ctx.session.client.repair(request).await?;
    if ctx.json {
        print_json(&json!({
            "workflow_id": id,
            "status": verb,
            "run": {"workflow_id": report.workflow_id, "run_id": report.run_id},
        }));
    } else if verb == "deleted" {
        println!("{id} deleted (run {})", report.run_id);
    } else {
        println!(
            "{id} {verb}: {} goes on as run {}",
            report.workflow_id, report.run_id
        );
    }
    Ok(())
}
