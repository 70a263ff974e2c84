//! The bench's `--http` workloads: (a), (b), (c) and (g) with the client in another process,
//! over loopback HTTP. This process runs the engine on the bench's store (SQLite by default,
//! its WAL warmed as for the in-process figures) and `wf_http::serve` on 127.0.0.1:0 with a
//! token; a child process (this binary run again with `--http-client URL`) drives it through
//! `Client::connect(url)` (pooled keep-alive connections, MessagePack bodies) and, for (b) and
//! (c), through plain JSON requests as curl or a web backend sends them. The child prints its
//! rows in the bench's format and a JSON line; this process prints the rows in turn.
//!
//! With `--tls` the same over HTTPS: the server has a certificate made for the run (a
//! throwaway CA, whose file the child trusts), and the figures are reported as `https_*`.

use super::{Counter, CounterClient};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use wf_sdk::http::ServeOptions;
use wf_sdk::prelude::*;

/// The token the bench's server asks for (a server off loopback needs one; checking it is
/// part of every request's cost).
pub const TOKEN: &str = "bench-token";

/// Serves the engine, runs the child, and prints its rows.
pub async fn bench_http(b: &mut super::Bench) -> Result<(), WfError> {
    let (engine, path) = b.engine("http", None).await?;
    super::warm_wal(&engine.client(), &path, b.args.memory).await?;
    // The bench cannot go on without its child process: a failure to run it ends the bench.
    let failed = |e: String| -> ! { panic!("(http) the client process: {e}") };
    let mut options = ServeOptions::default().token(TOKEN);
    let mut ca = None;
    if b.args.tls {
        let pki = throwaway_pki().unwrap_or_else(|e| failed(e));
        let files = pki
            .write_to(&b.dir.join("tls"))
            .unwrap_or_else(|e| failed(format!("writing the certificates: {e}")));
        options = options.tls(pki.server_tls());
        ca = Some(files.ca);
    }
    let server = wf_sdk::http::serve(&engine, "127.0.0.1:0", options).await?;
    let scheme = if ca.is_some() { "https" } else { "http" };
    let exe = std::env::current_exe().unwrap_or_else(|e| failed(e.to_string()));
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("--http-client")
        .arg(format!("{scheme}://{}", server.local_addr()))
        .kill_on_drop(true);
    if let Some(ca) = &ca {
        cmd.arg("--http-ca").arg(ca);
    }
    if b.args.quick {
        cmd.arg("--quick");
    }
    let out = cmd.output().await.unwrap_or_else(|e| failed(e.to_string()));
    let before = b.json.len();
    b.child_rows(&out, "(", &KEYS).unwrap_or_else(|e| failed(e));
    if ca.is_some() {
        // The same figures over HTTPS, under keys of their own.
        for (key, _) in &mut b.json[before..] {
            if let Some(i) = KEYS.iter().position(|k| k == key) {
                *key = TLS_KEYS[i];
            }
        }
    }
    server.shutdown().await?;
    engine.shutdown().await;
    Ok(())
}

/// The figures the child reports in its JSON line.
const KEYS: [&str; 7] = [
    "http_a_wf_per_s",
    "http_b_p50_ms",
    "http_b_p99_ms",
    "http_b_json_p50_ms",
    "http_c_p50_us",
    "http_c_json_p50_us",
    "http_g_signals_per_s",
];

/// [`KEYS`] over HTTPS (`--http --tls`).
const TLS_KEYS: [&str; 7] = [
    "https_a_wf_per_s",
    "https_b_p50_ms",
    "https_b_p99_ms",
    "https_b_json_p50_ms",
    "https_c_p50_us",
    "https_c_json_p50_us",
    "https_g_signals_per_s",
];

/// A throwaway CA and a server certificate for 127.0.0.1.
fn throwaway_pki() -> Result<wf_http::testing::TestPki, String> {
    wf_http::testing::TestPki::generate(&["localhost", "127.0.0.1"])
        .map_err(|e| format!("making a certificate: {e}"))
}

