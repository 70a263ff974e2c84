//! The feed of what runs do: one record per lifecycle fact of any run (started, waiting for a
//! signal, an activity failed, paused, completed...), kept in the store beside the history and
//! written in the same transaction as what it reports, in commit order. Readers follow it
//! from a [`FeedCursor`] (`client.events(filter).from(cursor)`), across processes, with no
//! worker.
//!
//! A record is self-contained: the run it is about (type, workflow id, run id), its
//! [`FeedKind`], the history event it reports if any, when, and a small [`FeedDetail`]
//! (names, ids, an error message, a deadline), never a payload.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Most events one read of the feed answers (1,000), whatever it asks.
pub const MAX_FEED_PAGE: usize = 1000;

/// What a feed event reports. Its wire name is snake_case (`signal_waiting`,
/// `activity_failed`).
///
/// Most kinds report a history event of the run (its [`FeedEvent::event_id`]); three do
/// not: [`SignalWaiting`](Self::SignalWaiting) (what the run's code waits on after a
/// workflow task, not written to history), [`Paused`](Self::Paused) and
/// [`Unpaused`](Self::Unpaused) (an operator's mark on the run), and an
/// [`ActivityFailed`](Self::ActivityFailed) of an attempt that is retried (history records
/// only an activity's final failure).
///
/// History events that are not lifecycle facts have no feed event: the workflow task marker
/// (`WorkflowTaskCompleted`), patch and side-effect markers (`MarkerRecorded`), search
/// attribute upserts, stream entries and published events (they have readers of their own:
/// `handle.stream`, `client.get_event`), a signal sent to another workflow
/// (`ExternalSignalSent`: the target's `signal_received` reports it) and a child's
/// cancellation request (`ChildCancelRequested`: the child's `cancel_requested` reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FeedKind {
    /// The run started (a first run, a continue-as-new, a retry, a child, a reset's or a
    /// fork's new run).
    Started,
    /// After a workflow task, the run's code waits for these signals (`detail.signals`, with
    /// the earliest deadline in `detail.deadline_ms`); sent when the set changed since the
    /// previous task.
    SignalWaiting,
    /// A signal was delivered (`detail.name`).
    SignalReceived,
    /// An update passed its validator (`detail.name`, `detail.update_id`).
    UpdateAccepted,
    /// An update handler finished (`detail.update_id`; `detail.error` if it failed).
    UpdateCompleted,
    /// The workflow scheduled an activity (`detail.name`, `detail.seq`).
    ActivityScheduled,
    /// An activity returned a value (`detail.seq`, `detail.attempt`: attempts made).
    ActivityCompleted,
    /// An attempt of an activity failed (`detail.error`, `detail.attempt`): retried at
    /// `detail.retry_at_ms` (no history event), or for good (its `ActivityFailed` event).
    ActivityFailed,
    /// An activity timed out for good (`detail.error` names the timeout).
    ActivityTimedOut,
    /// A pending activity was cancelled (`detail.seq`).
    ActivityCancelled,
    /// A durable timer started (`detail.seq`, `detail.fire_at_ms`).
    TimerStarted,
    /// A durable timer fired (`detail.seq`).
    TimerFired,
    /// A timer was cancelled before it fired (`detail.seq`).
    TimerCancelled,
    /// An operator paused the run (`detail.error` holds the reason, `detail.name` who).
    Paused,
    /// An operator unpaused the run.
    Unpaused,
    /// The run's cancellation was requested (`detail.error`: the reason).
    CancelRequested,
    /// The run returned a value.
    Completed,
    /// The run returned an error (`detail.error`).
    Failed,
    /// The run continued as new (`detail.new_run_id`).
    ContinuedAsNew,
    /// The run ended as cancelled (`detail.error`: the reason).
    Cancelled,
    /// The run was terminated (`detail.error`: the reason).
    Terminated,
    /// A run or execution timeout passed (`detail.error`; `detail.new_run_id` for a retry).
    TimedOut,
    /// An operator reset the run (`detail.new_run_id`, `detail.error`: the reason).
    Reset,
    /// The run started a child (`detail.child_workflow_id`, `detail.name`: its type).
    ChildStarted,
    /// A child of the run ended or could not start (`detail.seq`; `detail.error` unless it
    /// completed).
    ChildClosed,
}

