//! A map that can undo: every change records the value it replaced, so that a failed call (or
//! a rolled-back savepoint) puts back exactly what it changed, newest change first.

use std::collections::BTreeMap;
use std::ops::RangeBounds;

/// A table of the memory store.
pub(super) struct UndoMap<K, V> {
    map: BTreeMap<K, V>,
    /// (key, the value it had before the change; `None`: it was absent), oldest first.
    log: Vec<(K, Option<V>)>,
}

impl<K, V> Default for UndoMap<K, V> {
    fn default() -> Self {
        UndoMap {
            map: BTreeMap::new(),
            log: Vec::new(),
        }
    }
}

impl<K: Ord + Clone, V: Clone> UndoMap<K, V> {
    pub(super) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub(super) fn contains_key(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    pub(super) fn values(&self) -> impl DoubleEndedIterator<Item = &V> {
        self.map.values()
    }

    pub(super) fn range(
        &self,
        keys: impl RangeBounds<K>,
    ) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        self.map.range(keys)
    }

    /// Sets `key` to `value`.
    pub(super) fn insert(&mut self, key: K, value: V) {
        let old = self.map.insert(key.clone(), value);
        self.log.push((key, old));
    }

    /// Removes `key`; whether it was there.
    pub(super) fn remove(&mut self, key: &K) -> bool {
        let Some(old) = self.map.remove(key) else {
            return false;
        };
        self.log.push((key.clone(), Some(old)));
        true
    }

    /// Removes every entry `doomed` picks (a scan of the whole map).
    pub(super) fn remove_where(&mut self, doomed: impl Fn(&K, &V) -> bool) {
        let keys: Vec<K> = self
            .map
            .iter()
            .filter(|(k, v)| doomed(k, v))
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.remove(&key);
        }
    }

    /// Removes every key in the range.
    pub(super) fn remove_range(&mut self, keys: impl RangeBounds<K>) {
        let doomed: Vec<K> = self.map.range(keys).map(|(k, _)| k.clone()).collect();
        for key in doomed {
            self.remove(&key);
        }
    }

    /// Changes the value at `key` if there is one and `change` accepts it (returns true); whether
    /// it did.
    pub(super) fn update(&mut self, key: &K, change: impl FnOnce(&mut V) -> bool) -> bool {
        let Some(value) = self.map.get_mut(key) else {
            return false;
        };
        let old = value.clone();
        if !change(value) {
            // A refused change must leave the value as it was.
            *value = old;
            return false;
        }
        self.log.push((key.clone(), Some(old)));
        true
    }
}

/// The undo side of a table, without its types: what a transaction needs of every table.
pub(super) trait Journal {
    /// A point to roll back to.
    fn mark(&self) -> usize;
    /// Undoes the changes made since `mark`, newest first.
    fn undo_to(&mut self, mark: usize);
    /// Keeps every change (the transaction committed).
    fn forget(&mut self);
}

impl<K: Ord, V> Journal for UndoMap<K, V> {
    fn mark(&self) -> usize {
        self.log.len()
    }

    fn undo_to(&mut self, mark: usize) {
        while self.log.len() > mark {
            let Some((key, old)) = self.log.pop() else {
                break;
            };
            match old {
                Some(value) => self.map.insert(key, value),
                None => self.map.remove(&key),
            };
        }
    }

    fn forget(&mut self) {
        self.log.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_puts_back_every_change_newest_first() {
        let mut t: UndoMap<u32, &str> = UndoMap::default();
        t.insert(1, "one");
        t.forget();
        let start = t.mark();
        t.insert(1, "uno");
        t.insert(2, "two");
        assert!(t.update(&2, |v| {
            *v = "dos";
            true
        }));
        assert!(!t.update(&1, |v| {
            *v = "refused";
            false
        }));
        assert!(t.remove(&1));
        t.insert(1, "eins");
        t.undo_to(start);
        assert_eq!(t.range(..).collect::<Vec<_>>(), [(&1, &"one")]);
    }
}
