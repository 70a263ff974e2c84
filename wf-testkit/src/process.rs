//! Child test processes, for tests that kill a real worker or wait in another process.

use std::process::{Child, Command, Stdio};

/// This test binary again, running only the ignored test `test` (the child's entry point),
/// with `var` set to `value` (the child returns at once without it).
fn test_child(test: &str, var: &str, value: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary's path"));
    cmd.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(var, value);
    cmd
}

/// Runs this test binary again as a child process that runs only the ignored test `test` (the
/// child's entry point), with `var` set to `value` (the child returns at once without it).
pub fn spawn_test_child(
    test: &str,
    var: &str,
    value: impl AsRef<std::ffi::OsStr>,
) -> std::process::Child {
    test_child(test, var, value)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the test binary starts again as a child")
}

/// [`spawn_test_child`], for a child that reports on its stdout (piped: read it from
/// `child.stdout`); its stderr goes to the test's, so its failures show. The test harness
/// prints its own lines there too (`test NAME ... ` may precede the child's first line): look
/// for a marker, not for whole lines.
pub fn spawn_reporting_test_child(
    test: &str,
    var: &str,
    value: impl AsRef<std::ffi::OsStr>,
) -> Child {
    test_child(test, var, value)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the test binary starts again as a child")
}