impl FeedKind {
    /// Every kind, in declaration order.
    pub const ALL: [FeedKind; 25] = [
        FeedKind::Started,
        FeedKind::SignalWaiting,
        FeedKind::SignalReceived,
        FeedKind::UpdateAccepted,
        FeedKind::UpdateCompleted,
        FeedKind::ActivityScheduled,
        FeedKind::ActivityCompleted,
        FeedKind::ActivityFailed,
        FeedKind::ActivityTimedOut,
        FeedKind::ActivityCancelled,
        FeedKind::TimerStarted,
        FeedKind::TimerFired,
        FeedKind::TimerCancelled,
        FeedKind::Paused,
        FeedKind::Unpaused,
        FeedKind::CancelRequested,
        FeedKind::Completed,
        FeedKind::Failed,
        FeedKind::ContinuedAsNew,
        FeedKind::Cancelled,
        FeedKind::Terminated,
        FeedKind::TimedOut,
        FeedKind::Reset,
        FeedKind::ChildStarted,
        FeedKind::ChildClosed,
    ];

    /// Its wire name, e.g. `"signal_waiting"` (the store's `kind` column too).
    pub fn as_str(self) -> &'static str {
        match self {
            FeedKind::Started => "started",
            FeedKind::SignalWaiting => "signal_waiting",
            FeedKind::SignalReceived => "signal_received",
            FeedKind::UpdateAccepted => "update_accepted",
            FeedKind::UpdateCompleted => "update_completed",
            FeedKind::ActivityScheduled => "activity_scheduled",
            FeedKind::ActivityCompleted => "activity_completed",
            FeedKind::ActivityFailed => "activity_failed",
            FeedKind::ActivityTimedOut => "activity_timed_out",
            FeedKind::ActivityCancelled => "activity_cancelled",
            FeedKind::TimerStarted => "timer_started",
            FeedKind::TimerFired => "timer_fired",
            FeedKind::TimerCancelled => "timer_cancelled",
            FeedKind::Paused => "paused",
            FeedKind::Unpaused => "unpaused",
            FeedKind::CancelRequested => "cancel_requested",
            FeedKind::Completed => "completed",
            FeedKind::Failed => "failed",
            FeedKind::ContinuedAsNew => "continued_as_new",
            FeedKind::Cancelled => "cancelled",
            FeedKind::Terminated => "terminated",
            FeedKind::TimedOut => "timed_out",
            FeedKind::Reset => "reset",
            FeedKind::ChildStarted => "child_started",
            FeedKind::ChildClosed => "child_closed",
        }
    }

    /// Whether the run closed with this event.
    pub fn closes(self) -> bool {
        matches!(
            self,
            FeedKind::Completed
                | FeedKind::Failed
                | FeedKind::ContinuedAsNew
                | FeedKind::Cancelled
                | FeedKind::Terminated
                | FeedKind::TimedOut
                | FeedKind::Reset
        )
    }
}

impl fmt::Display for FeedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FeedKind {
    type Err = String;

    /// A wire name (`"timer_fired"`).
    fn from_str(s: &str) -> Result<Self, String> {
        FeedKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = FeedKind::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown feed event kind {s:?}; one of {}", names.join(", "))
            })
    }
}

/// The small details of a [`FeedEvent`], as its [`FeedKind`] says which it has; absent fields
/// are left out of its JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedDetail {
    /// A signal's, an update's or an activity's name, a child's workflow type, the caller of
    /// a pause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The signals a `signal_waiting` run waits for, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<String>,
    /// An update's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_id: Option<String>,
    /// The command sequence number of an activity, a timer or a child in its run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u32>,
    /// An activity's attempt (from 1), or the attempts it made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// A failure's message, a timeout's name, a reason (cancel, terminate, reset, pause).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When a started timer fires (engine-clock ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_at_ms: Option<i64>,
    /// When a signal wait gives up, the earliest of its waits' (engine-clock ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
    /// When a failed activity attempt is tried again (engine-clock ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at_ms: Option<i64>,
    /// A started child's workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_workflow_id: Option<String>,
    /// The run that follows: after a continue-as-new, a reset, a retried timeout; a started
    /// child's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_run_id: Option<String>,
}

/// Whether a history event of `kind` has a row in the feed: every kind but those listed on
/// [`FeedKind`] as no lifecycle fact. A commit whose events have none (a task that only wrote
/// stream entries, say) need not wake the feed's readers.
pub(crate) fn is_fact(kind: &crate::data::history::EventKind) -> bool {
    use crate::data::history::EventKind as E;
    !matches!(
        kind,
        E::WorkflowTaskCompleted { .. }
            | E::MarkerRecorded { .. }
            | E::ExternalSignalSent { .. }
            | E::ChildCancelRequested { .. }
            | E::SearchAttributesUpserted { .. }
            | E::StreamWritten { .. }
            | E::StreamClosed { .. }
            | E::EventSet { .. }
    )
}

