//! Activity task tokens: the opaque string that names one attempt of one activity, which an
//! outside caller uses to complete, fail or heartbeat an activity that completes
//! asynchronously (Temporal's task token, Restate's awakeable id).
//!
//! A token is `wfat1.` and the URL-safe base64 (no padding) of the MessagePack of
//! [`ActivityToken`]. It is not a secret and not signed: it names an attempt, and the store
//! decides whether that attempt is still current. Guard who may call with it (the HTTP
//! service's bearer token does).

use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// What every token starts with (the `1` is the format's version).
const PREFIX: &str = "wfat1.";

/// Longest token accepted, in bytes: ids are bounded (`data::limits`), so a longer string is
/// not a token this crate issued.
const MAX_TOKEN_BYTES: usize = 4096;

/// The attempt an activity task token names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityToken {
    /// The scheduling run's workflow id.
    pub workflow_id: String,
    /// The scheduling run.
    pub run_id: String,
    /// The scheduling command's sequence number in that run.
    pub seq: u32,
    /// The attempt, from 1.
    pub attempt: u32,
}

/// A string that is not an activity task token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an activity task token (pass the string `ActivityContext::task_token` returned, unchanged)")]
pub struct InvalidToken(pub String);

impl ActivityToken {
    /// The token as its opaque string.
    pub fn encode(&self) -> String {
        let bytes = rmp_serde::to_vec(self).expect("a struct of strings and integers encodes");
        format!("{PREFIX}{}", BASE64.encode(bytes))
    }

    /// Reads a token that [`encode`](Self::encode) wrote.
    pub fn decode(token: &str) -> Result<ActivityToken, InvalidToken> {
        let invalid = || {
            let shown: String = token.chars().take(64).collect();
            InvalidToken(shown)
        };
        if token.len() > MAX_TOKEN_BYTES {
            return Err(invalid());
        }
        let body = token.strip_prefix(PREFIX).ok_or_else(invalid)?;
        let bytes = BASE64.decode(body).map_err(|_| invalid())?;
        let parsed: ActivityToken = rmp_serde::from_slice(&bytes).map_err(|_| invalid())?;
        if parsed.attempt == 0 || parsed.run_id.is_empty() {
            return Err(invalid());
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_reads_back_and_garbage_is_refused() {
        let t = ActivityToken {
            workflow_id: "order-7".into(),
            run_id: "run-1".into(),
            seq: 3,
            attempt: 2,
        };
        let s = t.encode();
        assert!(s.starts_with("wfat1."));
        assert_eq!(ActivityToken::decode(&s), Ok(t));
        for bad in [
            "",
            "wfat1.",
            "wfat1.!!!",
            "wfat2.abc",
            "hello",
            &s[..s.len() - 3],
        ] {
            assert!(ActivityToken::decode(bad).is_err(), "{bad:?}");
        }
        assert!(ActivityToken::decode(&"x".repeat(10_000)).is_err());
    }
}