/// Rows and figures of the child, printed as the parent bench prints them.
#[derive(Default)]
struct Report {
    json: Vec<(&'static str, f64)>,
}

impl Report {
    fn row(&mut self, name: &str, value: String) {
        println!("{name:<58} {value}");
    }

    fn latencies(
        &mut self,
        name: &str,
        sorted: &[Duration],
        unit_us: bool,
        keys: [&'static str; 2],
    ) {
        let (p50, p99) = (
            super::percentile(sorted, 0.5),
            super::percentile(sorted, 0.99),
        );
        let (p50, p99, unit) = if unit_us {
            (super::us(p50), super::us(p99), "us")
        } else {
            (super::ms(p50), super::ms(p99), "ms")
        };
        let digits = if unit_us { 1 } else { 3 };
        self.row(
            name,
            format!("p50 {p50:.digits$} {unit}  p99 {p99:.digits$} {unit}"),
        );
        self.json.push((keys[0], p50));
        self.json.push((keys[1], p99));
    }
}

/// The child: the workloads through the remote client and through JSON, over HTTPS trusting
/// the CA file `ca` when given.
pub async fn client(url: String, ca: Option<PathBuf>, quick: bool) -> Result<(), WfError> {
    let mut connecting = Client::connect(url.clone()).token(TOKEN);
    if let Some(ca) = &ca {
        connecting = connecting.ca_file(ca);
    }
    let client = connecting.await?;
    let over = if ca.is_some() { "HTTPS" } else { "HTTP" };
    let mut json = Json::connect(&url, ca.as_deref()).await?;
    let mut r = Report::default();

    // (a) as in process: start, signal, await all, from 64 concurrent tasks.
    let n = if quick { 2_000 } else { 10_000 };
    super::waiters(&client, "http-a-warm", 200).await?;
    let rate = super::waiters(&client, "http-a", n).await?;
    r.row(
        &format!("(a) {n} workflows, start+signal+result, over {over}"),
        format!("{rate:>10.0} workflows/s"),
    );
    r.json.push(("http_a_wf_per_s", rate));

    // (b) 200 sequential updates, once to warm the connection and the run.
    let h = client.start::<Counter>("http-b", ()).await?;
    h.increment(1).await?;
    super::sequential_updates(&h).await?;
    let lat = timed(200, || async { h.increment(1).await.map(drop) }).await?;
    r.latencies(
        &format!("(b) 200 sequential updates over {over} (typed client)"),
        &lat,
        false,
        ["http_b_p50_ms", "http_b_p99_ms"],
    );
    let body = br#"{"name": "increment", "args": [1]}"#;
    let lat = json.timed(200, "/Counter/runs/http-b/update", body).await?;
    r.latencies(
        "(b)   the same as JSON requests",
        &lat,
        false,
        ["http_b_json_p50_ms", "http_b_json_p99_ms"],
    );

    // (c) 200 sequential queries on the cached run.
    let lat = timed(200, || async { h.value().await.map(drop) }).await?;
    r.latencies(
        &format!("(c) 200 sequential queries over {over} (typed client)"),
        &lat,
        true,
        ["http_c_p50_us", "http_c_p99_us"],
    );
    let body = br#"{"name": "value"}"#;
    let lat = json.timed(200, "/Counter/runs/http-b/query", body).await?;
    r.latencies(
        "(c)   the same as JSON requests",
        &lat,
        true,
        ["http_c_json_p50_us", "http_c_json_p99_us"],
    );

    // (g) signals to 100 workflows from many concurrent senders (one connection each).
    let total = if quick { 10_000 } else { 40_000 };
    for senders in [super::G_SENDERS, 64] {
        let rate =
            super::signal_burst(&client, &format!("http-g{senders}"), total, senders).await?;
        r.row(
            &format!("(g) {total} signals to 100 workflows, {senders} senders, {over}"),
            format!("{rate:>10.0} signals/s"),
        );
        if senders == super::G_SENDERS {
            r.json.push(("http_g_signals_per_s", rate));
        }
    }
    println!("{}", super::json_line(&r.json));
    Ok(())
}

/// Runs `call` `n` times in a row: the times, sorted.
async fn timed<F, Fut>(n: usize, mut call: F) -> Result<Vec<Duration>, WfError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), WfError>>,
{
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        call().await?;
        lat.push(t.elapsed());
    }
    lat.sort();
    Ok(lat)
}

