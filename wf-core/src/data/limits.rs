//! The limits on identifiers, names and free-text reasons, written once and checked where they
//! enter the engine (client calls, schedule creation, registration, workflow code).
//!
//! - **Ids** ([`MAX_ID_BYTES`]): workflow ids, run ids, signal ids, update ids and schedule
//!   ids. **Names** ([`MAX_NAME_BYTES`]): workflow types, signals, queries, updates,
//!   activities, task queues and build ids. Both: not empty, at most 1,000 bytes of UTF-8, no
//!   control characters.
//!   - 1,000 bytes is Temporal's default (`limit.maxIDLength`, which covers its ids and names
//!     alike): ids chosen for Temporal fit here. An id or a name is a key, stored in indexes,
//!     repeated in events, logs and summaries; a bigger one is data, which belongs in a payload.
//!   - Control characters (U+0000–U+001F, U+007F and U+0080–U+009F, Unicode's `Cc`) break
//!     logs (a `\n` forges a log line), terminals (`\x1b` and U+009B start escape sequences),
//!     C strings and URLs (`\0`). Any other Unicode is accepted and round-trips.
//!   - Empty ids and names name nothing: refused.
//! - **Reasons** ([`MAX_REASON_BYTES`]): the free text of cancellations, terminations and
//!   schedule notes. Any text (newlines are fine), empty included, at most 32 KiB: it is
//!   recorded in history and shown as is, but it is a message, not a payload.
//!
//! A lookup by an id (describe, signal, cancel... a workflow id the engine already knows) is
//! not checked: runs created before these limits stay reachable; a name that breaks them
//! simply finds nothing.

use std::fmt;

/// Longest id, in bytes of UTF-8: workflow, run, signal, update and schedule ids.
pub const MAX_ID_BYTES: usize = 1_000;

/// Longest name, in bytes of UTF-8: workflow types, signals, queries, updates, activities,
/// task queues and build ids.
pub const MAX_NAME_BYTES: usize = 1_000;

/// Longest cancellation or termination reason (or schedule note), in bytes of UTF-8.
pub const MAX_REASON_BYTES: usize = 32 * 1024;

/// What an identifier or a name is, which sets its limit and names it in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ident {
    /// A workflow id.
    WorkflowId,
    /// A run id.
    RunId,
    /// A signal id (dedupe).
    SignalId,
    /// An update id (dedupe).
    UpdateId,
    /// A schedule id.
    ScheduleId,
    /// A workflow type's wire name.
    WorkflowType,
    /// A signal's wire name.
    SignalName,
    /// A query's wire name.
    QueryName,
    /// An update's wire name.
    UpdateName,
    /// An activity's wire name.
    ActivityName,
    /// A task queue's name.
    TaskQueue,
    /// A worker's build id.
    BuildId,
    /// A start's request id (dedupe).
    RequestId,
    /// A search attribute's key.
    SearchAttributeKey,
    /// A batch id.
    BatchId,
    /// A flow key (`ctx.activity(..).flow_key(k)`).
    FlowKey,
    /// A start's debounce key (`StartOptions::debounce`).
    DebounceKey,
    /// A run's stream name (`ctx.stream(name)`).
    StreamName,
    /// An activity's stream entry id (`ctx.stream(name).write_with_id(..)`).
    StreamEntryId,
    /// A published event's key (`ctx.set_event(key, ..)`).
    EventKey,
}

