//! Closing: the WAL folded into the database file before the store goes, so that a cleanly
//! closed database is one self-contained file — and a clear error when that cannot be done
//! (a full disk), instead of SQLite's silent close that leaves the `-wal` file behind.

use super::damage::Health;
use super::rows::sqlite_error;
use crate::error::{BackendErrorKind, StoreError};
use rusqlite::{Connection, OpenFlags};
use std::time::Duration;

/// Copies every page of the WAL into the database file and empties the WAL
/// (`wal_checkpoint(TRUNCATE)`) on a connection of its own, the store's being idle. Nothing
/// committed is lost when it fails: the WAL keeps the commits, and the next open reads them
/// and folds them in. A damaged file is left alone (see `damage.rs`).
pub(super) fn fold_wal(health: &Health) -> Result<(), StoreError> {
    let path = health.path();
    if health.damaged() {
        return Err(StoreError::corrupt(format!(
            "the WAL of the damaged database {} was left unfolded on purpose",
            path.display()
        )));
    }
    let unfolded = |kind: BackendErrorKind, why: String| {
        StoreError::backend(
            kind,
            format!(
                "closing {}: the WAL could not be folded into the database file ({why}); \
                 nothing is lost: {}-wal keeps the last commits and the next open folds them \
                 in{}",
                path.display(),
                path.display(),
                match kind {
                    BackendErrorKind::Full => "; free disk space first",
                    _ => "",
                }
            ),
        )
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .and_then(|c| c.busy_timeout(Duration::from_secs(1)).map(|()| c))
        .map_err(|e| {
            let e = sqlite_error("open the file", e);
            unfolded(kind_of(&e), e.to_string())
        })?;
    let (busy, wal_pages, copied): (i64, i64, i64) = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map_err(|e| {
            let e = sqlite_error("checkpoint", e);
            unfolded(kind_of(&e), e.to_string())
        })?;
    if busy != 0 {
        return Err(unfolded(
            BackendErrorKind::Busy,
            format!(
                "another connection was using the file; {copied} of {wal_pages} pages copied, \
                 the last connection to close folds the rest"
            ),
        ));
    }
    Ok(())
}

fn kind_of(e: &StoreError) -> BackendErrorKind {
    match e {
        StoreError::Backend(b) => b.kind(),
        _ => BackendErrorKind::Io,
    }
}
