//! `GET /metrics`: the serving engine's metrics in the Prometheus text exposition format
//! (see `wf_core::metrics`), with the store's flow limits as gauges (the attempts each covers
//! running and waiting, a rate's tokens) and its queues of workflow starts (the runs each
//! holds waiting and running, a rate's tokens), behind the same token as every route but
//! `/healthz`.

use super::body::Failure;
use super::Api;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The content type of the text exposition format, version 0.0.4.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`: 404 when the service's client is not an engine's of this process.
pub(crate) async fn metrics(State(api): State<Api>) -> Result<Response, Failure> {
    let mut snapshot = api.client().metrics().ok_or_else(|| {
        Failure::not_found(
            "no metrics: this service's client is not an engine's of this process".into(),
        )
    })?;
    // The store's flow limits, as every engine on it sees them (a failed read leaves them out:
    // the engine's own metrics still go out).
    match api.client().flow_limits().usage().await {
        Ok(usage) if !usage.is_empty() => {
            let families = wf_core::FlowUsage::metric_families(&usage);
            snapshot.families.extend(families);
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "reading the flow limits' usage for /metrics failed"),
    }
    match api.client().workflow_queues().usage().await {
        Ok(usage) if !usage.is_empty() => {
            let families = wf_core::QueueUsage::metric_families(&usage);
            snapshot.families.extend(families);
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %e, "reading the workflow queues' usage for /metrics failed")
        }
    }
    let headers = [(
        header::CONTENT_TYPE,
        HeaderValue::from_static(PROMETHEUS_TEXT),
    )];
    Ok((StatusCode::OK, headers, snapshot.to_prometheus_text()).into_response())
}
