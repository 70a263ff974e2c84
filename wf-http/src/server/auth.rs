//! Who may call what: the three [`Role`]s, the [`Tokens`] a server accepts (in code or from a
//! tokens file), and the check [`serve`](super::serve) runs on every request against the role
//! its route needs in the route table (`routes.rs`).
//!
//! A request without a token, or with one the server does not know, gets 401 `unauthorized`;
//! a known token whose role is below the route's gets 403 `forbidden`, naming both roles.
//! Tokens are compared in time that depends neither on where a guess first differs nor on
//! which of the tokens it matches: every configured token is compared, to its end.

use super::body::{Codec, Failure};
use crate::errors::ErrorBody;
use axum::extract::Request;
use axum::http::header::{self, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::json;
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use wf_core::WfError;

/// What a bearer token may do. Each role can do everything the one below it can.
///
/// | role | reaches |
/// |---|---|
/// | `read` | list, describe, history, queries, results and update outcomes (long polls), `GET /{type}`, `/metrics`, schedules and builds listed, the web view's pages and data |
/// | `write` | `read`, and start (with signal-with-start and update-with-start), signal, update, cancel, asynchronous activity completion (`/_activities/*`) |
/// | `admin` | `write`, and terminate, pause and unpause runs, purge, reset, fork, resume, delete, builds (`set-current`, `move`), schedules (create, delete, pause, unpause, trigger) |
///
/// `GET /healthz`, `GET /readyz` and the web view's static files need no token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Looks, never changes anything.
    Read,
    /// Drives runs: starts them and sends them messages.
    Write,
    /// Everything, the operations that end or delete runs included.
    Admin,
}

impl Role {
    /// Every role, lowest first.
    pub const ALL: [Role; 3] = [Role::Read, Role::Write, Role::Admin];

    /// Its name in tokens files and messages: `read`, `write` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = WfError;

    /// `read`, `write` or `admin` (exactly: tokens files are written by hand, and a typo
    /// should not grant a different role).
    fn from_str(s: &str) -> Result<Role, WfError> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| {
                WfError::InvalidArgument(format!("{s:?} is not a role: use read, write or admin"))
            })
    }
}

