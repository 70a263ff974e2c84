//! Child test processes, for tests that kill a real worker.

/// Runs this test binary again as a child process that runs only the ignored test `test` (the
/// child's entry point), with `var` set to `value` (the child returns at once without it).
pub fn spawn_test_child(
    test: &str,
    var: &str,
    value: impl AsRef<std::ffi::OsStr>,
) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(var, value)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the test binary starts again as a child")
}
