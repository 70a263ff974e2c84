//! The instruments: a counter, a gauge and a histogram with fixed buckets, each a handful of
//! atomics. Recording is one or two relaxed atomic additions: no lock, no allocation.

use super::snapshot::SampleValue;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// A monotonic count.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn add(&self, n: u64) {
        if n > 0 {
            self.0.fetch_add(n, Relaxed);
        }
    }

    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }

    pub fn sample(&self) -> SampleValue {
        SampleValue::Number(self.get() as f64)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub(crate) struct Gauge(AtomicI64);

impl Gauge {
    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Relaxed);
    }

    pub fn set(&self, v: i64) {
        self.0.store(v, Relaxed);
    }

    pub fn get(&self) -> i64 {
        self.0.load(Relaxed)
    }
}

/// The fixed bucket bounds of a histogram, in its base unit, and the factor that turns the
/// base unit into the exposed one (microseconds into seconds).
#[derive(Debug)]
pub(crate) struct Buckets {
    pub bounds: &'static [u64],
    pub scale: f64,
}

/// Durations, recorded in microseconds, exposed in seconds: 50 µs to 10 s.
pub(crate) const SECONDS: Buckets = Buckets {
    bounds: &[
        50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
        1_000_000, 2_500_000, 5_000_000, 10_000_000,
    ],
    scale: 1e-6,
};

/// Counts (requests per transaction): 1 to 1,024.
pub(crate) const SIZES: Buckets = Buckets {
    bounds: &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    scale: 1.0,
};

/// A histogram with fixed buckets: one atomic per bucket (not cumulative: cumulated when read)
/// and one for the sum.
#[derive(Debug)]
pub(crate) struct Histogram {
    buckets: &'static Buckets,
    /// `counts[i]`: observations in `(bounds[i-1], bounds[i]]`; the last one, above every bound.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
}

impl Histogram {
    pub fn new(buckets: &'static Buckets) -> Histogram {
        Histogram {
            buckets,
            counts: (0..=buckets.bounds.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            sum: AtomicU64::new(0),
        }
    }

    /// Records `value`, in the base unit.
    pub fn observe(&self, value: u64) {
        let i = self.buckets.bounds.partition_point(|&b| b < value);
        self.counts[i].fetch_add(1, Relaxed);
        self.sum.fetch_add(value, Relaxed);
    }

    /// Records a duration (for a histogram in [`SECONDS`]).
    pub fn observe_duration(&self, d: Duration) {
        self.observe(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// The cumulative buckets, count and sum, in the exposed unit. The count is the last
    /// bucket's, so the two agree even while other threads record.
    pub fn sample(&self) -> SampleValue {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(self.counts.len());
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c.load(Relaxed);
            let bound = match self.buckets.bounds.get(i) {
                Some(&b) => b as f64 * self.buckets.scale,
                None => f64::INFINITY,
            };
            buckets.push((bound, cumulative));
        }
        SampleValue::Histogram {
            buckets,
            count: cumulative,
            sum: self.sum.load(Relaxed) as f64 * self.buckets.scale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_bounds_inclusive() {
        let h = Histogram::new(&SIZES);
        for v in [1, 1, 2, 3, 1024, 5000] {
            h.observe(v);
        }
        let SampleValue::Histogram {
            buckets,
            count,
            sum,
        } = h.sample()
        else {
            panic!("a histogram samples as one");
        };
        assert_eq!(count, 6);
        assert_eq!(sum, 6031.0);
        assert_eq!(buckets[0], (1.0, 2)); // le=1 holds both 1s
        assert_eq!(buckets[1], (2.0, 3));
        assert_eq!(buckets[2], (4.0, 4));
        assert_eq!(buckets[10], (1024.0, 5));
        assert_eq!(buckets[11], (f64::INFINITY, 6));
    }

    #[test]
    fn durations_are_exposed_in_seconds() {
        let h = Histogram::new(&SECONDS);
        h.observe_duration(Duration::from_millis(3));
        let SampleValue::Histogram { buckets, sum, .. } = h.sample() else {
            panic!("a histogram samples as one");
        };
        assert!((sum - 0.003).abs() < 1e-12);
        // 3 ms falls in (2.5 ms, 5 ms].
        let five_ms = buckets.iter().find(|(b, _)| (*b - 0.005).abs() < 1e-12);
        assert_eq!(five_ms.map(|(_, c)| *c), Some(1));
        assert_eq!(buckets[5].1, 0); // le=0.0025
    }
}
