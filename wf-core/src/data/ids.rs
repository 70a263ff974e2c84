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
