//! The store's health: whether it has seen its file damaged.
//!
//! ```text
//! Healthy --(first error of kind Corrupt: SQLITE_CORRUPT, SQLITE_NOTADB, a row that does
//!            not decode; from a write, a read or a commit)--> Damaged { at, error }
//! Damaged --(any write)--> refused at once, the file untouched
//! Damaged --(a read)--> tried; its error, if any, says the file is damaged
//! Damaged --(the store dropped)--> connections closed without a checkpoint
//! ```
//!
//! There is no way back: a damaged file is recovered into a new one (`how_to_recover`), which
//! the user opens instead. A store that kept writing into a file SQLite finds malformed could
//! only spread the damage, and every error from then on would mislead.
//!
//! Costs nothing on the way of a commit: the state is looked at once per batch (one atomic
//! load) and an error's kind only when a statement failed.

use super::opening::how_to_recover;
use crate::error::{BackendError, BackendErrorKind, StoreError};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The health of one store's file, shared by its writer and reader threads.
pub(super) struct Health {
    path: PathBuf,
    damage: OnceLock<Damage>,
}

/// When and how the store first found its file damaged.
struct Damage {
    at: String,
    error: String,
}

impl Health {
    pub(super) fn new(path: &Path) -> Health {
        Health {
            path: path.to_path_buf(),
            damage: OnceLock::new(),
        }
    }

    /// Looks at a failure: the first one of kind `Corrupt` puts the store in its damaged state.
    pub(super) fn note(&self, e: &StoreError) {
        let StoreError::Backend(b) = e else { return };
        if b.kind() != BackendErrorKind::Corrupt || self.damage.get().is_some() {
            return;
        }
        let mut first = false;
        self.damage.get_or_init(|| {
            first = true;
            Damage {
                at: utc(SystemTime::now()),
                error: b.message().to_string(),
            }
        });
        if first {
            tracing::error!(
                path = %self.path.display(),
                error = %b.message(),
                "the SQLite database is damaged; wf has stopped writing to it"
            );
        }
    }

    /// The database file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the store found its file damaged.
    pub(super) fn damaged(&self) -> bool {
        self.damage.get().is_some()
    }

    /// The answer to a write once the file is damaged, `None` before.
    pub(super) fn refusal(&self) -> Option<StoreError> {
        let d = self.damage.get()?;
        Some(StoreError::corrupt(format!(
            "{}; wf did not write this change; {}",
            self.since(d),
            how_to_recover(&self.path)
        )))
    }

    /// An error as its caller sees it: once the file is damaged, a failure of the database
    /// says so, and how to recover. Outcomes (not found, conflicts) stay what they are.
    pub(super) fn explain(&self, e: StoreError) -> StoreError {
        let (Some(d), StoreError::Backend(b)) = (self.damage.get(), &e) else {
            return e;
        };
        if b.message().starts_with(&self.damaged_prefix()) {
            return e; // explained already
        }
        let message = if b.message() == d.error {
            format!(
                "{}: {} (first found at {}); wf has stopped writing to it; {}",
                self.damaged_prefix(),
                d.error,
                d.at,
                how_to_recover(&self.path)
            )
        } else {
            format!(
                "{}; this call failed: {}; {}",
                self.since(d),
                b.message(),
                how_to_recover(&self.path)
            )
        };
        let mut wrapped = BackendError::new(BackendErrorKind::Corrupt, message);
        if let StoreError::Backend(b) = e {
            wrapped = wrapped.with_source(b);
        }
        StoreError::Backend(wrapped)
    }

    fn damaged_prefix(&self) -> String {
        format!("the database \"{}\" is damaged", self.path.display())
    }

    fn since(&self, d: &Damage) -> String {
        format!(
            "{} (since {}: {}); wf has stopped writing to it",
            self.damaged_prefix(),
            d.at,
            d.error
        )
    }
}

/// `2024-05-01 12:00:00 UTC`.
fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's days-to-civil, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00:00 UTC");
        let t = UNIX_EPOCH + Duration::from_secs(1_709_210_096); // a leap day
        assert_eq!(utc(t), "2024-02-29 12:34:56 UTC");
    }

    #[test]
    fn the_first_corruption_is_kept_and_every_later_failure_names_it() {
        let health = Health::new(Path::new("/x/wf.db"));
        health.note(&StoreError::backend(BackendErrorKind::Busy, "busy"));
        assert!(!health.damaged());
        assert_eq!(health.refusal(), None);
        health.note(&StoreError::corrupt("page 7 is malformed"));
        health.note(&StoreError::corrupt("page 9 is malformed"));
        let refused = health.refusal().expect("writes are refused");
        let text = refused.to_string();
        assert!(
            text.contains("page 7") && !text.contains("page 9"),
            "{text}"
        );
        assert!(text.contains(".recover"), "{text}");
        assert_eq!(health.explain(refused.clone()), refused);
        let later = health.explain(StoreError::backend(BackendErrorKind::Busy, "busy"));
        assert!(!later.is_retryable());
        assert!(later.to_string().contains("page 7"), "{later}");
        let outcome = StoreError::conflict("r", "stale");
        assert_eq!(health.explain(outcome.clone()), outcome);
    }
}
