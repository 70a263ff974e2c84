//! Lesson 8, HTTP: with wf-sdk's `http` feature, an engine serves its workflows over HTTP
//! (JSON for any language, the web view at `/ui/`), and `Client::connect` gives another
//! process the same typed handles and errors as in-process code.
//!
//! `cargo run --example http`

use wf_sdk::http::{serve, ServeOptions};
use wf_sdk::prelude::*;

/// A ticket that takes notes until it is closed.
#[derive(Default)]
pub struct Ticket {
    open: bool,
    notes: Vec<String>,
}

#[workflow(name = "ticket")]
impl Ticket {
    #[init]
    fn new(_title: &String) -> Self {
        Ticket {
            open: true,
            notes: Vec::new(),
        }
    }

    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, title: String) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| !s.open).await;
        Ok(ctx.state(|s| format!("{title}: closed after {} notes", s.notes.len())))
    }

    #[signal]
    fn close(&mut self) {
        self.open = false;
    }

    #[update]
    fn note(&mut self, text: String) -> Result<usize, UpdateError> {
        self.notes.push(text);
        Ok(self.notes.len())
    }
}

/// Serves an engine on a free port of 127.0.0.1 and drives a ticket through the remote client.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let engine = Engine::builder()
        .memory()
        .workflow::<Ticket>()
        .build()
        .await?;
    // Port 0: the system picks a free one. A token guards every route but the health checks.
    let server = serve(
        &engine,
        "127.0.0.1:0",
        ServeOptions::default().token("s3cret"),
    )
    .await?;
    let url = format!("http://{}", server.local_addr());
    println!("serving on {url} (the web view: {url}/ui/)");

    // What another process would do: connect, then use typed handles as in process.
    let remote = Client::connect(&url).token("s3cret").await?;
    let ticket = remote
        .start::<Ticket>("ticket-9", "printer on fire".to_string())
        .await?;
    // An update id makes a retried update answer its first outcome instead of running again.
    let note = || {
        ticket
            .note("tried turning it off".into())
            .update_id("note-1")
    };
    assert_eq!(note().await?, 1);
    assert_eq!(note().await?, 1); // the retry: still one note
    ticket.close().await?;
    let outcome = ticket.result().await?;
    println!("{outcome}");
    assert_eq!(outcome, "printer on fire: closed after 1 notes");

    server.shutdown().await?; // lets requests in flight finish
    engine.shutdown().await;
    Ok(())
}
