//! HTTPS itself, over real TLS on 127.0.0.1 with certificates made when the tests run: client
//! certificates (mTLS), refusals that say what to fix (another CA, another name, no client
//! certificate, a key that is not the certificate's), no HTTP answer to plain HTTP on the TLS
//! port, HTTP/2 by ALPN, handshakes that cannot hold up the accept loop, and a graceful stop
//! that answers the requests in flight.

#[macro_use]
mod common;

use common::{pki, served, AgentInput, AgentRun, AgentRunClient, Net, TOKEN};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wf_http::testing::TestPki;
use wf_http::{ClientTls, ConnectExt, ServeOptions, TlsConfig};
use wf_sdk::prelude::*;

fn https(server: &wf_http::Server) -> String {
    format!("https://{}", server.local_addr())
}

/// The message of a connection that must fail, checked not to be retryable.
async fn refused(connecting: wf_http::Connecting) -> String {
    match connecting.await {
        Ok(_) => panic!("the connection was accepted"),
        Err(e) => {
            assert!(!e.is_retryable(), "a TLS refusal is not retryable: {e}");
            e.to_string()
        }
    }
}

#[tokio::test]
async fn mutual_tls_takes_the_clients_certificate_and_refuses_the_others() {
    let engine = common::engine().await;
    let options = ServeOptions::default()
        .token(TOKEN)
        .tls(pki().mtls_server());
    let server = wf_http::serve(&engine, "127.0.0.1:0", options)
        .await
        .unwrap();

    // The certificate and the CA from files, as an operator gives them.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wf-http-mtls-{}", std::process::id()));
    let files = pki().write_to(&dir).unwrap();
    let client = Client::connect(https(&server))
        .token(TOKEN)
        .ca_file(&files.ca)
        .client_cert(&files.client_cert, &files.client_key)
        .await
        .expect("a client with its certificate connects");
    let input = AgentInput {
        goal: "mtls".into(),
        step: 0,
    };
    let h = client.start::<AgentRun>("mtls-1", input).await.unwrap();
    assert_eq!(h.status().await.unwrap().goal, "mtls");

    let none = refused(Client::connect(https(&server)).tls(pki().client_tls())).await;
    assert!(
        none.contains("requires a client certificate") && none.contains("--cert FILE"),
        "{none}"
    );
    // A certificate from another CA than the one the server trusts for clients.
    let stranger = TestPki::generate(&["localhost"]).unwrap();
    let other = pki().client_tls().client_cert_pem(
        stranger.client_cert_pem.as_bytes(),
        stranger.client_key_pem.as_bytes(),
    );
    let other = refused(Client::connect(https(&server)).tls(other)).await;
    assert!(
        other.contains("refused this client's certificate"),
        "{other}"
    );
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_server_signed_by_another_ca_or_for_another_name_is_refused() {
    let (_engine, server) = served(Net::Https, ServeOptions::default()).await;
    let stranger = TestPki::generate(&["localhost", "127.0.0.1"]).unwrap();
    let wrong_ca = refused(Client::connect(https(&server)).tls(stranger.client_tls())).await;
    assert!(
        wrong_ca.contains(
            "the server's certificate is not signed by a CA this client trusts (--ca FILE)"
        ),
        "{wrong_ca}"
    );
    // The system's roots do not hold the test CA either.
    let system = refused(Client::connect(https(&server))).await;
    assert!(system.contains("not signed by a CA"), "{system}");

    let engine = common::engine().await;
    let elsewhere = TestPki::generate(&["wf.example"]).unwrap();
    let options = ServeOptions::default().tls(elsewhere.server_tls());
    let named = wf_http::serve(&engine, "127.0.0.1:0", options)
        .await
        .unwrap();
    let mismatch = refused(Client::connect(https(&named)).tls(elsewhere.client_tls())).await;
    assert!(
        mismatch.contains("is not for 127.0.0.1") && mismatch.contains("wf.example"),
        "{mismatch}"
    );
    named.shutdown().await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn plain_http_to_the_tls_port_gets_no_http_answer() {
    let (_engine, server) = served(Net::Https, ServeOptions::default()).await;
    let mut tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut got))
        .await
        .expect("the server closes the connection")
        .ok();
    assert!(
        !got.starts_with(b"HTTP/"),
        "an HTTP answer: {:?}",
        String::from_utf8_lossy(&got)
    );
    // The server goes on for TLS clients.
    let http = Net::Https.http(&server, None);
    assert_eq!(http.get("/healthz").await.status, 200);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn http2_is_served_when_alpn_asks_for_it() {
    let (_engine, server) = served(Net::Https, ServeOptions::default()).await;
    let connector =
        tokio_rustls::TlsConnector::from(Arc::new(common::rustls_client(&[b"h2", b"http/1.1"])));
    let tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::from(server.local_addr().ip());
    let tls = connector.connect(name, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = hyper::Request::get(format!("https://{}/healthz", server.local_addr()))
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let res = send.send_request(req).await.unwrap();
    assert_eq!(res.version(), hyper::Version::HTTP_2);
    assert_eq!(res.status(), 200);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("ok"), "{body:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_stalled_handshake_holds_up_no_one_and_runs_out_of_time() {
    let engine = common::engine().await;
    let tls = pki()
        .server_tls()
        .handshake_timeout(Duration::from_millis(300));
    let server = wf_http::serve(&engine, "127.0.0.1:0", ServeOptions::default().tls(tls))
        .await
        .unwrap();
    // Connected, and silent: no ClientHello.
    let mut silent = TcpStream::connect(server.local_addr()).await.unwrap();
    let http = Net::Https.http(&server, None);
    assert_eq!(http.get("/healthz").await.status, 200);
    let mut buf = [0u8; 16];
    let closed = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf))
        .await
        .expect("the server drops a handshake that takes too long");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    server.shutdown().await.unwrap();
}

