//! How a connection to a server that stopped answering is found out: TCP keepalives and
//! `TCP_USER_TIMEOUT` on the client's side, the same settings asked of the server for its side,
//! and a limit on transactions left idle (a cut-off process's locks must not stall the others).
//! All derived from one setting, [`PostgresOptions::network_timeout`].
//!
//! [`PostgresOptions::network_timeout`]: crate::PostgresOptions::network_timeout

use std::time::Duration;
use tokio_postgres::Config;

/// Probes that go unanswered before the connection counts as lost.
const PROBES: u32 = 3;

/// The idle time before the first probe and the interval between probes that add up to
/// about `timeout` (at least a second each: the kernel counts in seconds).
fn probes(timeout: Duration) -> (Duration, Duration) {
    let secs = timeout.as_secs().max(2);
    let interval = (secs / (2 * u64::from(PROBES))).max(1);
    let idle = secs.saturating_sub(interval * u64::from(PROBES)).max(1);
    (Duration::from_secs(idle), Duration::from_secs(interval))
}

/// The client's side: keepalives and `TCP_USER_TIMEOUT`, unless the connection string set
/// them itself.
pub(crate) fn client_side(config: &mut Config, url: &str, timeout: Duration) {
    let (idle, interval) = probes(timeout);
    if !url.contains("keepalives") {
        config
            .keepalives(true)
            .keepalives_idle(idle)
            .keepalives_interval(interval)
            .keepalives_retries(PROBES);
    }
    if !url.contains("tcp_user_timeout") {
        config.tcp_user_timeout(timeout);
    }
}

/// The server's side, as statements for a new session (each starting with `;`).
pub(crate) fn server_side(timeout: Duration) -> String {
    let (idle, interval) = probes(timeout);
    format!(
        "; SET tcp_keepalives_idle = {}; SET tcp_keepalives_interval = {}; \
         SET tcp_keepalives_count = {PROBES}; SET tcp_user_timeout = {}; \
         SET idle_in_transaction_session_timeout = {}",
        idle.as_secs(),
        interval.as_secs(),
        timeout.as_millis(),
        (timeout * 3).as_millis(),
    )
}

#[cfg(test)]
mod tests {
    use super::probes;
    use std::time::Duration;

    #[test]
    fn probes_add_up_to_about_the_timeout() {
        for secs in [2, 5, 10, 30, 120] {
            let (idle, interval) = probes(Duration::from_secs(secs));
            let total = idle + interval * super::PROBES;
            assert!(idle >= Duration::from_secs(1) && interval >= Duration::from_secs(1));
            assert!(
                total <= Duration::from_secs(secs.max(4)),
                "{secs} s: {idle:?} + 3 × {interval:?}"
            );
        }
        assert_eq!(
            probes(Duration::from_secs(10)),
            (Duration::from_secs(7), Duration::from_secs(1))
        );
    }
}
