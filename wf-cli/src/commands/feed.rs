//! `wf events [--type T] [--id ID] [--kind K].. [--after CURSOR] [--follow]`: the feed of
//! what runs do, printed in feed order.

use super::Ctx;
use crate::exit::Failure;
use crate::render::iso8601_ms;
use wf_core::{FeedCursor, FeedFilter, FeedKind};

/// What `wf events` reads.
pub struct EventsArgs {
    /// `--type`.
    pub workflow_type: Option<String>,
    /// `--id`.
    pub workflow_id: Option<String>,
    /// `--kind`, repeated.
    pub kinds: Vec<FeedKind>,
    /// `--after`.
    pub after: FeedCursor,
    /// `--follow`.
    pub follow: bool,
}

/// `wf events`: reads the feed with the client's reader (an engine's store with --db and
/// --postgres, `GET /_events` with --url) and prints each event once, in feed order: what is
/// kept, then, with --follow, new events as they commit.
pub async fn events(ctx: &Ctx<'_>, args: EventsArgs) -> Result<(), Failure> {
    let mut filter = FeedFilter::new().kinds(args.kinds);
    filter.workflow_type = args.workflow_type;
    filter.workflow_id = args.workflow_id;
    let mut reader = ctx
        .session
        .client
        .events(filter)
        .from(args.after)
        .follow(args.follow);
    while let Some(event) = reader.next().await {
        let event = event?;
        if ctx.json {
            // One compact object a line, so that a pipe reads each event as it comes.
            let line = serde_json::to_string(&event).unwrap_or_else(|_| "{}".into());
            println!("{line}");
        } else {
            let detail = serde_json::to_string(&event.detail).unwrap_or_default();
            println!(
                "{}\t{}\t{}\t{}\t{}\t{}",
                event.cursor,
                iso8601_ms(event.at_ms),
                event.kind,
                event.workflow_type,
                event.workflow_id,
                if detail == "{}" { "" } else { detail.as_str() }
            );
        }
    }
    Ok(())
}
