//! Compile-time tests of wf's macros: see `tests/ui.rs` and the cases in `tests/ui/`.
