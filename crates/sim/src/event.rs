//! The event list: one binary heap keyed by (time, insertion order), so
//! events at the same instant run in the order they were scheduled and a run
//! is deterministic. Components re-arm themselves; nothing is cancelled
//! (a stale timer finds its deadline moved and does nothing).

use crate::time::Time;

/// What happens when an event fires. Small and `Copy`: no allocation per
/// event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An event-driven link (AQM) finished sending its current packet.
    LinkTxDone(u16),
    /// The head of a propagation pipe arrives.
    PipeArrival(u32),
    /// A flow's timer (RTO, TLP, RACK reorder, delayed ACK, pacing) may
    /// be due.
    FlowTimer(u32),
    /// A flow starts.
    FlowStart(u32),
    /// A flow stops sending (bulk flows with a stop time).
    FlowStop(u32),
    /// Take a sample of every flow and queue.
    Sample,
    /// A ping flow sends its next echo request.
    PingSend(u32),
    /// A UDP flow sends its next datagram.
    UdpSend(u32),
    /// A request/response flow's client sends its next request.
    RequestSend(u32),
}

/// A pending event. Ordered by time, then by `seq`, the order of
/// scheduling: unique, so the order of events is total and a run repeats.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: Time,
    seq: u64,
    ev: Event,
}

impl Entry {
    fn before(&self, o: &Entry) -> bool {
        self.time < o.time || (self.time == o.time && self.seq < o.seq)
    }
}

/// A time-ordered list of pending events: a binary min-heap of 24-byte
/// entries, sifted with a hole (each level moves one entry, and the
/// comparison is two integer compares rather than a 128-bit one).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: Vec<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue {
            heap: Vec::with_capacity(1024),
            seq: 0,
        }
    }

    pub fn schedule(&mut self, at: Time, ev: Event) {
        self.seq += 1;
        let e = Entry {
            time: at,
            seq: self.seq,
            ev,
        };
        self.heap.push(e);
        let h = self.heap.as_mut_slice();
        // The hole, from the new last slot up: below `h.len()` throughout.
        let mut hole = h.len() - 1;
        while hole > 0 {
            let parent = (hole - 1) / 2;
            // SAFETY: `parent < hole < h.len()`.
            let p = unsafe { *h.get_unchecked(parent) };
            if !e.before(&p) {
                break;
            }
            // SAFETY: as above.
            unsafe { *h.get_unchecked_mut(hole) = p };
            hole = parent;
        }
        // SAFETY: as above.
        unsafe { *h.get_unchecked_mut(hole) = e };
    }

    /// The next event and its time.
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let h = &mut self.heap;
        let last = h.pop()?;
        let Some(&top) = h.first() else {
            return Some((last.time, last.ev));
        };
        self.sift_down_from_root(last);
        Some((top.time, top.ev))
    }

    /// The next event and its time, left in the queue.
    pub fn peek(&self) -> Option<(Time, Event)> {
        self.heap.first().map(|e| (e.time, e.ev))
    }

    /// Replaces the next event by `ev` at `at`, scheduled now: what a pop
    /// followed by `schedule(at, ev)` does, with one sift instead of two.
    /// Anything scheduled since the peek sorts after the replaced event
    /// (no earlier time, a later `seq`), so it is still the next one.
    /// (On an empty queue it is `schedule`.)
    pub fn replace_next(&mut self, at: Time, ev: Event) {
        self.seq += 1;
        let e = Entry {
            time: at,
            seq: self.seq,
            ev,
        };
        if self.heap.is_empty() {
            self.heap.push(e);
        } else {
            self.sift_down_from_root(e);
        }
    }

    /// Would the next event, replaced by one at `at` scheduled now, still
    /// be the next? Only if `at` is before every other pending event (at
    /// the same time, one scheduled earlier goes first). Then the caller
    /// may handle it without touching the queue, leaving the entry it
    /// replaces in place: anything scheduled meanwhile is no earlier than
    /// `at` and stays below it.
    #[inline]
    pub fn stays_next(&self, at: Time) -> bool {
        // The second earliest entry of a binary heap is one of the root's
        // children.
        let h = &self.heap;
        h.get(1).is_none_or(|e| at < e.time) && h.get(2).is_none_or(|e| at < e.time)
    }

    /// Puts `e` in the root's place, in a queue that is not empty, and
    /// moves it down to where it belongs. The hole it fills is written
    /// without a bounds check: those checks (and the panic paths that come
    /// with them) cost 2% of case A's instructions (callgrind).
    fn sift_down_from_root(&mut self, e: Entry) {
        let h = self.heap.as_mut_slice();
        let n = h.len();
        debug_assert!(n > 0, "sifting in an empty queue");
        // Below `n` throughout: 0 in a queue that is not empty (both
        // callers check), then a child index that was compared with `n`.
        let mut hole = 0;
        loop {
            let mut child = 2 * hole + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && h[child + 1].before(&h[child]) {
                child += 1;
            }
            let c = h[child];
            if !c.before(&e) {
                break;
            }
            // SAFETY: `hole < n` (above).
            unsafe { *h.get_unchecked_mut(hole) = c };
            hole = child;
        }
        // SAFETY: `hole < n` (above).
        unsafe { *h.get_unchecked_mut(hole) = e };
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_scheduling_order() {
        let mut q = EventQueue::new();
        q.schedule(30, Event::Sample);
        q.schedule(10, Event::FlowTimer(1));
        q.schedule(10, Event::FlowTimer(2));
        q.schedule(20, Event::FlowStart(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (10, Event::FlowTimer(1)),
                (10, Event::FlowTimer(2)),
                (20, Event::FlowStart(0)),
                (30, Event::Sample)
            ]
        );
    }

    #[test]
    fn replacing_in_an_empty_queue_schedules() {
        let mut q = EventQueue::new();
        q.replace_next(5, Event::Sample);
        assert_eq!(q.pop(), Some((5, Event::Sample)));
        assert_eq!(q.pop(), None);
    }

    proptest::proptest! {
        /// Any interleaving of schedules and pops comes out in (time,
        /// scheduling order), as a sort of what was scheduled.
        #[test]
        fn pops_in_time_then_scheduling_order(ops in proptest::collection::vec((0u64..50, 0u8..3), 1..400)) {
            let mut q = EventQueue::new();
            let mut model: Vec<(Time, u64)> = Vec::new();
            let mut seq = 0u64;
            for (t, op) in ops {
                if op == 2 && !model.is_empty() {
                    // Replace the next event by one no earlier than it.
                    let next = model.iter().copied().min().unwrap();
                    proptest::prop_assert_eq!(q.peek().map(|(t, _)| t), Some(next.0));
                    model.retain(|&x| x != next);
                    seq += 1;
                    q.replace_next(next.0 + t, Event::FlowTimer(seq as u32));
                    model.push((next.0 + t, seq));
                } else if op == 1 {
                    let want = model.iter().copied().min();
                    model.retain(|&x| Some(x) != want);
                    let got = q.pop().map(|(t, e)| match e {
                        Event::FlowTimer(s) => (t, s as u64),
                        _ => unreachable!(),
                    });
                    proptest::prop_assert_eq!(got, want);
                } else {
                    seq += 1;
                    q.schedule(t, Event::FlowTimer(seq as u32));
                    model.push((t, seq));
                }
                proptest::prop_assert_eq!(q.len(), model.len());
            }
        }
    }
}
