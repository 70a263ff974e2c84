//! One HTTP status and one code per [`WfError`] kind, both ways: the server turns an error
//! into `{"error": code, "message", ...details}` with its status, and the remote client turns
//! that body back into the same `WfError` variant.

use serde::{Deserialize, Serialize};
use wf_core::error::{BackendErrorKind, StoreError};
use wf_core::{PayloadError, RunStatus, WfError};

/// The JSON body of every error response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error's code: `not_found`, `run_finished`, `invalid_args`...
    pub error: String,
    /// What happened, for people.
    pub message: String,
    /// The error's own text (a rejection's reason, a handler's error), without the prefix
    /// `message` adds; absent when the error has fields instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The workflow id the error is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The run the error is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// How a finished run closed (`completed`, `failed`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A sub-kind: what was unknown (`workflow type`, `update`), which payload step failed
    /// (`encode`, `decode`, `too_large`), which store failure (`busy`, `io`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The unknown name, or what could not be encoded or decoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How to fix an unknown name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The update a timed-out wait was for: ask again with it to get the outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_id: Option<String>,
    /// The parameter a bad argument was for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// An oversized value's size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// The limit it exceeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl ErrorBody {
    /// A body with a code and a message only.
    pub fn new(error: &str, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            error: error.to_string(),
            message: message.into(),
            ..ErrorBody::default()
        }
    }

    fn with_detail(error: &str, whole: &WfError, detail: &str) -> ErrorBody {
        ErrorBody {
            detail: Some(detail.to_string()),
            ..ErrorBody::new(error, whole.to_string())
        }
    }
}

/// The HTTP status and body of `error`.
pub fn to_http(error: &WfError) -> (u16, ErrorBody) {
    let msg = error.to_string();
    match error {
        WfError::NotFound {
            workflow_id,
            update_id,
        } => (
            404,
            ErrorBody {
                workflow_id: Some(workflow_id.clone()),
                update_id: update_id.clone(),
                ..ErrorBody::new("not_found", msg)
            },
        ),
        WfError::Unknown { kind, name, hint } => (
            404,
            ErrorBody {
                kind: Some(kind.to_string()),
                name: Some(name.clone()),
                // The sentence alone: the message joins it after "; ".
                hint: Some(hint.trim_start_matches(';').trim_start().to_string()),
                ..ErrorBody::new("not_found", msg)
            },
        ),
        WfError::RunFinished {
            workflow_id,
            run_id,
            status,
        } => (
            409,
            ErrorBody {
                workflow_id: Some(workflow_id.clone()),
                run_id: Some(run_id.clone()),
                status: Some(status.as_str().to_string()),
                ..ErrorBody::new("run_finished", msg)
            },
        ),
        WfError::AlreadyStarted {
            workflow_id,
            run_id,
        } => (
            409,
            ErrorBody {
                workflow_id: Some(workflow_id.clone()),
                run_id: Some(run_id.clone()),
                ..ErrorBody::new("already_started", msg)
            },
        ),
        WfError::DuplicateRejected {
            workflow_id,
            run_id,
            status,
        } => (
            409,
            ErrorBody {
                workflow_id: Some(workflow_id.clone()),
                run_id: Some(run_id.clone()),
                status: Some(status.as_str().to_string()),
                ..ErrorBody::new("duplicate_rejected", msg)
            },
        ),
        WfError::Rejected(d) => (422, ErrorBody::with_detail("rejected", error, d)),
        WfError::UpdateFailed(d) => (422, ErrorBody::with_detail("update_failed", error, d)),
        WfError::QueryError(d) => (422, ErrorBody::with_detail("query_failed", error, d)),
        WfError::WorkflowFailed(d) => (422, ErrorBody::with_detail("workflow_failed", error, d)),
        WfError::Terminated(d) => (422, ErrorBody::with_detail("terminated", error, d)),
        WfError::Cancelled(d) => (422, ErrorBody::with_detail("cancelled", error, d)),
        WfError::TimedOut(d) => (422, ErrorBody::with_detail("timed_out", error, d)),
        WfError::Timeout(d) => (504, ErrorBody::with_detail("timeout", error, d)),
        WfError::InvalidArgument(d) => (400, ErrorBody::with_detail("invalid_args", error, d)),
        WfError::ActivityNotPending(d) => (
            404,
            ErrorBody::with_detail("activity_not_pending", error, d),
        ),
        WfError::PayloadError(e) => payload_error(e, msg),
        WfError::NonDeterminism(d) => (500, ErrorBody::with_detail("nondeterminism", error, d)),
        WfError::InvalidConfig(d) => (500, ErrorBody::with_detail("invalid_config", error, d)),
        WfError::Conflict(d) => (409, ErrorBody::with_detail("conflict", error, d)),
        WfError::Interrupted(d) => (503, ErrorBody::with_detail("interrupted", error, d)),
        WfError::Startup(d) => (503, ErrorBody::with_detail("startup", error, d)),
        WfError::Shutdown => (503, ErrorBody::new("shutdown", msg)),
        WfError::Store(e) => store_error(e, msg),
        // A variant added to wf-core later: a server error until it gets its own code.
        _ => (500, ErrorBody::new("internal", msg)),
    }
}

