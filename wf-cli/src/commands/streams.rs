//! `wf stream ID NAME [--from N]`: a run's stream entries, printed as they commit.

use super::messages::value_json;
use super::Ctx;
use crate::exit::Failure;
use serde_json::json;
use wf_core::client::{StreamRead, STREAM_PAGE};

/// `wf stream ID NAME [--from N]`: pages through the stream with the client's transport
/// (waiting for new entries when it has caught up: an engine's wake-ups with --db and
/// --postgres, the server's event stream with --url) and prints each entry once, in offset
/// order, until the close or the run's end.
pub async fn stream(ctx: &Ctx<'_>, id: &str, name: &str, from: u64) -> Result<(), Failure> {
    let transport = ctx.session.client.transport();
    let mut read = StreamRead {
        workflow_id: id.to_string(),
        run_id: None,
        stream: name.to_string(),
        from,
        max: STREAM_PAGE,
        wait: true,
    };
    loop {
        let page = transport.read_stream(read.clone()).await?;
        let ended = page.ended(read.max);
        read.run_id = Some(page.run_id);
        for entry in page.entries {
            if entry.offset < read.from {
                continue;
            }
            read.from = entry.offset + 1;
            let Some(value) = entry.value else {
                return Ok(());
            };
            let value = value_json(&value);
            if ctx.json {
                // One compact object a line, so that a pipe reads each entry as it comes.
                println!("{}", json!({ "offset": entry.offset, "value": value }));
            } else {
                println!("{}\t{value}", entry.offset);
            }
        }
        if ended {
            return Ok(());
        }
    }
}
