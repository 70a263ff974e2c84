//! The bounded LRU of live runs. An evicted run holds no memory; its next workflow task (or
//! query) rebuilds it by replay.

use std::collections::{BTreeMap, HashMap};

/// A least-recently-used map with a fixed capacity.
pub(crate) struct Lru<V> {
    capacity: usize,
    tick: u64,
    /// Values boxed: a slot of the table stays small (a cached run is ~1 KB), so the table is
    /// a fraction of the entries it holds and a resize copies pointers, not runs.
    entries: HashMap<String, (Box<V>, u64)>,
    order: BTreeMap<u64, String>,
}

impl<V> Lru<V> {
    pub fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// Removes and returns the entry (a run being worked on is out of the cache).
    pub fn take(&mut self, key: &str) -> Option<V> {
        let (v, t) = self.entries.remove(key)?;
        self.order.remove(&t);
        Some(*v)
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry, without changing its recency.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.entries.get(key).map(|(v, _)| &**v)
    }

    /// Inserts as most recent; evicts (and returns) the least recent beyond capacity.
    pub fn put(&mut self, key: String, value: V) -> Vec<V> {
        self.take(&key);
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(key, (Box::new(value), self.tick));
        let mut evicted = Vec::new();
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            evicted.extend(self.entries.remove(&oldest).map(|(v, _)| *v));
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_put() {
        let mut c = Lru::new(2);
        c.put("a".into(), 1);
        c.put("b".into(), 2);
        let a = c.take("a").unwrap();
        c.put("a".into(), a);
        c.put("c".into(), 3);
        assert!(c.get("b").is_none());
        assert_eq!((c.get("a"), c.get("c")), (Some(&1), Some(&3)));
    }
}