/// A place in the feed: an event's [`FeedEvent::cursor`], read on from with
/// `client.events(filter).from(cursor)`. Opaque; its string form (`Display`, `FromStr`) is
/// what to keep (an SSE `id:`, a checkpoint in a file).
///
/// [`FeedCursor::start`] is before every event the store keeps; [`FeedCursor::now`] is after
/// every event committed so far (a reader from it sees only new ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FeedCursor(Pos);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
enum Pos {
    /// After the event of this place: the committing transaction's id (0 on stores that
    /// commit one transaction at a time) and the row's sequence number.
    #[default]
    Start,
    At {
        xid: u64,
        seq: u64,
    },
    Now,
}

impl FeedCursor {
    /// Before every event the store keeps (string form `"0"`).
    pub const fn start() -> Self {
        FeedCursor(Pos::Start)
    }

    /// After every event readable at the first read (string form `"now"`): the reader is
    /// answered no event it could have read before it started, and misses none committed
    /// after. (On PostgreSQL, events committed just before it that were held back then, see
    /// [`FeedPage::held_back`], still come.) A page read from it says where that is
    /// ([`FeedPage::next`]).
    pub const fn now() -> Self {
        FeedCursor(Pos::Now)
    }

    /// The place just after the row `(xid, seq)`: for stores. `xid` is the committing
    /// transaction's id on a store whose transactions commit out of `seq` order
    /// (PostgreSQL), else 0.
    pub const fn at(xid: u64, seq: u64) -> Self {
        if xid == 0 && seq == 0 {
            FeedCursor(Pos::Start)
        } else {
            FeedCursor(Pos::At { xid, seq })
        }
    }

    /// `(xid, seq)` of the place (`(0, 0)` at the start); `None` for [`now`](Self::now).
    pub fn position(self) -> Option<(u64, u64)> {
        match self.0 {
            Pos::Start => Some((0, 0)),
            Pos::At { xid, seq } => Some((xid, seq)),
            Pos::Now => None,
        }
    }

    /// Whether it is [`now`](Self::now), a place the store has to resolve.
    pub fn is_now(self) -> bool {
        self.0 == Pos::Now
    }
}

impl fmt::Display for FeedCursor {
    /// `0` (the start), `now`, `SEQ`, or `XID-SEQ` on PostgreSQL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Pos::Start => f.write_str("0"),
            Pos::Now => f.write_str("now"),
            Pos::At { xid: 0, seq } => write!(f, "{seq}"),
            Pos::At { xid, seq } => write!(f, "{xid}-{seq}"),
        }
    }
}

impl FromStr for FeedCursor {
    type Err = String;

    /// The string form [`Display`](fmt::Display) gives (an empty string is the start).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("bad feed cursor {s:?}: expected 0, now, SEQ or XID-SEQ");
        let s = s.trim();
        match s {
            "" | "0" => return Ok(FeedCursor::start()),
            "now" => return Ok(FeedCursor::now()),
            _ => {}
        }
        let (xid, seq) = match s.split_once('-') {
            Some((xid, seq)) => (xid.parse().map_err(|_| bad())?, seq),
            None => (0, s),
        };
        let seq: u64 = seq.parse().map_err(|_| bad())?;
        Ok(FeedCursor::at(xid, seq))
    }
}

impl Serialize for FeedCursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FeedCursor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One lifecycle fact of a run, as the feed delivers it.
///
/// In JSON (what `serde_json::to_value` gives):
/// `{"cursor": "17", "kind": "signal_received", "workflow_type": "order",
/// "workflow_id": "order-7", "run_id": "...", "event_id": 5, "at_ms": 1700000000000,
/// "detail": {"name": "approve"}}` (`event_id` is `null` for a kind without a history event;
/// `detail` holds only the fields its kind has).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedEvent {
    /// Its place: a reader resumes after it with `.from(cursor)`.
    pub cursor: FeedCursor,
    /// What happened.
    pub kind: FeedKind,
    /// The run's workflow type.
    pub workflow_type: String,
    /// The run's workflow id.
    pub workflow_id: String,
    /// The run.
    pub run_id: String,
    /// The history event it reports, if any (see [`FeedKind`]).
    pub event_id: Option<u64>,
    /// When it happened (engine-clock ms since the Unix epoch).
    pub at_ms: i64,
    /// Names, ids, an error message or a deadline, as the kind says.
    #[serde(default)]
    pub detail: FeedDetail,
}

/// Which feed events a reader wants: all by default; each setting narrows it.
///
/// ```
/// use wf_core::{FeedFilter, FeedKind};
/// let filter = FeedFilter::new()
///     .workflow_type("order")
///     .kinds([FeedKind::SignalWaiting, FeedKind::Completed]);
/// assert!(filter.wants_kind(FeedKind::Completed));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedFilter {
    /// Only runs of this workflow type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_type: Option<String>,
    /// Only runs of this workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// Only these kinds (empty: every kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<FeedKind>,
}

