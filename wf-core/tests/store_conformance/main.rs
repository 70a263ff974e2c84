//! The store conformance suite: every property of the [`Store`](wf_core::store::Store) contract,
//! written once and run against every implementation (`memory::` and `sqlite::` test names).
//! A new store is done when it passes this suite.

#[macro_use]
mod harness;

mod activities;
mod atomicity;
mod continue_as_new;
mod deliver_dedupe;
mod large_payloads;
mod persistence;
mod start;
mod terminate;
mod timers;
mod workflow_tasks;