fn payload_error(e: &PayloadError, msg: String) -> (u16, ErrorBody) {
    let (status, kind, name, detail, size, limit) = match e {
        PayloadError::Encode { what, message } => (
            400,
            "encode",
            what.clone(),
            Some(message.clone()),
            None,
            None,
        ),
        PayloadError::Decode { what, message } => (
            400,
            "decode",
            what.clone(),
            Some(message.clone()),
            None,
            None,
        ),
        PayloadError::TooLarge { what, size, limit } => (
            413,
            "too_large",
            what.clone(),
            None,
            Some(*size),
            Some(*limit),
        ),
        _ => (400, "other", String::new(), Some(e.to_string()), None, None),
    };
    let code = if status == 413 {
        "too_large"
    } else {
        "invalid_args"
    };
    (
        status,
        ErrorBody {
            kind: Some(kind.to_string()),
            name: Some(name),
            detail,
            size,
            limit,
            ..ErrorBody::new(code, msg)
        },
    )
}

const BACKEND_KINDS: [(BackendErrorKind, &str); 9] = [
    (BackendErrorKind::Busy, "busy"),
    (BackendErrorKind::Unavailable, "unavailable"),
    (BackendErrorKind::Io, "io"),
    (BackendErrorKind::Full, "full"),
    (BackendErrorKind::Corrupt, "corrupt"),
    (BackendErrorKind::Closed, "closed"),
    (BackendErrorKind::Invalid, "invalid"),
    (BackendErrorKind::Bug, "bug"),
    (BackendErrorKind::Codec, "codec"),
];

fn store_error(e: &StoreError, msg: String) -> (u16, ErrorBody) {
    let status = if e.is_retryable() { 503 } else { 500 };
    let body = match e {
        StoreError::Backend(b) => ErrorBody {
            kind: BACKEND_KINDS
                .iter()
                .find(|(k, _)| *k == b.kind())
                .map(|(_, s)| s.to_string()),
            detail: Some(b.message().to_string()),
            ..ErrorBody::new("store", msg)
        },
        StoreError::Conflict { run_id, reason } => ErrorBody {
            kind: Some("conflict".into()),
            run_id: Some(run_id.clone()),
            detail: Some(reason.clone()),
            ..ErrorBody::new("store", msg)
        },
        other => ErrorBody {
            detail: Some(other.to_string()),
            ..ErrorBody::new("store", msg)
        },
    };
    (status, body)
}

/// The [`WfError`] an error response stands for (what the server's engine returned), or, for
/// a response that is not one of ours (a proxy's page), a store error that says what came.
pub fn from_http(status: u16, body: ErrorBody) -> WfError {
    let detail = || body.detail.clone().unwrap_or_default();
    let text = |o: &Option<String>| o.clone().unwrap_or_default();
    match body.error.as_str() {
        "not_found" if body.kind.is_some() => WfError::Unknown {
            kind: unknown_kind(body.kind.as_deref()),
            name: text(&body.name),
            hint: text(&body.hint),
        },
        "not_found" if body.workflow_id.is_some() => WfError::NotFound {
            workflow_id: text(&body.workflow_id),
            update_id: body.update_id.clone(),
        },
        "run_finished" => WfError::RunFinished {
            workflow_id: text(&body.workflow_id),
            run_id: text(&body.run_id),
            status: body
                .status
                .as_deref()
                .and_then(RunStatus::parse)
                .unwrap_or(RunStatus::Completed),
        },
        "already_started" => WfError::AlreadyStarted {
            workflow_id: text(&body.workflow_id),
            run_id: text(&body.run_id),
        },
        "duplicate_rejected" => WfError::DuplicateRejected {
            workflow_id: text(&body.workflow_id),
            run_id: text(&body.run_id),
            status: body
                .status
                .as_deref()
                .and_then(RunStatus::parse)
                .unwrap_or(RunStatus::Completed),
        },
        "rejected" => WfError::Rejected(detail()),
        "update_failed" => WfError::UpdateFailed(detail()),
        "query_failed" => WfError::QueryError(detail()),
        "workflow_failed" => WfError::WorkflowFailed(detail()),
        "terminated" => WfError::Terminated(detail()),
        "cancelled" => WfError::Cancelled(detail()),
        "timed_out" => WfError::TimedOut(detail()),
        "timeout" => WfError::Timeout(body.detail.clone().unwrap_or(body.message)),
        "invalid_args" | "too_large" => match body.kind.as_deref() {
            Some("encode") => WfError::PayloadError(PayloadError::Encode {
                what: text(&body.name),
                message: detail(),
            }),
            Some("decode") => WfError::PayloadError(PayloadError::Decode {
                what: text(&body.name),
                message: detail(),
            }),
            Some("too_large") => WfError::PayloadError(PayloadError::TooLarge {
                what: text(&body.name),
                size: body.size.unwrap_or(0),
                limit: body.limit.unwrap_or(0),
            }),
            _ => WfError::InvalidArgument(body.detail.unwrap_or(body.message)),
        },
        "activity_not_pending" => WfError::ActivityNotPending(detail()),
        "nondeterminism" => WfError::NonDeterminism(detail()),
        "invalid_config" => WfError::InvalidConfig(detail()),
        "conflict" => WfError::Conflict(detail()),
        "interrupted" => WfError::Interrupted(detail()),
        "startup" => WfError::Startup(detail()),
        "shutdown" => WfError::Shutdown,
        "store" => match (body.kind.as_deref(), body.run_id) {
            (Some("conflict"), Some(run_id)) => WfError::Store(StoreError::conflict(
                &run_id,
                body.detail.unwrap_or_default(),
            )),
            (kind, _) => {
                let kind = BACKEND_KINDS
                    .iter()
                    .find(|(_, s)| Some(*s) == kind)
                    .map_or(BackendErrorKind::Bug, |(k, _)| *k);
                WfError::Store(StoreError::backend(
                    kind,
                    body.detail.unwrap_or(body.message),
                ))
            }
        },
        "unauthorized" => WfError::InvalidArgument(format!(
            "the server refused the token (401): {}",
            body.message
        )),
        "forbidden" => WfError::InvalidArgument(format!(
            "the server refused the token for this call (403 forbidden): {}",
            body.message
        )),
        _ => transport_failure(status, &body.message),
    }
}

