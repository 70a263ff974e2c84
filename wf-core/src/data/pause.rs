//! An operator's pause of a run ([`PauseMark`]): who paused it, why, when. A paused run's
//! workflow task lease is held by the operator, for ever, until unpause: no engine polls or
//! leases it, and a commit without a lease is refused, so messages and fired timers wait in
//! its inbox in arrival order. The mark is the lease holder's name, so that pausing needs no
//! column of its own and every lease check already honours it.

/// The lease expiry a pause holds a run's workflow task (and its waiting activities) with.
pub const PAUSE_LEASE_UNTIL: i64 = i64::MAX;

/// The prefix of a lease holder's name that marks a pause (engine ids never start with it).
const PREFIX: &str = "paused:";

/// Who paused a run, why and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseMark {
    /// The caller: the token role over HTTP (`admin`), `client` for an in-process client.
    pub by: String,
    /// The operator's reason (may be empty).
    pub reason: String,
    /// When it was paused (engine-clock ms).
    pub at_ms: i64,
}

impl PauseMark {
    /// The lease holder's name that records this mark (`paused:<ms>:<by>:<reason>`).
    pub fn to_owner(&self) -> String {
        // `by` must not hold the separator; a reason may hold anything.
        let by = self.by.replace(':', "_");
        format!("{PREFIX}{}:{by}:{}", self.at_ms, self.reason)
    }

    /// The mark a lease holder's name records, if it is a pause's.
    pub fn from_owner(owner: &str) -> Option<PauseMark> {
        let rest = owner.strip_prefix(PREFIX)?;
        let mut parts = rest.splitn(3, ':');
        let at_ms = parts.next()?.parse().ok()?;
        let by = parts.next()?.to_string();
        let reason = parts.next()?.to_string();
        Some(PauseMark { by, reason, at_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_survives_its_owner_name() {
        let mark = PauseMark {
            by: "ad:min".into(),
            reason: "bad deploy: wait".into(),
            at_ms: 42,
        };
        let back = PauseMark::from_owner(&mark.to_owner()).expect("a pause");
        assert_eq!(back.by, "ad_min");
        assert_eq!(back.reason, "bad deploy: wait");
        assert_eq!(back.at_ms, 42);
        assert_eq!(PauseMark::from_owner("engine-1"), None);
    }
}
