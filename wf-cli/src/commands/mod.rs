//! The commands, one file per family: runs (list, describe, history, export), messages
//! (signal, update, query, cancel, terminate), repairs (reset, fork, resume, delete), asynchronous activity completion, schedules,
//! builds (worker versioning), purge (retention), streams (`wf stream`), the feed (`wf events`), and replay checks.
//!
//! May import: `args`, `exit`, `render`, `target`.

mod activities;
mod batches;
mod builds;
mod feed;
mod messages;
mod purge;
mod queues;
mod repair;
mod replay;
mod runs;
mod schedules;
mod streams;
mod workflow_queues;

use crate::args::{Cli, Command};
use crate::exit::Failure;
use crate::render::Style;
use crate::target::Session;
use wf_core::RepairAction;

/// What every command gets: the parsed line, the output style, and (but for `replay`) a
/// session.
pub struct Ctx<'a> {
    /// `--json`.
    pub json: bool,
    /// Colours or not.
    pub style: Style,
    /// The open session.
    pub session: &'a Session,
}

/// Runs the command line.
pub async fn run(cli: Cli) -> Result<(), Failure> {
    let style = Style::detect();
    if let Command::Replay { history, exec } = &cli.command {
        return replay::run(&style, cli.json, history, exec);
    }
    let session = Session::open(&cli.target).await?;
    let ctx = Ctx {
        json: cli.json,
        style,
        session: &session,
    };
    let result = dispatch(&ctx, cli.command).await;
    session.close().await;
    result
}

async fn dispatch(ctx: &Ctx<'_>, command: Command) -> Result<(), Failure> {
    match command {
        Command::List(args) => runs::list(ctx, args).await,
        Command::Describe { id } => runs::describe(ctx, &id).await,
        Command::History { id, follow } => runs::history(ctx, &id, follow).await,
        Command::Export(args) => runs::export(ctx, args).await,
        Command::Signal {
            id,
            name,
            args_json,
            signal_id,
        } => messages::signal(ctx, &id, &name, &args_json, signal_id).await,
        Command::Update {
            id,
            name,
            args_json,
            update_id,
            timeout,
        } => messages::update(ctx, &id, &name, &args_json, update_id, timeout).await,
        Command::Query {
            id,
            name,
            args_json,
            at_event,
        } => messages::query(ctx, &id, &name, &args_json, at_event).await,
        Command::Cancel { id, reason } => messages::cancel(ctx, &id, &reason).await,
        Command::Start {
            workflow_type,
            id,
            input_json,
            start_delay,
        } => messages::start(ctx, &workflow_type, &id, &input_json, start_delay).await,
        Command::Result { id, wait } => messages::result(ctx, &id, wait).await,
        Command::Stream { id, name, from } => streams::stream(ctx, &id, &name, from).await,
        Command::Events {
            workflow_type,
            id,
            kind,
            after,
            follow,
        } => {
            let args = feed::EventsArgs {
                workflow_type,
                workflow_id: id,
                kinds: kind,
                after,
                follow,
            };
            feed::events(ctx, args).await
        }
        Command::Pause { id, reason } => messages::pause(ctx, &id, &reason).await,
        Command::Unpause { id } => messages::unpause(ctx, &id).await,
        Command::Count(args) => runs::count(ctx, args).await,
        Command::Terminate { id, reason } => messages::terminate(ctx, &id, &reason).await,
        Command::Reset(args) => repair::reset(ctx, args).await,
        Command::Fork {
            id,
            new_id,
            at_event,
            reason,
        } => {
            let action = RepairAction::Fork {
                new_workflow_id: new_id,
                at_event,
            };
            repair::run(ctx, &id, action, &reason).await
        }
        Command::Resume { id, reason } => {
            repair::run(ctx, &id, RepairAction::Resume, &reason).await
        }
        Command::Delete { id, reason } => {
            repair::run(ctx, &id, RepairAction::Delete, &reason).await
        }
        Command::Schedule(command) => schedules::run(ctx, command).await,
        Command::Batch(command) => batches::run(ctx, command).await,
        Command::Activity(command) => activities::run(ctx, command).await,
        Command::Builds(args) => builds::run(ctx, args).await,
        Command::Queues(command) => queues::run(ctx, command).await,
        Command::Purge {
            closed_before,
            dry_run,
            batch,
        } => purge::run(ctx, closed_before, dry_run, batch).await,
        // Handled in `run`, before a session is opened.
        Command::Replay { .. } => Ok(()),
    }
}

/// Prints a JSON value, pretty.
pub fn print_json(value: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    );
}
