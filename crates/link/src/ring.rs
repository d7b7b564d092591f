//! A FIFO of `Copy` records addressed by a running 32-bit position (a
//! segment's sequence index, say): the record at position `p` lives in slot
//! `p & mask` of a power-of-two buffer, so finding it is a mask, not the
//! offset-and-wrap of `VecDeque`. The buffer doubles when full and is
//! otherwise reused: no allocation in steady state.

#[derive(Clone, Debug)]
pub struct Ring<T> {
    /// Never empty, and its length a power of two.
    buf: Box<[T]>,
    /// `buf.len() - 1`, kept rather than computed at each access: every
    /// `pos & mask` is a slot of `buf`.
    mask: u32,
    /// Position of the first record.
    start: u32,
    len: u32,
}

impl<T: Copy + Default> Default for Ring<T> {
    fn default() -> Self {
        Ring::with_start(0)
    }
}

impl<T: Copy + Default> Ring<T> {
    /// An empty ring whose first record will have position `start`.
    pub fn with_start(start: u32) -> Ring<T> {
        Ring {
            buf: Box::new([T::default()]),
            mask: 0,
            start,
            len: 0,
        }
    }

    fn slot(&self, pos: u32) -> usize {
        (pos & self.mask) as usize
    }

    /// The slot of `pos`, unchecked: the pipes', queues' and scoreboard's
    /// rings are read and written several times per packet, and their
    /// bounds checks were 1.2% of case A's instructions (callgrind).
    fn slot_ref(&self, pos: u32) -> &T {
        // SAFETY: `mask` is `buf.len() - 1` and `buf`'s length a power of
        // two (at least 1), so `slot(pos)` is below it for every `pos`.
        unsafe { self.buf.get_unchecked(self.slot(pos)) }
    }

    fn slot_mut(&mut self, pos: u32) -> &mut T {
        let i = self.slot(pos);
        // SAFETY: as in `slot_ref`.
        unsafe { self.buf.get_unchecked_mut(i) }
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Position the next pushed record gets.
    pub fn end(&self) -> u32 {
        self.start.wrapping_add(self.len)
    }

    pub fn contains(&self, pos: u32) -> bool {
        pos.wrapping_sub(self.start) < self.len
    }

    /// The record at `pos`, which must be in the ring.
    pub fn get(&self, pos: u32) -> &T {
        debug_assert!(self.contains(pos), "{pos} outside the ring");
        self.slot_ref(pos)
    }

    pub fn get_mut(&mut self, pos: u32) -> &mut T {
        debug_assert!(self.contains(pos), "{pos} outside the ring");
        self.slot_mut(pos)
    }

    pub fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| self.get(self.start))
    }

    pub fn push_back(&mut self, v: T) {
        if self.len > self.mask {
            self.grow();
        }
        *self.slot_mut(self.end()) = v;
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = *self.get(self.start);
        self.start = self.start.wrapping_add(1);
        self.len -= 1;
        Some(v)
    }

    /// Empties the ring; the next record pushed keeps the next position.
    pub fn clear(&mut self) {
        self.start = self.end();
        self.len = 0;
    }

    /// Doubles the buffer, each record moving to its slot under the new
    /// mask.
    #[cold]
    fn grow(&mut self) {
        let cap = (2 * self.buf.len()).max(16);
        let mut buf = vec![T::default(); cap].into_boxed_slice();
        for k in 0..self.len {
            let pos = self.start.wrapping_add(k);
            buf[pos as usize & (cap - 1)] = *self.get(pos);
        }
        self.buf = buf;
        // Exact: the ring grows when full, and a full ring holds at most
        // 2^32 - 1 records (`len` is a u32), so `cap - 1` fits.
        self.mask = (cap - 1) as u32;
    }

    /// The records front to back (the tests' view).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).map(move |k| self.get(self.start.wrapping_add(k)))
    }

    /// Keeps only the records for which `keep` is true, in order; the
    /// kept records take consecutive positions from the front's.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut kept = 0;
        for k in 0..self.len {
            let v = *self.get(self.start.wrapping_add(k));
            if keep(&v) {
                let at = self.start.wrapping_add(kept);
                *self.get_mut(at) = v;
                kept += 1;
            }
        }
        self.len = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    proptest::proptest! {
        /// Pushes, pops, retains and clears behave as a VecDeque's, across
        /// growth and the wrap of 32-bit positions.
        #[test]
        fn behaves_as_a_deque(
            start in proptest::prelude::any::<u32>(),
            ops in proptest::collection::vec(0u8..11, 1..600),
        ) {
            let mut r: Ring<u64> = Ring::with_start(start);
            let mut d: VecDeque<u64> = VecDeque::new();
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    0..=5 => {
                        r.push_back(n as u64);
                        d.push_back(n as u64);
                    }
                    6..=8 => {
                        proptest::prop_assert_eq!(r.pop_front(), d.pop_front());
                    }
                    9 => {
                        r.retain(|v| v % 3 != 0);
                        d.retain(|v| v % 3 != 0);
                    }
                    _ => {
                        r.clear();
                        d.clear();
                    }
                }
                proptest::prop_assert_eq!(r.len() as usize, d.len());
                proptest::prop_assert_eq!(r.front(), d.front());
                proptest::prop_assert!(r.iter().eq(d.iter()));
                for (k, v) in d.iter().enumerate() {
                    let pos = r.start.wrapping_add(k as u32);
                    proptest::prop_assert!(r.contains(pos));
                    proptest::prop_assert_eq!(r.get(pos), v);
                }
                proptest::prop_assert!(!r.contains(r.end()));
            }
        }
    }
}
