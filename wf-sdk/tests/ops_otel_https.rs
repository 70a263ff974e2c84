//! The `otel` feature to an HTTPS collector: its certificate made when the test runs, its CA
//! given to the exporter as a file (`Otel::otlp_with_ca`). A process of its own, as `ops_otel.rs`:
//! each installs the process's subscriber.
#![cfg(feature = "otel")]

mod otlp;

use otlp::{check_spans, collector, collector_tls, run_traced};
use wf_sdk::otel::Otel;

#[tokio::test]
async fn spans_reach_an_https_collector_trusting_its_ca() {
    let pki = wf_http::testing::TestPki::generate(&["localhost", "127.0.0.1"]).unwrap();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wf-otel-tls-{}", std::process::id()));
    let files = pki.write_to(&dir).unwrap();
    let (url, seen) = collector(Some(collector_tls(&pki)));
    assert!(url.starts_with("https://"));
    let otel = Otel::otlp_with_ca("wf-otel-test", Some(&url), &files.ca).unwrap();
    otel.install(tracing::Level::DEBUG).unwrap();
    run_traced("otel-tls").await;
    otel.shutdown().unwrap();
    check_spans(&seen, "otel-tls");

    // A CA file that is not there is refused when the exporter is made, naming it.
    let missing = Otel::otlp_with_ca("wf-otel-test", Some(&url), dir.join("nope.pem"));
    assert!(
        matches!(&missing, Err(e) if e.to_string().contains("nope.pem")),
        "{missing:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
