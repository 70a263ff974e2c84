//! The database file an example runs on.

use std::path::{Path, PathBuf};

/// A fresh SQLite file in the system temp dir, named for the example and this process. It is
/// removed with its WAL files when the example ends (dropped), so runs leave nothing behind.
pub struct DemoDb(PathBuf);

impl DemoDb {
    /// A new, empty database path for example `name` (a file left by a crashed run of this
    /// process id is removed first).
    pub fn new(name: &str) -> DemoDb {
        let path = std::env::temp_dir().join(format!("wf-{name}-{}.db", std::process::id()));
        let db = DemoDb(path);
        db.remove();
        db
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

impl Drop for DemoDb {
    fn drop(&mut self) {
        self.remove();
    }
}