/// The bearer tokens a server accepts, each with its [`Role`]. Its `Debug` output shows
/// the roles, never the tokens.
///
/// ```
/// use wf_http::{Role, Tokens};
/// let tokens = Tokens::new()
///     .with(Role::Read, "dashboard-4f1c")
///     .with(Role::Admin, "ops-91ad");
/// assert_eq!(tokens.len(), 2);
///
/// // The same from a tokens file's text: one `ROLE TOKEN` per line.
/// let text = "# who may do what\nread dashboard-4f1c\n\nadmin ops-91ad\n";
/// let parsed = Tokens::parse(text, "tokens.txt").unwrap();
/// assert_eq!(parsed.len(), 2);
/// ```
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(Role, Box<[u8]>)>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let roles: Vec<Role> = self.entries.iter().map(|(r, _)| *r).collect();
        f.debug_struct("Tokens")
            .field("roles", &roles)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// No tokens.
    pub fn new() -> Tokens {
        Tokens::default()
    }

    /// These tokens and `token` with `role` (a token given twice keeps the last role).
    /// An empty token is ignored: it would match an empty `Bearer` header.
    pub fn with(mut self, role: Role, token: impl Into<String>) -> Tokens {
        self.insert(role, token);
        self
    }

    /// Adds `token` with `role` (a token given twice keeps the last role). An empty token is
    /// ignored.
    pub fn insert(&mut self, role: Role, token: impl Into<String>) {
        let token = token.into().into_bytes().into_boxed_slice();
        if token.is_empty() {
            return;
        }
        match self.entries.iter_mut().find(|(_, t)| *t == token) {
            Some(entry) => entry.0 = role,
            None => self.entries.push((role, token)),
        }
    }

    /// Each token with its role, for [`ServeOptions::tokens`](super::ServeOptions::tokens).
    pub(crate) fn into_entries(self) -> impl Iterator<Item = (Role, String)> {
        self.entries.into_iter().map(|(role, token)| {
            let token = String::from_utf8(token.into_vec())
                .expect("tokens are inserted as Strings, so they are UTF-8");
            (role, token)
        })
    }

    /// How many tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (then [`serve`](super::serve) checks no token).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Reads a tokens file: one `ROLE TOKEN` per line (ROLE is `read`, `write` or `admin`;
    /// spaces or tabs between them, and a `#` comment may follow), blank lines and lines
    /// starting with `#` skipped.
    /// `InvalidConfig` naming the file and the line for a line that is not `ROLE TOKEN`, an
    /// unknown role or a token given twice; the messages never contain a token.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Tokens, WfError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            WfError::InvalidConfig(format!(
                "could not read the tokens file {}: {e}",
                path.display()
            ))
        })?;
        Tokens::parse(&text, &path.display().to_string())
    }

    /// Parses the text of a tokens file (see [`from_file`](Self::from_file)); `source` names
    /// it in errors (a path, `--tokens`).
    pub fn parse(text: &str, source: &str) -> Result<Tokens, WfError> {
        let mut tokens = Tokens::new();
        let mut first_seen: Vec<usize> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let bad = |what: &str| {
                WfError::InvalidConfig(format!(
                    "{source}, line {n}: {what} (each line is `ROLE TOKEN`, ROLE one of read, \
                     write, admin; `#` starts a comment line)"
                ))
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // A token holds no whitespace, so ` #` after it starts a comment.
            let fields = || line.split_whitespace().take_while(|f| !f.starts_with('#'));
            let mut it = fields();
            let (Some(role), Some(token), None) = (it.next(), it.next(), it.next()) else {
                let count = fields().count();
                return Err(bad(&format!(
                    "expected 2 fields, found {count}{}",
                    if count == 1 { " (no token?)" } else { "" }
                )));
            };
            // Not the field itself in the message: on a line written TOKEN ROLE it is the token.
            let role: Role = role
                .parse()
                .map_err(|_| bad("the first field is not a role"))?;
            if let Some(k) = tokens
                .entries
                .iter()
                .position(|(_, t)| **t == *token.as_bytes())
            {
                return Err(bad(&format!(
                    "this token is already given on line {}",
                    first_seen[k]
                )));
            }
            tokens.insert(role, token);
            first_seen.push(n);
        }
        Ok(tokens)
    }

    /// The role of `given`, comparing it with every token to the end of `given` whatever
    /// matched before: the time taken depends on `given`'s length and on the number of
    /// tokens, not on any token's bytes nor on which one matched.
    fn role_of(&self, given: &[u8]) -> Option<Role> {
        let mut found: Option<Role> = None;
        for (role, token) in &self.entries {
            if constant_time_eq(given, token) {
                found = found.max(Some(*role));
            }
        }
        found
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme's case does not matter).
fn bearer(header: &[u8]) -> Option<&[u8]> {
    let (scheme, token) = header.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then_some(token)
}

/// `a == b` in time that depends on `a`'s length only (`b` is never empty).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b[i % b.len()];
    }
    diff == 0
}

/// What a route asks of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Nothing: health, readiness, the web view's static files.
    Public,
    /// A token with this role, or a higher one.
    Needs(Role),
}

/// The caller's role, in the request's extensions once the gate let it through (`Admin` when
/// the server checks no token).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller(pub Role);

/// The token check of one server.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    tokens: Tokens,
}

impl Gate {
    /// A gate letting `tokens` through by role; no tokens: no check.
    pub fn new(tokens: Tokens) -> Gate {
        Gate { tokens }
    }

