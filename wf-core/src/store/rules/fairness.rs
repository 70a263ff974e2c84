//! Priority and fairness of activity attempts: the order in which a poll leases the visible
//! ones. By priority level first (1 before 5), then by virtual start, then as before (visible
//! time, run id, seq).
//!
//! The virtual start is start-time fair queuing, computed when an attempt is written so that
//! a poll only reads an index. The store keeps a *pass* per fairness key (where the key's
//! next attempt starts in virtual time) and one virtual clock (the latest virtual start a poll
//! leased). An attempt written to wait (scheduled, or retried) gets
//! `vstart = max(clock, pass[key])` and moves its key's pass to `vstart + 1 / weight`; a
//! lease moves the clock to `max(clock, vstart)`. A key with a backlog of 10,000 and a key of
//! 10 then alternate (by weight) instead of the 10 waiting behind the 10,000, and a key that
//! was idle starts at the clock, not at its old pass, so it gains no credit for idling.
//! Attempts without a key share the key `""`: with no keys at all the order is first come,
//! first served, as without fairness.
//!
//! An attempt leased at once by the engine that schedules it (an eager start) never waits:
//! it is left out of the accounting (its virtual start is the clock; no pass moves), so that
//! the commits that lease at once write no shared row.
//!
//! The memory store applies [`virtual_start`]; the SQL stores compute the same in their
//! statements (`MAX(clock, pass)`), in the transaction that writes the attempt.

/// The virtual start of an attempt of a key whose pass is `pass` (`None`: the key has none),
/// when the clock reads `clock`.
pub(crate) fn virtual_start(clock: f64, pass: Option<f64>) -> f64 {
    pass.map_or(clock, |p| p.max(clock))
}

#[cfg(test)]
mod tests {
    use super::virtual_start;

    #[test]
    fn an_idle_key_starts_at_the_clock_and_a_busy_one_at_its_pass() {
        assert_eq!(virtual_start(5.0, None), 5.0);
        assert_eq!(virtual_start(5.0, Some(2.0)), 5.0);
        assert_eq!(virtual_start(5.0, Some(9.0)), 9.0);
    }
}