both_ways!(
    #[tokio::test]
    a_graceful_stop_answers_the_requests_in_flight
);
async fn a_graceful_stop_answers_the_requests_in_flight(net: Net) {
    let (engine, server) = served(net, ServeOptions::default().token(TOKEN)).await;
    let client = net.connect(&server).token(TOKEN).await.unwrap();
    let input = AgentInput {
        goal: "g".into(),
        step: 0,
    };
    let h = client.start::<AgentRun>("graceful", input).await.unwrap();
    // An update that waits until the run is paused: in flight while the server stops.
    let waiting = tokio::spawn({
        let h = h.clone();
        async move { h.when_paused().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stopping = tokio::spawn(server.shutdown());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!stopping.is_finished(), "the stop waits for the update");
    engine
        .client()
        .handle::<AgentRun>("graceful")
        .pause()
        .await
        .unwrap();
    let step = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the update is answered")
        .unwrap();
    assert!(step.is_ok(), "{step:?}");
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the server stops once the update is answered")
        .unwrap()
        .unwrap();
}

#[test]
fn tls_settings_that_cannot_work_are_refused_where_they_are_made() {
    let other = TestPki::generate(&["localhost"]).unwrap();
    let mismatched = TlsConfig::from_pem(
        pki().server_cert_pem.as_bytes(),
        other.server_key_pem.as_bytes(),
    )
    .unwrap_err();
    assert!(
        mismatched.to_string().contains("do not go together"),
        "{mismatched}"
    );
    let missing = TlsConfig::from_pem_files("/nonexistent/server.pem", "/nonexistent/server.key")
        .unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/server.pem"),
        "{missing}"
    );
    let swapped = TlsConfig::from_pem(
        pki().server_key_pem.as_bytes(),
        pki().server_cert_pem.as_bytes(),
    )
    .unwrap_err();
    assert!(
        swapped.to_string().contains("no PEM certificate"),
        "{swapped}"
    );
    let not_a_ca = pki().server_tls().client_ca_pem(b"nothing".to_vec());
    assert!(not_a_ca.is_err());
    // A client certificate without its key fails when connecting, naming the file.
    let tls = ClientTls::new()
        .ca_pem(pki().ca_pem.as_bytes())
        .client_cert_files("/nonexistent/me.pem", "/nonexistent/me.key");
    let e = wf_http::HttpTransport::new("https://127.0.0.1:1", None, &tls).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/me.pem"), "{e}");
}

/// Keeps the message of every warning logged on this thread.
#[derive(Default, Clone)]
struct Warnings(Arc<std::sync::Mutex<Vec<String>>>);

impl tracing::Subscriber for Warnings {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() == tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    *self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = String::new();
        event.record(&mut Message(&mut message));
        self.0.lock().unwrap().push(message);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn plain_http_off_loopback_warns_that_tokens_travel_in_clear_text() {
    let warnings = Warnings::default();
    let _scope = tracing::subscriber::set_default(warnings.clone());
    let engine = common::engine().await;
    let loopback = wf_http::serve(&engine, "127.0.0.1:0", ServeOptions::default().token(TOKEN))
        .await
        .unwrap();
    let https = ServeOptions::default().token(TOKEN).tls(pki().server_tls());
    let secure = wf_http::serve(&engine, "0.0.0.0:0", https).await.unwrap();
    assert!(warnings.0.lock().unwrap().is_empty(), "{:?}", warnings.0);
    let plain = wf_http::serve(&engine, "0.0.0.0:0", ServeOptions::default().token(TOKEN))
        .await
        .unwrap();
    let seen = warnings.0.lock().unwrap().clone();
    assert!(
        seen.len() == 1 && seen[0].contains("the bearer tokens and the data travel in clear text"),
        "{seen:?}"
    );
    for server in [loopback, secure, plain] {
        server.shutdown().await.unwrap();
    }
}