impl FeedFilter {
    /// Every event.
    pub fn new() -> Self {
        FeedFilter::default()
    }

    /// Only runs of workflow type `workflow_type`.
    pub fn workflow_type(mut self, workflow_type: impl Into<String>) -> Self {
        self.workflow_type = Some(workflow_type.into());
        self
    }

    /// Only runs of workflow id `workflow_id` (every run of it: continue-as-new, retries).
    pub fn workflow_id(mut self, workflow_id: impl Into<String>) -> Self {
        self.workflow_id = Some(workflow_id.into());
        self
    }

    /// Only events of these kinds (added to those already named).
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = FeedKind>) -> Self {
        self.kinds.extend(kinds);
        self
    }

    /// Only events of this kind (added to those already named).
    pub fn kind(self, kind: FeedKind) -> Self {
        self.kinds([kind])
    }

    /// Whether it takes events of `kind`.
    pub fn wants_kind(&self, kind: FeedKind) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&kind)
    }

    /// Whether it takes `event`.
    pub fn matches(&self, event: &FeedEvent) -> bool {
        self.wants_kind(event.kind)
            && self
                .workflow_type
                .as_ref()
                .is_none_or(|t| *t == event.workflow_type)
            && self
                .workflow_id
                .as_ref()
                .is_none_or(|id| *id == event.workflow_id)
    }
}

/// A read of the feed (see `Transport::read_feed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedRead {
    /// Which events.
    #[serde(default)]
    pub filter: FeedFilter,
    /// Events after this place.
    pub after: FeedCursor,
    /// Most events wanted (at most [`MAX_FEED_PAGE`] are answered).
    pub max: usize,
    /// Whether to wait (a while) for an event when none is there yet, rather than answer an
    /// empty page at once.
    #[serde(default)]
    pub wait: bool,
}

/// What one read of the feed answers: the events after the cursor read from (in feed order,
/// those the filter takes), and where to read on from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FeedPage {
    /// The events.
    pub events: Vec<FeedEvent>,
    /// The place to read on from: past the last event, or past events the filter skipped
    /// (it moves even when `events` is empty); the read's own cursor when nothing is new.
    pub next: FeedCursor,
    /// Whether events were committed that this read could not answer yet (PostgreSQL: a
    /// transaction older than them is still open, anywhere on the server): read again soon
    /// rather than wait for the next commit's wake-up.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_back: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_from_their_string_form() {
        for c in [
            FeedCursor::start(),
            FeedCursor::now(),
            FeedCursor::at(0, 17),
            FeedCursor::at(7_000_000_123, 4),
        ] {
            assert_eq!(c.to_string().parse::<FeedCursor>(), Ok(c));
            let json = serde_json::to_string(&c).expect("a cursor encodes");
            assert_eq!(serde_json::from_str::<FeedCursor>(&json).ok(), Some(c));
        }
        assert_eq!(FeedCursor::at(0, 0), FeedCursor::start());
        assert!("x-1".parse::<FeedCursor>().is_err());
        assert!(FeedCursor::at(0, 3) < FeedCursor::at(0, 4));
        assert!(FeedCursor::at(9, 1) < FeedCursor::at(10, 0));
    }

    #[test]
    fn kinds_read_back_from_their_wire_names() {
        for k in FeedKind::ALL {
            assert_eq!(k.as_str().parse::<FeedKind>(), Ok(k));
            let json = serde_json::to_value(k).expect("a kind encodes");
            assert_eq!(json, serde_json::Value::String(k.as_str().into()));
        }
        assert!("nope".parse::<FeedKind>().is_err());
    }

    #[test]
    fn a_filter_narrows_by_type_id_and_kind() {
        let event = FeedEvent {
            cursor: FeedCursor::at(0, 1),
            kind: FeedKind::Started,
            workflow_type: "t".into(),
            workflow_id: "w".into(),
            run_id: "r".into(),
            event_id: Some(1),
            at_ms: 0,
            detail: FeedDetail::default(),
        };
        assert!(FeedFilter::new().matches(&event));
        assert!(FeedFilter::new().workflow_type("t").matches(&event));
        assert!(!FeedFilter::new().workflow_type("u").matches(&event));
        assert!(!FeedFilter::new().workflow_id("v").matches(&event));
        assert!(!FeedFilter::new().kind(FeedKind::Completed).matches(&event));
        assert!(FeedFilter::new()
            .kinds([FeedKind::Completed, FeedKind::Started])
            .matches(&event));
    }
}
