//! Reading a run's history in assertions.

use wf_sdk::history::{EventKind, HistoryEvent};

/// Event kind names of a history.
pub fn kinds(history: &[HistoryEvent]) -> Vec<&'static str> {
    history.iter().map(|e| e.kind.name()).collect()
}

/// How many events of a history match `pred`.
pub fn count(history: &[HistoryEvent], pred: impl Fn(&EventKind) -> bool) -> usize {
    history.iter().filter(|e| pred(&e.kind)).count()
}