    /// Checks `req` against `access`, the role its route needs (`None`: the route is not
    /// in the table, and is refused whatever the token); `matched` is the route's path
    /// pattern, for messages. On success the caller's role is in the request's extensions
    /// ([`Caller`]).
    pub fn check(
        &self,
        req: &mut Request,
        matched: Option<&str>,
        access: Option<Access>,
    ) -> Result<(), Refusal> {
        let route = || format!("{} {}", req.method(), matched.unwrap_or(req.uri().path()));
        let role = if self.tokens.is_empty() {
            Role::Admin
        } else {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| bearer(v.as_bytes()));
            match given.and_then(|g| self.tokens.role_of(g)) {
                Some(role) => role,
                None if access == Some(Access::Public) => {
                    return Ok(());
                }
                None => {
                    return Err(Refusal::Unauthorized {
                        sent: given.is_some(),
                    })
                }
            }
        };
        match access {
            Some(Access::Public) => {}
            Some(Access::Needs(needed)) if role >= needed => {}
            Some(Access::Needs(needed)) => {
                return Err(Refusal::Forbidden(format!(
                    "{} needs a token with the {needed} role; this token has the {role} role",
                    route()
                )))
            }
            None => {
                let route = route();
                tracing::error!(route, "a route with no role in wf-http's table was refused");
                return Err(Refusal::Forbidden(format!(
                    "{route} has no role in this server's route table, so no token may use it \
                     (a wf-http bug: please report it)"
                )));
            }
        }
        req.extensions_mut().insert(Caller(role));
        Ok(())
    }
}

/// Why the gate refused a request.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No token, or one the server does not know (`sent`): 401.
    Unauthorized { sent: bool },
    /// A known token whose role is below the route's, or a route with no role: 403.
    Forbidden(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Unauthorized { sent } => {
                let message = if sent {
                    "this server does not know the token sent: send one it was started with \
                     (Authorization: Bearer <token>)"
                } else {
                    "this route needs a token: send Authorization: Bearer <token>"
                };
                let mut response =
                    Failure::new(401, ErrorBody::new("unauthorized", message)).into_response();
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"wf\""),
                );
                response
            }
            Refusal::Forbidden(message) => {
                Failure::new(403, ErrorBody::new("forbidden", message)).into_response()
            }
        }
    }
}

/// `GET /_whoami`: `{"role": "read" | "write" | "admin"}`, the caller's role, for the web view
/// to show only what the token may do. `admin` when the server checks no token.
pub(crate) async fn whoami(caller: Option<Extension<Caller>>) -> Response {
    let role = caller.map_or(Role::Admin, |Extension(Caller(role))| role);
    Codec::Json.reply(200, &json!({ "role": role.as_str() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_only_when_equal() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        for other in [&b"s3creT"[..], b"s3cre", b"s3crets", b"", b"s3crets3cret"] {
            assert!(!constant_time_eq(other, b"s3cret"), "{other:?}");
        }
    }

    #[test]
    fn the_highest_role_of_a_token_wins_and_unknown_tokens_have_none() {
        let tokens = Tokens::new()
            .with(Role::Read, "r")
            .with(Role::Write, "w")
            .with(Role::Read, "w");
        assert_eq!(tokens.len(), 2, "a token given again keeps one entry");
        assert_eq!(tokens.role_of(b"r"), Some(Role::Read));
        assert_eq!(
            tokens.role_of(b"w"),
            Some(Role::Read),
            "the last role given"
        );
        assert_eq!(tokens.role_of(b"x"), None);
        assert_eq!(tokens.role_of(b""), None);
        assert!(Tokens::new().with(Role::Admin, "").is_empty());
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer"), None);
        assert_eq!(bearer(b"Bearer "), Some(&b""[..]));
    }

    #[test]
    fn a_comment_may_follow_a_token() {
        let tokens = Tokens::parse("read dash-1   # the dashboard\nwrite a#b\n", "t").unwrap();
        assert_eq!(tokens.role_of(b"dash-1"), Some(Role::Read));
        assert_eq!(
            tokens.role_of(b"a#b"),
            Some(Role::Write),
            "# inside a token is the token's"
        );
        let err = Tokens::parse("read # no token\n", "t").unwrap_err();
        assert!(err.to_string().contains("found 1"), "{err}");
    }

    #[test]
    fn roles_are_ordered_and_parsed_exactly() {
        assert!(Role::Read < Role::Write && Role::Write < Role::Admin);
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>().unwrap(), role);
        }
        assert!("Admin".parse::<Role>().is_err());
        assert!("".parse::<Role>().is_err());
    }

    #[test]
    fn debug_never_shows_a_token() {
        let tokens = Tokens::new().with(Role::Admin, "very-secret-token");
        let shown = format!("{tokens:?}");
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("Admin"), "{shown}");
    }
}
