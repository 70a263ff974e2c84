//! Serves the agent_run and cart workflows over HTTP (see the guide's chapter "Serving over HTTP").
//!
//! `cargo run --release --example serve -- --addr 127.0.0.1:8233 [--token T] [--tokens FILE]
//! [--db FILE] [--tls-cert FILE --tls-key FILE [--client-ca FILE]]`
//!
//! `--token T` is one admin token; `--tokens FILE` reads one `ROLE TOKEN` per line (ROLE is
//! read, write or admin; `#` comment lines), both may be given. Without `--db` the runs live
//! in memory. Off loopback a token is required. With `--tls-cert` and `--tls-key` (PEM) it
//! serves HTTPS; `--client-ca` then requires client certificates signed by that CA (mTLS).
//! Stops cleanly on Ctrl-C.
//!
//! An agent_run writes each step to its stream `steps`; follow it with
//! `curl -N http://127.0.0.1:8233/agent_run/runs/ID/streams/steps?from=0`.

// The workflows come from their own examples (each also loads the demo database helper, which
// this program does not use).
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "agent_run.rs"]
pub mod agent_run;
#[allow(dead_code)]
#[path = "cart.rs"]
pub mod cart;

use std::sync::Arc;
use std::time::Duration;
use wf_sdk::engine::EngineBuilder;
use wf_sdk::http::{serve, ServeOptions, TlsConfig, Tokens};
use wf_sdk::prelude::*;

/// The engine this program serves, on `builder`'s store: agent_run and cart with their
/// activities.
pub async fn engine(builder: EngineBuilder) -> Result<Engine, WfError> {
    builder
        .poll_interval(Duration::from_millis(50))
        .workflow::<agent_run::AgentRun>()
        .shared_activities(Arc::new(agent_run::Tools::default()))
        .workflow::<cart::Cart>()
        .activities(cart::Shop::default())
        .build()
        .await
}

struct Args {
    addr: String,
    token: Option<String>,
    tokens: Option<String>,
    db: Option<String>,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    client_ca: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        addr: "127.0.0.1:8233".into(),
        token: None,
        tokens: None,
        db: None,
        tls_cert: None,
        tls_key: None,
        client_ca: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => out.addr = value()?,
            "--token" => out.token = Some(value()?),
            "--tokens" => out.tokens = Some(value()?),
            "--db" => out.db = Some(value()?),
            "--tls-cert" => out.tls_cert = Some(value()?),
            "--tls-key" => out.tls_key = Some(value()?),
            "--client-ca" => out.client_ca = Some(value()?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(out)
}

/// The TLS of `--tls-cert`, `--tls-key` and `--client-ca`; `None` for plain HTTP.
fn tls(args: &Args) -> Result<Option<TlsConfig>, Box<dyn std::error::Error>> {
    let (cert, key) = match (&args.tls_cert, &args.tls_key, &args.client_ca) {
        (Some(cert), Some(key), _) => (cert, key),
        (None, None, None) => return Ok(None),
        (None, None, Some(_)) => return Err("--client-ca needs --tls-cert and --tls-key".into()),
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    let tls = TlsConfig::from_pem_files(cert, key)?;
    Ok(Some(match &args.client_ca {
        Some(ca) => tls.client_ca_file(ca)?,
        None => tls,
    }))
}

const USAGE: &str = "serve [--addr HOST:PORT] [--token T] [--tokens FILE] [--db FILE] \
                     [--tls-cert FILE --tls-key FILE [--client-ca FILE]]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args().map_err(|e| format!("{e}\nusage: {USAGE}"))?;
    // Read before the engine opens: a bad line or certificate stops the program at once.
    let tokens = match &args.tokens {
        Some(file) => Tokens::from_file(file)?,
        None => Tokens::new(),
    };
    let tls = tls(&args).map_err(|e| format!("{e}\nusage: {USAGE}"))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mtls = args.client_ca.is_some();
    let builder = match &args.db {
        Some(path) => Engine::builder().sqlite(path),
        None => Engine::builder().memory(),
    };
    let engine = engine(builder).await?;
    let guarded = args.token.is_some() || !tokens.is_empty();
    let options = ServeOptions {
        token: args.token.clone(),
        tokens,
        tls,
        ..ServeOptions::default()
    };
    let server = serve(&engine, args.addr.as_str(), options).await?;
    println!(
        "serving agent_run and cart on {scheme}://{} ({}, {}{})",
        server.local_addr(),
        args.db
            .as_deref()
            .map_or("in memory".to_string(), |d| format!("SQLite file {d}")),
        if guarded {
            "token required"
        } else {
            "no token"
        },
        if mtls {
            ", client certificates required"
        } else {
            ""
        }
    );
    tokio::signal::ctrl_c().await?;
    println!("stopping");
    server.shutdown().await?;
    engine.shutdown().await;
    Ok(())
}
