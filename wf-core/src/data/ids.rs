//! Fresh identifiers and seeds for new runs and updates.

/// A new run or update id: a UUID v7, whose leading bits are the creation time. Ids made one
/// after another sort one after another, so a store's indexes keyed by them (a run's history,
/// its row, update records) grow at one end instead of touching a random page per new run,
/// and runs started together share pages when their next events are written together.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A seed for a new run's deterministic randomness (`ctx.random()`, `ctx.uuid()`).
pub fn rand_seed() -> u64 {
    let id = uuid::Uuid::new_v4().as_u128();
    (id >> 64) as u64 ^ id as u64
}

/// The run id of the child that run `parent_run_id` starts with command `seq`: a function of
/// the two, so that replaying the parent's code gives its child handle the id the history
/// recorded. It is a UUID v8 keeping the parent's leading 48 bits (a UUID v7's creation time,
/// so a child's rows sit near its parent's); the rest is a hash of both. The hash (FNV-1a) is
/// written here rather than taken from `std`, whose hashers may change between Rust releases.
pub fn child_run_id(parent_run_id: &str, seq: u32) -> String {
    fn fnv1a(seed: u64, parts: &[&[u8]]) -> u64 {
        let mut h = seed;
        for part in parts {
            for &b in *part {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            // Separate the parts, so ("ab", 1) and ("a", b1) differ.
            h ^= 0xff;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
    let parts: [&[u8]; 2] = [parent_run_id.as_bytes(), &seq.to_le_bytes()];
    let high = fnv1a(0xcbf2_9ce4_8422_2325, &parts);
    let low = fnv1a(0x6c62_272e_07bb_0142, &parts);
    let hash = (u128::from(high) << 64) | u128::from(low);
    let time = uuid::Uuid::parse_str(parent_run_id)
        .map(|u| u.as_u128() >> 80)
        .unwrap_or(hash >> 80);
    let mut bytes = ((time << 80) | (hash & ((1u128 << 80) - 1))).to_be_bytes();
    // Version 8 (custom), RFC 9562 variant.
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_run_ids_are_a_function_of_parent_and_seq() {
        let parent = new_id();
        assert_eq!(child_run_id(&parent, 3), child_run_id(&parent, 3));
        assert_ne!(child_run_id(&parent, 3), child_run_id(&parent, 4));
        assert_ne!(child_run_id(&parent, 3), child_run_id(&new_id(), 3));
        let child = uuid::Uuid::parse_str(&child_run_id(&parent, 3)).expect("a UUID");
        assert_eq!(child.get_version_num(), 8);
        assert_eq!(
            &child.to_string()[..13],
            &parent[..13],
            "keeps the parent's time"
        );
        // Fixed across releases: replays of old histories depend on it.
        assert_eq!(
            child_run_id("0190b6a4-5f3c-7abc-8def-0123456789ab", 1),
            "0190b6a4-5f3c-83c6-a787-6e87455c4ea5"
        );
    }
}
