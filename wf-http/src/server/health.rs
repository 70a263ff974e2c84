//! Liveness and readiness, for load balancers and orchestrators; neither needs a token.
//!
//! `GET /healthz` says the process answers HTTP (restart it when it does not); `GET /readyz`
//! says it can serve runs now: its store answered a cheap read within the deadline (send it
//! traffic only while it does).

use super::body::Codec;
use super::Api;
use axum::extract::State;
use axum::response::Response;
use serde_json::json;
use std::time::Duration;
use wf_core::WfError;

/// How long `GET /readyz` waits for the store by default.
pub(crate) const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /healthz`: `{"status": "ok"}` while the process answers, whatever its store does.
pub(crate) async fn healthz() -> Response {
    Codec::Json.reply(200, &json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 `{"status": "ready"}` when the store answered a lookup within the
/// deadline, 503 `{"error": "unavailable", ...}` when it failed, is closed, or was too slow.
///
/// The answer names the kind of failure but not the store's own message (the route needs no
/// token, and that message may name hosts or files); the message goes to the log.
pub(crate) async fn readyz(State(api): State<Api>) -> Response {
    let deadline = api.ready_deadline();
    let why = match tokio::time::timeout(deadline, api.client().ready()).await {
        Ok(Ok(())) => return Codec::Json.reply(200, &json!({ "status": "ready" })),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "not ready: the store did not answer");
            match e {
                WfError::Shutdown => "the engine is shutting down".to_string(),
                WfError::Store(s) => format!("the store failed a read ({})", store_kind(&s)),
                _ => "the store could not be read".to_string(),
            }
        }
        Err(_) => {
            tracing::warn!(?deadline, "not ready: the store did not answer in time");
            format!("the store did not answer within {deadline:?}")
        }
    };
    Codec::Json.reply(
        503,
        &json!({
            "error": "unavailable",
            "message": format!("not ready: {why}; see this server's log for the cause"),
        }),
    )
}

/// The kind of a store failure, for the public answer.
fn store_kind(e: &wf_core::error::StoreError) -> String {
    match e {
        wf_core::error::StoreError::Backend(b) => format!("{:?}", b.kind()).to_lowercase(),
        _ => "error".to_string(),
    }
}
