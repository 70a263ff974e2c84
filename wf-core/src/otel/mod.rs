//! Exporting spans with OpenTelemetry (feature `otel`): wf's spans (`workflow_task`,
//! `activation`, `signal`, `update`, `query`, `activity_attempt`, `commit`, `group_commit`,
//! `replay`), and the application's, sent to a collector over OTLP/HTTP with protobuf bodies.
//!
//! ```no_run
//! # fn demo() -> Result<(), wf_core::otel::OtelError> {
//! // Spans go to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318) in batches.
//! let otel = wf_core::otel::Otel::otlp("my-service", None)?;
//! otel.install(tracing::Level::DEBUG)?; // DEBUG: activations, handlers and commits too
//! // ... build the engine, run workflows ...
//! otel.shutdown()?; // flushes the spans not sent yet
//! # Ok(()) }
//! ```
//!
//! To keep a subscriber of your own (a log formatter, filters), add [`Otel::layer`] to it
//! instead of calling [`Otel::install`].
//!
//! An `https://` collector is verified against the system's CAs, or the CA file that
//! [`Otel::otlp_with_ca`] or `OTEL_EXPORTER_OTLP_CERTIFICATE` names; a client certificate
//! comes from `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE` and `OTEL_EXPORTER_OTLP_CLIENT_KEY`
//! (each also as `OTEL_EXPORTER_OTLP_TRACES_...`). TLS is rustls on `ring`.
//!
//! May import nothing else of the crate: it only ships what `tracing` records.

mod tls;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use std::path::Path;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Why setting up or stopping the exporter failed.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry export: {0}")]
pub struct OtelError(String);

/// An OpenTelemetry span exporter: a tracer provider with a batch exporter. Spans reach it
/// through [`layer`](Self::layer) or [`install`](Self::install); [`shutdown`](Self::shutdown)
/// flushes what is left.
#[derive(Debug, Clone)]
pub struct Otel {
    provider: SdkTracerProvider,
}

impl Otel {
    /// Exports to an OTLP/HTTP collector as `service_name`: at `endpoint`, the full URL of its
    /// traces route (`http://collector:4318/v1/traces`), or when `None` where the
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` variables say
    /// (default `http://localhost:4318/v1/traces`). Spans are sent in batches from a thread
    /// of the SDK's; an unreachable collector costs dropped spans, never a stalled engine.
    pub fn otlp(
        service_name: impl Into<String>,
        endpoint: Option<&str>,
    ) -> Result<Otel, OtelError> {
        Self::with_tls(service_name.into(), endpoint, tls::CollectorTls::from_env())
    }

    /// [`otlp`](Self::otlp) to an `https://` collector whose certificate the CAs of the PEM
    /// file `ca` sign (instead of the system's CAs, or `OTEL_EXPORTER_OTLP_CERTIFICATE`'s).
    pub fn otlp_with_ca(
        service_name: impl Into<String>,
        endpoint: Option<&str>,
        ca: impl AsRef<Path>,
    ) -> Result<Otel, OtelError> {
        let mut tls = tls::CollectorTls::from_env();
        tls.ca = Some(ca.as_ref().to_path_buf());
        Self::with_tls(service_name.into(), endpoint, tls)
    }

    fn with_tls(
        service_name: String,
        endpoint: Option<&str>,
        tls: tls::CollectorTls,
    ) -> Result<Otel, OtelError> {
        let endpoint = endpoint.map(str::to_string);
        // The blocking HTTP client must not be made (or later dropped) on an async runtime's
        // thread: make it on a thread of its own.
        let exporter = std::thread::spawn(move || {
            let builder = SpanExporter::builder()
                .with_http()
                .with_http_client(tls.client()?);
            let builder = match endpoint {
                Some(url) => builder.with_endpoint(url),
                None => builder,
            };
            builder.build().map_err(|e| OtelError(e.to_string()))
        })
        .join()
        .map_err(|_| OtelError("building the OTLP exporter panicked".into()))??;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(service_name).build())
            .build();
        Ok(Otel { provider })
    }

    /// The `tracing` layer that hands spans to this exporter, for a subscriber of your own.
    pub fn layer<S>(&self) -> OpenTelemetryLayer<S, SdkTracer>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer("wf"))
    }

    /// Makes a subscriber that exports spans at `level` and above the process's default.
    /// `INFO` gives workflow tasks and activity attempts; `DEBUG` adds activations, handlers,
    /// replays and commits. Fails if a global subscriber is already set.
    pub fn install(&self, level: tracing::Level) -> Result<(), OtelError> {
        let layer = self.layer().with_filter(LevelFilter::from_level(level));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|e| OtelError(format!("installing the subscriber: {e}")))
    }

    /// Sends the spans not sent yet and stops the exporter (blocking).
    pub fn shutdown(&self) -> Result<(), OtelError> {
        let provider = self.provider.clone();
        std::thread::spawn(move || provider.shutdown())
            .join()
            .map_err(|_| OtelError("shutting the exporter down panicked".into()))?
            .map_err(|e| OtelError(e.to_string()))
    }
}
