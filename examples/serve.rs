//! Serves the agent_run and cart workflows over HTTP (see the guide's chapter "Serving over HTTP").
//!
//! `cargo run --release --example serve -- --addr 127.0.0.1:8233 [--token T] [--tokens FILE] [--db FILE]`
//!
//! `--token T` is one admin token; `--tokens FILE` reads one `ROLE TOKEN` per line (ROLE is
//! read, write or admin; `#` comment lines), both may be given. Without `--db` the runs live
//! in memory. Off loopback a token is required. Stops cleanly on Ctrl-C.

// The workflows come from their own examples (each also loads the demo database helper, which
// this program does not use).
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "agent_run.rs"]
mod agent_run;
#[allow(dead_code)]
#[path = "cart.rs"]
mod cart;

use std::sync::Arc;
use std::time::Duration;
use wf_sdk::http::{serve, ServeOptions, Tokens};
use wf_sdk::prelude::*;

struct Args {
    addr: String,
    token: Option<String>,
    tokens: Option<String>,
    db: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        addr: "127.0.0.1:8233".into(),
        token: None,
        tokens: None,
        db: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => out.addr = value()?,
            "--token" => out.token = Some(value()?),
            "--tokens" => out.tokens = Some(value()?),
            "--db" => out.db = Some(value()?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(out)
}

const USAGE: &str = "serve [--addr HOST:PORT] [--token T] [--tokens FILE] [--db FILE]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args().map_err(|e| format!("{e}\nusage: {USAGE}"))?;
    // Read before the engine opens: a bad line stops the program at once.
    let tokens = match &args.tokens {
        Some(file) => Tokens::from_file(file)?,
        None => Tokens::new(),
    };
    let builder = match &args.db {
        Some(path) => Engine::builder().sqlite(path),
        None => Engine::builder().memory(),
    };
    let engine = builder
        .poll_interval(Duration::from_millis(50))
        .workflow::<agent_run::AgentRun>()
        .shared_activities(Arc::new(agent_run::Tools::default()))
        .workflow::<cart::Cart>()
        .activities(cart::Shop::default())
        .build()
        .await?;
    let guarded = args.token.is_some() || !tokens.is_empty();
    let options = ServeOptions {
        token: args.token.clone(),
        tokens,
        ..ServeOptions::default()
    };
    let server = serve(&engine, args.addr.as_str(), options).await?;
    println!(
        "serving agent_run and cart on http://{} ({}, {})",
        server.local_addr(),
        args.db
            .as_deref()
            .map_or("in memory".to_string(), |d| format!("SQLite file {d}")),
        if guarded {
            "token required"
        } else {
            "no token"
        }
    );
    tokio::signal::ctrl_c().await?;
    println!("stopping");
    server.shutdown().await?;
    engine.shutdown().await;
    Ok(())
}
