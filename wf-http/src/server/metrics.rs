//! `GET /metrics`: the serving engine's metrics in the Prometheus text exposition format
//! (see `wf_core::metrics`), behind the same token as every route but `/healthz`.

use super::body::Failure;
use super::Api;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The content type of the text exposition format, version 0.0.4.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`: 404 when the service's client is not an engine's of this process.
pub(crate) async fn metrics(State(api): State<Api>) -> Result<Response, Failure> {
    let snapshot = api.client().metrics().ok_or_else(|| {
        Failure::not_found(
            "no metrics: this service's client is not an engine's of this process".into(),
        )
    })?;
    let headers = [(
        header::CONTENT_TYPE,
        HeaderValue::from_static(PROMETHEUS_TEXT),
    )];
    Ok((StatusCode::OK, headers, snapshot.to_prometheus_text()).into_response())
}
