//! A bounded map from peer keys to values that evicts the least recently
//! used entry when full: memory stays proportional to its capacity however
//! many peers pass through. Entries live in a slab linked in use order.

use std::collections::HashMap;

const NONE: usize = usize::MAX;

#[derive(Clone, Debug)]
struct Node<V> {
    key: u128,
    value: V,
    prev: usize,
    next: usize,
}

/// An LRU map with a fixed capacity.
#[derive(Clone, Debug)]
pub struct Lru<V> {
    map: HashMap<u128, usize>,
    slab: Vec<Node<V>>,
    /// Most and least recently used.
    head: usize,
    tail: usize,
    capacity: usize,
    /// Entries evicted so far.
    pub evictions: u64,
}

impl<V> Lru<V> {
    /// A map holding at most `capacity` (at least 1) entries.
    pub fn new(capacity: usize) -> Lru<V> {
        let capacity = capacity.max(1);
        Lru {
            map: HashMap::with_capacity(capacity.min(1 << 16)),
            slab: Vec::with_capacity(capacity.min(1 << 16)),
            head: NONE,
            tail: NONE,
            capacity,
            evictions: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.slab.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.slab[i].prev, self.slab[i].next);
        if p != NONE {
            self.slab[p].next = n;
        } else {
            self.head = n;
        }
        if n != NONE {
            self.slab[n].prev = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, i: usize) {
        self.slab[i].prev = NONE;
        self.slab[i].next = self.head;
        if self.head != NONE {
            self.slab[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NONE {
            self.tail = i;
        }
    }

    /// The value of `key` without changing its recency.
    pub fn peek(&self, key: u128) -> Option<&V> {
        self.map.get(&key).map(|&i| &self.slab[i].value)
    }

    /// The value of `key`, now the most recently used.
    pub fn get_mut(&mut self, key: u128) -> Option<&mut V> {
        let i = *self.map.get(&key)?;
        self.unlink(i);
        self.push_front(i);
        Some(&mut self.slab[i].value)
    }

    /// The value of `key`, inserted with `make()` if absent (evicting the
    /// least recently used entry when full); now the most recently used.
    pub fn get_or_insert_with(&mut self, key: u128, make: impl FnOnce() -> V) -> &mut V {
        if self.map.contains_key(&key) {
            return self.get_mut(key).expect("present");
        }
        let i = if self.slab.len() < self.capacity {
            self.slab.push(Node {
                key,
                value: make(),
                prev: NONE,
                next: NONE,
            });
            self.slab.len() - 1
        } else {
            // Reuse the least recently used slot.
            let i = self.tail;
            self.unlink(i);
            self.map.remove(&self.slab[i].key);
            self.slab[i].key = key;
            self.slab[i].value = make();
            self.evictions += 1;
            i
        };
        self.map.insert(key, i);
        self.push_front(i);
        &mut self.slab[i].value
    }

    /// Removes `key`, returning its value. The last slot moves into the
    /// freed one, so the slab stays dense.
    pub fn remove(&mut self, key: u128) -> Option<V> {
        let i = self.map.remove(&key)?;
        self.unlink(i);
        let last = self.slab.len() - 1;
        if i != last {
            // Relink the last node at its new index, i.
            let (p, n, k) = (
                self.slab[last].prev,
                self.slab[last].next,
                self.slab[last].key,
            );
            if p != NONE {
                self.slab[p].next = i;
            } else {
                self.head = i;
            }
            if n != NONE {
                self.slab[n].prev = i;
            } else {
                self.tail = i;
            }
            self.map.insert(k, i);
        }
        Some(self.slab.swap_remove(i).value)
    }

    /// Entries from most to least recently used.
    pub fn iter(&self) -> impl Iterator<Item = (u128, &V)> {
        let mut i = self.head;
        std::iter::from_fn(move || {
            if i == NONE {
                return None;
            }
            let n = &self.slab[i];
            i = n.next;
            Some((n.key, &n.value))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let mut l = Lru::new(3);
        for k in 1..=3u128 {
            *l.get_or_insert_with(k, || 0) += k as i32;
        }
        l.get_mut(1); // 1 is now the most recent; 2 the least
        l.get_or_insert_with(4, || 40);
        assert!(l.peek(2).is_none());
        assert_eq!(l.iter().map(|(k, _)| k).collect::<Vec<_>>(), [4, 1, 3]);
        assert_eq!((l.len(), l.evictions), (3, 1));
        assert_eq!(l.peek(4), Some(&40));
    }

    #[test]
    fn removing_keeps_the_order_of_the_rest() {
        let mut l = Lru::new(4);
        for k in 1..=4u128 {
            l.get_or_insert_with(k, || k * 10);
        }
        assert_eq!(l.remove(4), Some(40), "the head");
        assert_eq!(l.remove(1), Some(10), "the tail");
        assert_eq!(l.remove(9), None);
        assert_eq!(l.iter().map(|(k, _)| k).collect::<Vec<_>>(), [3, 2]);
        l.get_or_insert_with(5, || 50);
        l.get_mut(2);
        assert_eq!(l.remove(5), Some(50), "from the middle, last in the slab");
        assert_eq!(
            l.iter().map(|(k, v)| (k, *v)).collect::<Vec<_>>(),
            [(2, 20), (3, 30)]
        );
        assert_eq!(l.remove(3), Some(30));
        assert_eq!(l.remove(2), Some(20));
        assert!(l.is_empty() && l.iter().next().is_none());
        l.get_or_insert_with(7, || 70);
        assert_eq!(l.iter().map(|(k, _)| k).collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn a_million_peers_stay_within_the_capacity() {
        let mut l: Lru<[f64; 8]> = Lru::new(10_000);
        for k in 0..1_000_000u128 {
            l.get_or_insert_with(k * 7919, || [0.0; 8])[0] += 1.0;
        }
        assert_eq!(l.len(), 10_000);
        assert!(l.slab.capacity() <= 16_384 && l.map.len() == 10_000);
        assert_eq!(l.evictions, 990_000);
        // The most recent survive.
        assert!(l.peek(999_999 * 7919).is_some() && l.peek(7919).is_none());
    }
}
