//! Exit codes scripts can rely on, and the one-line error a failed command prints.

use std::fmt;
use wf_core::WfError;

/// The command did what was asked.
pub const OK: u8 = 0;
/// Something failed (the store, the network, a run that failed while we waited...).
pub const ERROR: u8 = 1;
/// The command line is wrong (unknown option, bad JSON arguments, a query with --db).
pub const USAGE: u8 = 2;
/// What was named does not exist: the database file, the workflow id, the schedule.
pub const NOT_FOUND: u8 = 3;
/// The server refused the token: it does not know it (401), or its role is below what the
/// command needs (403 `forbidden`: the message names both roles).
pub const REFUSED: u8 = 4;
/// The workflow said no: the run has finished, an update was rejected or failed, a wait timed
/// out, a handler name is unknown.
pub const DECLINED: u8 = 5;
/// `wf replay`: a history file is invalid, or the replay program failed.
pub const REPLAY_FAILED: u8 = 6;

/// The exit codes, for `wf --help`.
pub const EXIT_CODES_HELP: &str = "Exit codes: 0 ok, 1 error, 2 usage, 3 not found (file, workflow id, schedule), \
4 token refused (unknown, or its role too small for the command), 5 declined by the workflow (run finished, update rejected or failed, timeout, unknown handler), \
6 replay: a history is invalid or the replay program failed.";

/// A failed command: its exit code and a one-line message.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub code: u8,
    /// What went wrong, on one line.
    pub message: String,
}

impl Failure {
    /// A failure with `code`.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A command-line mistake.
    pub fn usage(message: impl Into<String>) -> Self {
        Failure::new(USAGE, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line: a multi-line message (a panic's backtrace) keeps its first line.
        f.write_str(self.message.lines().next().unwrap_or(""))
    }
}

impl From<WfError> for Failure {
    fn from(e: WfError) -> Self {
        let code = match &e {
            WfError::NotFound { .. } => NOT_FOUND,
            WfError::Unknown { kind, .. } if *kind == "schedule" || *kind == "batch" => NOT_FOUND,
            WfError::InvalidArgument(m) if m.contains("refused the token") => REFUSED,
            WfError::RunFinished { .. }
            | WfError::Rejected(_)
            | WfError::UpdateFailed(_)
            | WfError::QueryError(_)
            | WfError::Timeout(_)
            | WfError::Unknown { .. } => DECLINED,
            WfError::InvalidArgument(_) | WfError::PayloadError(_) => USAGE,
            _ => ERROR,
        };
        Failure::new(code, e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::new(ERROR, e.to_string())
    }
}

impl Failure {
    /// The same failure, its message prefixed with what was being done.
    pub fn with_context(mut self, doing: &str) -> Self {
        self.message = format!("{doing}: {}", self.message);
        self
    }
}