/// Plain JSON requests on one keep-alive connection (TLS for `https://`), as a program
/// without the typed client sends them; each answer is read whole and parsed.
struct Json {
    authority: String,
    send: SendRequest<Full<Bytes>>,
}

impl Json {
    async fn connect(base: &str, ca: Option<&std::path::Path>) -> Result<Json, WfError> {
        let fail = |e: String| WfError::Interrupted(format!("JSON connection to {base}: {e}"));
        let authority = base
            .split_once("://")
            .map_or(base, |(_, rest)| rest)
            .to_string();
        let tcp = TcpStream::connect(&authority)
            .await
            .map_err(|e| fail(e.to_string()))?;
        tcp.set_nodelay(true).map_err(|e| fail(e.to_string()))?;
        let send = match ca {
            None => handshake(tcp).await,
            Some(ca) => {
                let connector = tokio_rustls::TlsConnector::from(Arc::new(tls_client(ca)?));
                let ip = tcp.peer_addr().map_err(|e| fail(e.to_string()))?.ip();
                let name = rustls::pki_types::ServerName::from(ip);
                let tls = connector
                    .connect(name, tcp)
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                handshake(tls).await
            }
        }
        .map_err(|e| fail(e.to_string()))?;
        Ok(Json { authority, send })
    }

    /// `n` POSTs of `body` to `path`, one after another: the times, sorted.
    async fn timed(
        &mut self,
        n: usize,
        path: &str,
        body: &'static [u8],
    ) -> Result<Vec<Duration>, WfError> {
        let fail = |e: String| WfError::Interrupted(format!("JSON request to {path}: {e}"));
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n + 10 {
            let t = Instant::now();
            let req = hyper::Request::post(path)
                .header("host", self.authority.as_str())
                .header("authorization", format!("Bearer {TOKEN}"))
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from_static(body)))
                .map_err(|e| fail(e.to_string()))?;
            self.send.ready().await.map_err(|e| fail(e.to_string()))?;
            let res = self
                .send
                .send_request(req)
                .await
                .map_err(|e| fail(e.to_string()))?;
            let status = res.status();
            let bytes = res
                .into_body()
                .collect()
                .await
                .map_err(|e| fail(e.to_string()))?
                .to_bytes();
            let answer: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| fail(e.to_string()))?;
            if !status.is_success() || !answer["value"].is_u64() {
                return Err(fail(format!("{status}: {answer}")));
            }
            lat.push(t.elapsed());
        }
        // The first requests warm the connection.
        lat.drain(..10);
        lat.sort();
        Ok(lat)
    }
}

/// An HTTP/1.1 connection over `io`, driven by a task of its own.
async fn handshake<S>(io: S) -> hyper::Result<SendRequest<Full<Bytes>>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(conn);
    Ok(send)
}

/// rustls on `ring`, trusting the CA file `ca`.
fn tls_client(ca: &std::path::Path) -> Result<rustls::ClientConfig, WfError> {
    use rustls::pki_types::pem::PemObject;
    let fail = |e: String| WfError::InvalidArgument(format!("the CA {}: {e}", ca.display()));
    let mut roots = rustls::RootCertStore::empty();
    for cert in
        rustls::pki_types::CertificateDer::pem_file_iter(ca).map_err(|e| fail(e.to_string()))?
    {
        roots
            .add(cert.map_err(|e| fail(e.to_string()))?)
            .map_err(|e| fail(e.to_string()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| fail(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}
