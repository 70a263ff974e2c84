//! Scratch files for tests: fresh paths in cargo's `target/tmp` (so that test files do not pile
//! up in the system's temp dir), swept of what runs more than ten minutes old left there.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Cargo's scratch directory for tests, `<target>/tmp` (what `CARGO_TARGET_TMPDIR` names for
/// integration tests), found from the running binary's place in the target directory
/// (`<target>/<profile>/deps/` or `.../examples/`); the system's temp dir for a binary
/// elsewhere. Made if missing. The first call in a process removes the `wf-test-*` files
/// earlier runs left there more than ten minutes ago, so that a test binary running at the
/// same time keeps its files.
pub fn scratch_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().ok();
        // <target>/<profile>/deps/<binary>: three levels up is the target directory.
        let target = exe
            .as_deref()
            .and_then(|exe| exe.parent()?.parent()?.parent())
            .filter(|target| target.join("CACHEDIR.TAG").exists());
        let dir = match target {
            Some(target) => target.join("tmp"),
            None => std::env::temp_dir(),
        };
        std::fs::create_dir_all(&dir).expect("the scratch directory can be made");
        remove_stale_test_files(&dir);
        dir
    })
}

/// A fresh path `wf-test-TAG-PID-N-NANOS.EXT` in [`scratch_dir`].
pub fn temp_path(tag: &str, ext: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .subsec_nanos();
    scratch_dir().join(format!(
        "wf-test-{tag}-{}-{n}-{nanos}.{ext}",
        std::process::id()
    ))
}

/// A fresh SQLite path in [`scratch_dir`].
pub fn temp_db(tag: &str) -> PathBuf {
    temp_path(tag, "db")
}

/// Removes the test files (databases and their WAL files) in `dir` more than ten minutes old.
fn remove_stale_test_files(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let stale = |e: &std::fs::DirEntry| {
        e.metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(600))
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with("wf-test-") && stale(&entry) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