impl Ident {
    /// How errors name it: `"workflow id"`, `"signal name"`...
    pub fn what(self) -> &'static str {
        match self {
            Ident::WorkflowId => "workflow id",
            Ident::RunId => "run id",
            Ident::SignalId => "signal id",
            Ident::UpdateId => "update id",
            Ident::ScheduleId => "schedule id",
            Ident::WorkflowType => "workflow type name",
            Ident::SignalName => "signal name",
            Ident::QueryName => "query name",
            Ident::UpdateName => "update name",
            Ident::ActivityName => "activity name",
            Ident::TaskQueue => "task queue name",
            Ident::BuildId => "build id",
            Ident::RequestId => "start request id",
            Ident::SearchAttributeKey => "search attribute key",
            Ident::BatchId => "batch id",
            Ident::FlowKey => "flow key",
            Ident::DebounceKey => "debounce key",
            Ident::StreamName => "stream name",
            Ident::StreamEntryId => "stream entry id",
            Ident::EventKey => "event key",
        }
    }

    /// Its longest length in bytes.
    pub fn max_bytes(self) -> usize {
        match self {
            Ident::WorkflowId
            | Ident::RunId
            | Ident::SignalId
            | Ident::UpdateId
            | Ident::ScheduleId
            | Ident::BatchId
            | Ident::RequestId
            | Ident::DebounceKey
            | Ident::StreamEntryId => MAX_ID_BYTES,
            Ident::WorkflowType
            | Ident::SignalName
            | Ident::QueryName
            | Ident::UpdateName
            | Ident::ActivityName
            | Ident::TaskQueue
            | Ident::BuildId
            | Ident::FlowKey
            | Ident::StreamName
            | Ident::EventKey
            | Ident::SearchAttributeKey => MAX_NAME_BYTES,
        }
    }

    /// Checks `value` against this kind's rules: not empty, at most
    /// [`max_bytes`](Self::max_bytes), no control character.
    pub fn check(self, value: &str) -> Result<(), LimitError> {
        self.check_within(value, None)
    }

    /// Checks `value` as the start of a longer value of this kind, which the engine completes
    /// with up to `reserved` more bytes (a schedule's workflow id prefix, say): the rules of
    /// [`check`](Self::check), with `reserved` bytes less.
    pub fn check_prefix(self, value: &str, reserved: usize) -> Result<(), LimitError> {
        self.check_within(value, Some(reserved))
    }

    fn check_within(self, value: &str, reserved: Option<usize>) -> Result<(), LimitError> {
        let limit = self.max_bytes().saturating_sub(reserved.unwrap_or(0));
        let error = |problem| LimitError {
            what: self.what(),
            reserved,
            problem,
        };
        if value.is_empty() {
            return Err(error(Problem::Empty));
        }
        if value.len() > limit {
            return Err(error(Problem::TooLong {
                size: value.len(),
                limit,
            }));
        }
        match value.char_indices().find(|(_, c)| c.is_control()) {
            Some((at, c)) => Err(error(Problem::Control {
                excerpt: excerpt(value),
                character: c,
                at,
            })),
            None => Ok(()),
        }
    }
}

/// Checks a cancellation or termination reason (or a schedule note; `what` names it): at
/// most [`MAX_REASON_BYTES`].
pub fn check_reason(what: &'static str, reason: &str) -> Result<(), LimitError> {
    if reason.len() > MAX_REASON_BYTES {
        return Err(LimitError {
            what,
            reserved: None,
            problem: Problem::TooLong {
                size: reason.len(),
                limit: MAX_REASON_BYTES,
            },
        });
    }
    Ok(())
}

/// An id, a name or a reason breaks its limit. The message names the value's kind and what is
/// wrong: `the workflow id is 10,240 bytes; the limit is 1,000 bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitError {
    what: &'static str,
    /// For a prefix: the bytes kept for what the engine appends.
    reserved: Option<usize>,
    problem: Problem,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Problem {
    Empty,
    TooLong {
        size: usize,
        limit: usize,
    },
    Control {
        excerpt: String,
        character: char,
        at: usize,
    },
}

impl LimitError {
    /// What breaks the limit: `"workflow id"`, `"signal name"`, `"termination reason"`...
    pub fn what(&self) -> &'static str {
        self.what
    }
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, prefix) = (
            self.what,
            if self.reserved.is_some() {
                " prefix"
            } else {
                ""
            },
        );
        match &self.problem {
            Problem::Empty => write!(f, "the {what}{prefix} is empty"),
            Problem::TooLong { size, limit } => {
                write!(
                    f,
                    "the {what}{prefix} is {} bytes; the limit is {} bytes",
                    thousands(*size),
                    thousands(*limit)
                )?;
                match self.reserved {
                    Some(reserved) => write!(
                        f,
                        " ({} less {reserved} for the suffix the engine appends)",
                        thousands(limit + reserved)
                    ),
                    None => Ok(()),
                }
            }
            Problem::Control {
                excerpt,
                character,
                at,
            } => write!(
                f,
                "the {what}{prefix} {excerpt} holds the control character U+{:04X} at byte {at}; \
                 control characters are not allowed",
                u32::from(*character)
            ),
        }
    }
}

