//! Queue disciplines at a link's head. Each decides, per packet, to queue,
//! mark or drop; the link asks it for the next packet to send.
//!
//! Today: tail-drop FIFO sized in packets or bytes, with optional
//! DCTCP-style step ECN marking at K packets.

use std::collections::VecDeque;

use crate::packet::{Ecn, Packet};
use crate::time::Time;

/// What the queue did with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Queued,
    /// Queued with its ECN field set to CE.
    Marked,
    Dropped,
}

/// The size limit of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u32),
    Bytes(u64),
}

/// A tail-drop FIFO.
#[derive(Clone, Debug)]
pub struct Fifo {
    limit: Limit,
    /// Mark ECN-capable packets CE when at least this many packets are
    /// queued (DCTCP's K); `None`: never mark.
    mark_at: Option<u32>,
    q: VecDeque<Packet>,
    bytes: u64,
}

impl Fifo {
    pub fn new(limit: Limit, mark_at: Option<u32>) -> Fifo {
        let cap = match limit {
            Limit::Packets(n) => n as usize + 1,
            Limit::Bytes(b) => (b / 1500) as usize + 1,
        };
        Fifo {
            limit,
            mark_at,
            q: VecDeque::with_capacity(cap.min(1 << 16)),
            bytes: 0,
        }
    }

    fn fits(&self, p: &Packet) -> bool {
        match self.limit {
            Limit::Packets(n) => (self.q.len() as u32) < n,
            Limit::Bytes(b) => self.bytes + p.bytes as u64 <= b,
        }
    }

    pub fn enqueue(&mut self, now: Time, mut p: Packet) -> Verdict {
        if !self.fits(&p) {
            return Verdict::Dropped;
        }
        let mut verdict = Verdict::Queued;
        if let Some(k) = self.mark_at {
            if self.q.len() as u32 >= k && p.ecn != Ecn::NotEct {
                p.ecn = Ecn::Ce;
                verdict = Verdict::Marked;
            }
        }
        p.enqueued = now;
        self.bytes += p.bytes as u64;
        self.q.push_back(p);
        verdict
    }

    pub fn dequeue(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.bytes as u64;
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_drop_never_exceeds_its_limit() {
        let mut f = Fifo::new(Limit::Packets(3), None);
        let p = Packet::data(0, 0, 1500);
        let v: Vec<_> = (0..5).map(|_| f.enqueue(0, p)).collect();
        assert_eq!(v[..3], [Verdict::Queued; 3]);
        assert_eq!(v[3..], [Verdict::Dropped; 2]);
        assert_eq!(f.len(), 3);
        let mut f = Fifo::new(Limit::Bytes(4000), None);
        assert_eq!(f.enqueue(0, p), Verdict::Queued);
        assert_eq!(f.enqueue(0, p), Verdict::Queued);
        assert_eq!(f.enqueue(0, p), Verdict::Dropped);
        assert_eq!(f.enqueue(0, Packet::ack(0, 0, 52)), Verdict::Queued);
        assert_eq!(f.bytes(), 3052);
    }

    #[test]
    fn step_marking_at_k_marks_instead_of_dropping() {
        let mut f = Fifo::new(Limit::Packets(100), Some(2));
        let mut p = Packet::data(0, 0, 1500);
        p.ecn = Ecn::Ect;
        let v: Vec<_> = (0..4).map(|_| f.enqueue(0, p)).collect();
        assert_eq!(
            v,
            [
                Verdict::Queued,
                Verdict::Queued,
                Verdict::Marked,
                Verdict::Marked
            ]
        );
        assert_eq!(f.dequeue().unwrap().ecn, Ecn::Ect);
        f.dequeue();
        assert_eq!(f.dequeue().unwrap().ecn, Ecn::Ce);
        // Not ECN-capable: queued unmarked.
        let q = Packet::data(0, 0, 1500);
        for _ in 0..3 {
            f.enqueue(0, q);
        }
        assert!(std::iter::from_fn(|| f.dequeue())
            .skip(1)
            .all(|p| p.ecn == Ecn::NotEct));
    }
}
