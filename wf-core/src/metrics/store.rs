//! The instruments of a store's writes: transactions, how many requests each folds together
//! (group commit), how long each takes, and how long its `COMMIT` (the fsync) takes.

use super::instruments::{Counter, Histogram, SECONDS, SIZES};
use super::snapshot::{MetricFamily, MetricKind, Sample, SampleValue};
use std::time::Duration;

/// What a store records about its write transactions; an engine includes them in its
/// [`metrics`](crate::Engine::metrics). A store creates one, records every write transaction
/// into it, and hands it out from `Store::metrics`. Recording
/// is a few atomic additions.
///
/// ```
/// use std::time::Duration;
/// let m = wf_core::metrics::StoreMetrics::new("example");
/// m.record_transaction(8, true, true, Duration::from_micros(900), Duration::from_micros(700));
/// ```
#[derive(Debug)]
pub struct StoreMetrics {
    store: &'static str,
    /// By durability (durable, soft) and result (ok, error).
    transactions: [[Counter; 2]; 2],
    batch_size: Histogram,
    transaction_seconds: Histogram,
    commit_seconds: Histogram,
}

const DURABILITY: [&str; 2] = ["durable", "soft"];
const RESULT: [&str; 2] = ["ok", "error"];

impl StoreMetrics {
    /// The instruments of a store of kind `store` (`"sqlite"`, `"postgres"`): the value of the
    /// `store` label.
    pub fn new(store: &'static str) -> StoreMetrics {
        StoreMetrics {
            store,
            transactions: Default::default(),
            batch_size: Histogram::new(&SIZES),
            transaction_seconds: Histogram::new(&SECONDS),
            commit_seconds: Histogram::new(&SECONDS),
        }
    }

    /// Records one write transaction: the `requests` it folded together, whether it had to be
    /// durable (an fsync), whether it committed, its whole duration, and its `COMMIT`'s (for
    /// a durable transaction on a file, the fsync).
    pub fn record_transaction(
        &self,
        requests: usize,
        durable: bool,
        ok: bool,
        total: Duration,
        commit: Duration,
    ) {
        self.transactions[usize::from(!durable)][usize::from(!ok)].inc();
        self.batch_size.observe(requests as u64);
        self.transaction_seconds.observe_duration(total);
        if durable {
            self.commit_seconds.observe_duration(commit);
        }
    }

    /// Appends this store's families to `out`.
    pub(crate) fn families(&self, out: &mut Vec<MetricFamily>) {
        let store = || ("store", self.store.to_string());
        let mut transactions = Vec::new();
        for (d, by_result) in self.transactions.iter().enumerate() {
            for (r, counter) in by_result.iter().enumerate() {
                transactions.push(Sample {
                    labels: vec![
                        store(),
                        ("durability", DURABILITY[d].into()),
                        ("result", RESULT[r].into()),
                    ],
                    value: counter.sample(),
                });
            }
        }
        let one = |value: SampleValue| {
            vec![Sample {
                labels: vec![store()],
                value,
            }]
        };
        out.extend([
            MetricFamily {
                name: "wf_store_transactions_total",
                help: "Write transactions of the store (each folds the requests that arrived together: group commit), by durability and result.",
                kind: MetricKind::Counter,
                samples: transactions,
            },
            MetricFamily {
                name: "wf_store_transaction_requests",
                help: "Requests (workflow task commits, starts, signals, ...) folded into one write transaction.",
                kind: MetricKind::Histogram,
                samples: one(self.batch_size.sample()),
            },
            MetricFamily {
                name: "wf_store_transaction_seconds",
                help: "Duration of a write transaction, from BEGIN to the end of COMMIT.",
                kind: MetricKind::Histogram,
                samples: one(self.transaction_seconds.sample()),
            },
            MetricFamily {
                name: "wf_store_commit_seconds",
                help: "Duration of the COMMIT of a durable write transaction (for SQLite, the fsync).",
                kind: MetricKind::Histogram,
                samples: one(self.commit_seconds.sample()),
            },
        ]);
    }
}
