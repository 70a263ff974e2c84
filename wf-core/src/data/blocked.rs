//! What the parts of a running run wait on (its "stack trace"), as describe reports it: the
//! main method (`run`) and every live async handler, each with the waits it is blocked in.

use serde::{Deserialize, Serialize};

/// One part of a run (its main method or a live async handler) and what it waits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedPart {
    /// `"run"` for the main method, else the handler: `"signal NAME"` or
    /// `"update NAME (id ID)"`.
    pub part: String,
    /// The waits this part is blocked in, oldest first (more than one under `select` or
    /// `join_all`); empty when it waits on nothing the engine can name (a future of its own).
    pub waits: Vec<BlockedOn>,
}

/// What one wait of a [`BlockedPart`] is blocked on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedOn {
    /// The kind of wait.
    pub kind: BlockKind,
    /// What it names: the signal for `wait_for_signal`, the activity or child workflow type,
    /// the child's workflow id; empty for a condition, a timer or a mutex.
    #[serde(default)]
    pub name: String,
    /// Where the workflow code made the call (`file:line:column`), when known.
    #[serde(default)]
    pub location: Option<SourceLocation>,
    /// When the wait gives up or fires, in ms since the Unix epoch of engine time: a timer's
    /// fire time, a timed condition's or signal wait's deadline, an activity attempt's deadline.
    #[serde(default)]
    pub deadline_ms: Option<i64>,
    /// For an activity: its attempt, from 1, when the store reports one.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// For an activity or a child: the sequence number of its command in the run.
    #[serde(default)]
    pub seq: Option<u32>,
}

/// The kinds of [`BlockedOn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// `ctx.wait_condition(..)` (or `handlers_drained`), with or without a timeout.
    Condition,
    /// `ctx.wait_for_signal(..)`.
    Signal,
    /// `ctx.sleep(..)` or `ctx.sleep_until(..)`.
    Timer,
    /// An activity's result (`ctx.activity(..)`, a local activity too).
    Activity,
    /// A child workflow's start or result.
    Child,
    /// `workflow::sync::Mutex::lock` (or another of `sync`'s primitives).
    Mutex,
}

impl BlockKind {
    /// Its wire name: `condition`, `signal`, `timer`, `activity`, `child`, `mutex`.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::Condition => "condition",
            BlockKind::Signal => "signal",
            BlockKind::Timer => "timer",
            BlockKind::Activity => "activity",
            BlockKind::Child => "child",
            BlockKind::Mutex => "mutex",
        }
    }
}

/// A place in the workflow's source, captured with `#[track_caller]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    /// The source file, as the compiler names it (relative to the package root).
    pub file: String,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
}

impl SourceLocation {
    /// The location of `location` (e.g. `std::panic::Location::caller()`).
    pub fn of(location: &std::panic::Location<'_>) -> Self {
        SourceLocation {
            file: location.file().to_string(),
            line: location.line(),
            column: location.column(),
        }
    }
}

impl std::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

impl std::fmt::Display for BlockedOn {
    /// One line: `condition at src/x.rs:10:5`, `signal "go" until 1700000000000 ms`...
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind.as_str())?;
        if !self.name.is_empty() {
            write!(f, " {:?}", self.name)?;
        }
        if let Some(attempt) = self.attempt {
            write!(f, " attempt {attempt}")?;
        }
        if let Some(at) = &self.location {
            write!(f, " at {at}")?;
        }
        if let Some(ms) = self.deadline_ms {
            write!(f, " until {ms} ms")?;
        }
        Ok(())
    }
}