/// An answer that is not a wf error body, or no answer at all: a store-like failure of the
/// connection (retryable for 5xx and I/O, as a busy database is).
pub fn transport_failure(status: u16, message: &str) -> WfError {
    let kind = if status == 0 || status >= 500 {
        BackendErrorKind::Unavailable
    } else {
        BackendErrorKind::Invalid
    };
    let what = if status == 0 {
        "the HTTP request failed".to_string()
    } else {
        format!("the server answered HTTP {status}")
    };
    WfError::Store(StoreError::backend(kind, format!("{what}: {message}")))
}

fn unknown_kind(kind: Option<&str>) -> &'static str {
    const KINDS: [&str; 7] = [
        "workflow type",
        "signal",
        "query",
        "update",
        "activity",
        "schedule",
        "batch",
    ];
    KINDS
        .into_iter()
        .find(|k| Some(*k) == kind)
        .unwrap_or("name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_maps_back_to_the_same_variant() {
        let errors = vec![
            WfError::NotFound {
                workflow_id: "w".into(),
                update_id: None,
            },
            WfError::NotFound {
                workflow_id: "w".into(),
                update_id: Some("u-1".into()),
            },
            WfError::Unknown {
                kind: "update",
                name: "u".into(),
                hint: "try v".into(),
            },
            WfError::RunFinished {
                workflow_id: "w".into(),
                run_id: "r".into(),
                status: RunStatus::Terminated,
            },
            WfError::AlreadyStarted {
                workflow_id: "w".into(),
                run_id: "r".into(),
            },
            WfError::DuplicateRejected {
                workflow_id: "w".into(),
                run_id: "r".into(),
                status: RunStatus::Failed,
            },
            WfError::Rejected("no".into()),
            WfError::UpdateFailed("boom".into()),
            WfError::QueryError("q".into()),
            WfError::WorkflowFailed("f".into()),
            WfError::Terminated("t".into()),
            WfError::Cancelled("c".into()),
            WfError::TimedOut("execution timeout of 1s".into()),
            WfError::Timeout("30 s".into()),
            WfError::InvalidArgument("bad id".into()),
            WfError::PayloadError(PayloadError::Decode {
                what: "(String,)".into(),
                message: "invalid type".into(),
            }),
            WfError::PayloadError(PayloadError::Encode {
                what: "T".into(),
                message: "m".into(),
            }),
            WfError::PayloadError(PayloadError::TooLarge {
                what: "args".into(),
                size: 9,
                limit: 8,
            }),
            WfError::NonDeterminism("n".into()),
            WfError::ActivityNotPending("attempt 1 of activity 2 timed out".into()),
            WfError::InvalidConfig("i".into()),
            WfError::Conflict("c".into()),
            WfError::Interrupted("i".into()),
            WfError::Startup("s".into()),
            WfError::Shutdown,
            WfError::Store(StoreError::conflict("r", "stale")),
        ];
        for e in errors {
            let (status, body) = to_http(&e);
            let json = serde_json::to_string(&body).unwrap();
            let back = from_http(status, serde_json::from_str(&json).unwrap());
            assert_eq!(back, e, "{json}");
        }
    }

    #[test]
    fn store_failures_keep_their_kind_and_retryability() {
        let e = WfError::Store(StoreError::backend(BackendErrorKind::Busy, "locked"));
        let (status, body) = to_http(&e);
        assert_eq!(status, 503);
        let back = from_http(status, body);
        assert!(back.is_retryable());
        assert_eq!(back.to_string(), e.to_string());
    }

    #[test]
    fn a_foreign_answer_is_a_clear_transport_failure() {
        let e = from_http(502, ErrorBody::new("", "Bad Gateway"));
        assert!(
            e.is_retryable() && e.to_string().contains("HTTP 502"),
            "{e}"
        );
    }
}
