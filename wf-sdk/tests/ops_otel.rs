//! The `otel` feature end to end: spans of a run reach an OTLP/HTTP collector (`otlp`'s).
//! `ops_otel_https.rs` does the same over HTTPS, in a process of its own: each installs the
//! process's subscriber.
#![cfg(feature = "otel")]

mod otlp;

use otlp::{check_spans, collector, run_traced};
use wf_sdk::otel::Otel;

#[tokio::test]
async fn spans_reach_an_otlp_collector() {
    let (url, seen) = collector(None);
    let otel = Otel::otlp("wf-otel-test", Some(&url)).unwrap();
    otel.install(tracing::Level::DEBUG).unwrap();
    run_traced("otel-1").await;
    otel.shutdown().unwrap();
    check_spans(&seen, "otel-1");
}
