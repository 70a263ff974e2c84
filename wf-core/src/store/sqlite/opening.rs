//! Opening a database file, as the user sees it: what is wrong with a path before SQLite is
//! asked, and every failure of the open said in user terms, naming the file ("opening
//! "/x/app.db": ..."), never a SQLite step ("set synchronous").

use crate::error::{BackendError, BackendErrorKind, StoreError};
use rusqlite::ErrorCode;
use std::io::ErrorKind;
use std::path::Path;

/// What to tell a user who meets a damaged file: the way out, for every damage message.
pub(super) fn how_to_recover(path: &Path) -> String {
    let recovered = recovered_path(path);
    format!(
        "to recover, copy what is readable into a new file with the sqlite3 shell \
         (`sqlite3 \"{}\" .recover | sqlite3 \"{}\"`), then open wf on \"{}\" \
         (a future `wf check` command will do this)",
        path.display(),
        recovered.display(),
        recovered.display()
    )
}

/// `/x/app.db` -> `/x/app-recovered.db`: beside the damaged file, so that both stay together.
fn recovered_path(path: &Path) -> std::path::PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "wf".into());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-recovered.{}", ext.to_string_lossy()),
        None => format!("{stem}-recovered"),
    };
    path.with_file_name(name)
}

/// The file being opened: the context of every error of the open.
#[derive(Clone, Copy)]
pub(super) struct Opening<'a> {
    pub(super) path: &'a Path,
}

/// What the path holds, as the file system says before SQLite is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileState {
    /// Nothing there, or an empty file: SQLite will make a new database of it.
    New,
    /// A file with something in it.
    Exists,
}

impl<'a> Opening<'a> {
    pub(super) fn new(path: &'a Path) -> Opening<'a> {
        Opening { path }
    }

    /// A failure of the open: `problem` says what is wrong, in user terms.
    pub(super) fn fail(
        &self,
        kind: BackendErrorKind,
        problem: impl std::fmt::Display,
    ) -> StoreError {
        StoreError::Backend(BackendError::new(kind, self.say(problem)))
    }

    fn say(&self, problem: impl std::fmt::Display) -> String {
        format!("opening \"{}\": {problem}", self.path.display())
    }

    /// A SQLite error of the open, as what it means for this file.
    pub(super) fn sqlite(&self, e: rusqlite::Error) -> StoreError {
        self.sqlite_doing("", e)
    }

    /// A SQLite error while `doing` something to the file (e.g. "creating wf's tables").
    pub(super) fn sqlite_doing(&self, doing: &str, e: rusqlite::Error) -> StoreError {
        let (kind, problem) = match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => (
                BackendErrorKind::Busy,
                format!(
                    "another connection held a lock on it for longer than the busy timeout \
                     ({e}); try again"
                ),
            ),
            Some(ErrorCode::DiskFull) => (
                BackendErrorKind::Full,
                format!("the disk is full ({e}); free some space and try again"),
            ),
            Some(ErrorCode::SystemIoFailure) => (
                BackendErrorKind::Io,
                format!("the operating system reported an I/O error ({e})"),
            ),
            Some(ErrorCode::CannotOpen) => (
                BackendErrorKind::Io,
                format!(
                    "SQLite could not open or create it ({e}); check that its folder exists and \
                     that wf may create files there (the database and its -wal and -shm files)"
                ),
            ),
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => (
                BackendErrorKind::Invalid,
                format!(
                    "it cannot be written ({e}); wf needs to write the file and to create its \
                     -wal and -shm files in the same folder"
                ),
            ),
            Some(ErrorCode::NotADatabase) => (
                BackendErrorKind::Corrupt,
                format!(
                    "it is not a SQLite database ({e}); wf did not change it; if it was a wf \
                     database, it is damaged: {}",
                    how_to_recover(self.path)
                ),
            ),
            Some(ErrorCode::DatabaseCorrupt) => (
                BackendErrorKind::Corrupt,
                format!(
                    "the database is damaged ({e}); {}",
                    how_to_recover(self.path)
                ),
            ),
            _ => (BackendErrorKind::Bug, format!("SQLite failed: {e}")),
        };
        let problem = if doing.is_empty() {
            problem
        } else {
            format!("{doing}: {problem}")
        };
        StoreError::Backend(BackendError::new(kind, self.say(problem)).with_source(e))
    }

    /// What is wrong with the path, if the file system can tell before SQLite is asked; else
    /// whether a file is there. Changes nothing: an existing file is opened for reading and
    /// writing only to learn whether wf may, and closed at once.
    pub(super) fn check_path(&self) -> Result<FileState, StoreError> {
        use BackendErrorKind::{Invalid, Io};
        let path = self.path;
        if path.as_os_str().is_empty() {
            return Err(self.fail(
                Invalid,
                "the path is empty; give wf a file name, such as \"wf.db\"",
            ));
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Err(self.fail(
                Invalid,
                format!(
                    "it is a directory; give wf a file path, such as \"{}\"",
                    path.join("wf.db").display()
                ),
            )),
            Ok(m) if !m.is_file() => Err(self.fail(
                Invalid,
                "it is not a regular file; give wf the path of a database file",
            )),
            Ok(m) => {
                // Opening for reading and writing changes nothing; SQLite would otherwise open
                // a write-protected file read-only without a word, and fail at the first write.
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(path)
                    .map_err(|e| self.io_error("wf cannot read and write it", e))?;
                Ok(if m.len() == 0 {
                    FileState::New
                } else {
                    FileState::Exists
                })
            }
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                let parent = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
                match std::fs::metadata(parent) {
                    Ok(m) if m.is_dir() => Ok(FileState::New),
                    Ok(_) => {
                        Err(self.fail(Invalid, format!("\"{}\" is not a folder", parent.display())))
                    }
                    Err(e) if e.kind() == ErrorKind::NotFound => Err(self.fail(
                        Invalid,
                        format!(
                            "the folder \"{}\" does not exist; create it first",
                            parent.display()
                        ),
                    )),
                    Err(e) => Err(self.io_error(
                        &format!("wf cannot reach the folder \"{}\"", parent.display()),
                        e,
                    )),
                }
            }
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                Err(self.io_error("wf cannot reach it", e))
            }
            Err(e) => Err(self.fail(Io, format!("wf cannot reach it ({e})"))),
        }
    }

    /// An I/O error of the file system: a permission problem is the user's to fix (retrying
    /// does not help), anything else may clear.
    pub(super) fn io_error(&self, what: &str, e: std::io::Error) -> StoreError {
        let (kind, hint) = match e.kind() {
            ErrorKind::PermissionDenied => (
                BackendErrorKind::Invalid,
                "; let the user wf runs as read and write it",
            ),
            ErrorKind::ReadOnlyFilesystem => (BackendErrorKind::Invalid, ""),
            _ => (BackendErrorKind::Io, ""),
        };
        StoreError::Backend(
            BackendError::new(kind, self.say(format!("{what} ({e}){hint}"))).with_source(e),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recovered_file_sits_beside_the_damaged_one() {
        assert_eq!(
            recovered_path(Path::new("/x/app.db")),
            Path::new("/x/app-recovered.db")
        );
        assert_eq!(recovered_path(Path::new("wf")), Path::new("wf-recovered"));
    }
}
