//! Every macro diagnostic has a `fail/` case named for the mistake, with the exact compiler
//! output in its `.stderr`; every accepted form has a `pass/` case that compiles and runs
//! with `#![deny(warnings)]`, so the generated code is warning-free too.
//!
//! After changing a diagnostic, regenerate with `TRYBUILD=overwrite cargo test -p wf-ui-tests`
//! and read the diff of the `.stderr` files before committing it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
