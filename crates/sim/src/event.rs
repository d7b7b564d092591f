//! The event list: one binary heap keyed by (time, insertion order), so
//! events at the same instant run in the order they were scheduled and a run
//! is deterministic. Components re-arm themselves; nothing is cancelled
//! (a stale timer finds its deadline moved and does nothing).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

/// Time in the high 64 bits, insertion order in the low: one comparison
/// orders by time, then by scheduling order.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed: the heap pops the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

/// A time-ordered list of pending events.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
        }
    }

    pub fn schedule(&mut self, at: Time, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            key: (at as u128) << 64 | self.seq as u128,
            ev,
        });
    }

    /// The next event and its time.
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|e| ((e.key >> 64) as Time, e.ev))
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
}