impl std::error::Error for LimitError {}

/// The value escaped for an error message, its first 40 characters at most.
fn excerpt(value: &str) -> String {
    const SHOWN: usize = 40;
    let mut shown: String = value.chars().take(SHOWN).collect();
    let cut = shown.len() < value.len();
    shown = format!("{shown:?}");
    if cut {
        shown.push('…');
    }
    shown
}

/// `10240` as `10,240`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_too_long_id_says_its_size_and_the_limit() {
        assert!(Ident::WorkflowId.check("order-42").is_ok());
        let err = Ident::WorkflowId.check(&"x".repeat(10_240)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the workflow id is 10,240 bytes; the limit is 1,000 bytes"
        );
    }

    #[test]
    fn ids_at_the_limit_pass_and_one_byte_more_fails() {
        assert!(Ident::WorkflowId.check(&"x".repeat(MAX_ID_BYTES)).is_ok());
        let err = Ident::WorkflowId
            .check(&"x".repeat(MAX_ID_BYTES + 1))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the workflow id is 1,001 bytes; the limit is 1,000 bytes"
        );
        assert_eq!(err.what(), "workflow id");
    }

    #[test]
    fn the_limit_counts_bytes_not_characters() {
        // 250 four-byte characters are exactly 1,000 bytes; one more is over.
        assert!(Ident::SignalName.check(&"🚀".repeat(250)).is_ok());
        assert!(Ident::SignalName.check(&"🚀".repeat(251)).is_err());
        assert!(Ident::UpdateId.check("ορχήστρα-工作流").is_ok());
    }

    #[test]
    fn empty_and_control_characters_are_named() {
        assert_eq!(
            Ident::UpdateId.check("").unwrap_err().to_string(),
            "the update id is empty"
        );
        for (value, code, at) in [
            ("a\nb", "000A", 1),
            ("\0", "0000", 0),
            ("tab\there", "0009", 3),
            ("del\x7f", "007F", 3),
            ("é\u{9b}[31m", "009B", 2),
        ] {
            let err = Ident::SignalId.check(value).unwrap_err().to_string();
            assert!(err.contains(&format!("U+{code} at byte {at}")), "{err}");
            assert!(!err.contains('\n') && !err.contains('\0'), "{err:?}");
        }
    }

    #[test]
    fn control_character_errors_show_a_short_escaped_excerpt() {
        let long = format!("{}\n", "y".repeat(900));
        let err = Ident::ScheduleId.check(&long).unwrap_err().to_string();
        assert!(err.len() < 200, "{err}");
        assert!(err.contains("at byte 900"), "{err}");
    }

    #[test]
    fn prefixes_leave_room_for_the_suffix() {
        assert!(Ident::WorkflowId.check_prefix(&"p".repeat(968), 32).is_ok());
        let err = Ident::WorkflowId
            .check_prefix(&"p".repeat(969), 32)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the workflow id prefix is 969 bytes; the limit is 968 bytes (1,000 less 32 for \
             the suffix the engine appends)"
        );
        assert!(Ident::WorkflowId.check_prefix("a\n", 32).is_err());
        assert_eq!(
            Ident::WorkflowId
                .check_prefix("", 32)
                .unwrap_err()
                .to_string(),
            "the workflow id prefix is empty"
        );
    }

    #[test]
    fn reasons_take_any_text_up_to_their_limit() {
        assert!(check_reason("termination reason", "").is_ok());
        assert!(check_reason("termination reason", "line 1\nline 2\0").is_ok());
        assert!(check_reason("termination reason", &"r".repeat(MAX_REASON_BYTES)).is_ok());
        assert_eq!(
            check_reason("termination reason", &"r".repeat(MAX_REASON_BYTES + 1))
                .unwrap_err()
                .to_string(),
            "the termination reason is 32,769 bytes; the limit is 32,768 bytes"
        );
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(10_240), "10,240");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
