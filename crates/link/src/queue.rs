//! Queue disciplines at a link's head. Each decides, per packet, to queue,
//! mark or drop; the link asks it for the next packet to send.
//!
//! This file: the tail-drop FIFO sized in packets or bytes (a BDP is sized
//! by the caller, in either), with optional DCTCP-style step ECN marking at
//! K packets. The simulator's FIFO links and the lab's delay line admit
//! packets through it.

use crate::packet::Packet;
use crate::ring::Ring;
use crate::time::Time;

/// What the queue did with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Queued,
    /// Queued with its ECN field set to CE.
    Marked,
    Dropped,
}

/// The size limit of a queue: what may wait, the packet being sent not
/// counted (as a Linux qdisc's limit counts its backlog: a packet handed
/// to the device has left the qdisc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u32),
    Bytes(u64),
}

/// A tail-drop FIFO, kept as the service start times of the packets
/// waiting: with a constant-rate link and no decision at dequeue, when each
/// packet will be sent is known the moment it arrives, so the link needs no
/// event per transmission (the packet goes straight to its pipe with its
/// departure time).
#[derive(Clone, Debug)]
pub struct Fifo {
    limit: Limit,
    /// Mark ECN-capable packets CE when at least this many packets are
    /// queued (DCTCP's K); `None`: never mark. Queued means waiting, the
    /// one being sent not counted: "more than K in the switch, the one
    /// being sent included", said the other way.
    mark_at: Option<u32>,
    /// (service start, bytes) of packets not yet in service.
    waiting: Ring<(Time, u32)>,
    bytes: u64,
}

impl Fifo {
    pub fn new(limit: Limit, mark_at: Option<u32>) -> Fifo {
        Fifo {
            limit,
            mark_at,
            // Grows to the longest queue the run reaches, not the limit.
            waiting: Ring::default(),
            bytes: 0,
        }
    }

    /// Forgets the packets whose service has started by `now`, on a link
    /// that finishes sending everything admitted at `free_at`.
    #[inline(always)]
    pub fn advance(&mut self, now: Time, free_at: Time) {
        if free_at <= now {
            // The link is idle: everything admitted has been sent. Said
            // once, rather than found by popping the waiting packets one
            // comparison at a time: whether a packet finds the link idle
            // is the FIFO's least predictable branch.
            self.waiting.clear();
            self.bytes = 0;
            return;
        }
        while let Some(&(start, b)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.bytes -= b as u64;
        }
    }

    #[inline]
    fn fits(&self, bytes: u32) -> bool {
        match self.limit {
            Limit::Packets(n) => self.waiting.len() < n,
            Limit::Bytes(b) => self.bytes + bytes as u64 <= b,
        }
    }

    /// A packet arrives at `now` and would start service at `start` (after
    /// everything queued). Call [`Fifo::advance`] first.
    #[inline(always)]
    pub fn admit<P: Packet>(&mut self, now: Time, p: &mut P, start: Time) -> Verdict {
        if start <= now {
            // The link is idle: straight into service, never queued.
            return Verdict::Queued;
        }
        let bytes = p.bytes();
        if !self.fits(bytes) {
            return Verdict::Dropped;
        }
        let mut verdict = Verdict::Queued;
        if let Some(k) = self.mark_at {
            if self.waiting.len() >= k && p.ecn_capable() {
                p.set_ce();
                verdict = Verdict::Marked;
            }
        }
        // No enqueue time kept: the departure is already known, and
        // nothing after a FIFO reads a sojourn time.
        self.bytes += bytes as u64;
        self.waiting.push_back((start, bytes));
        verdict
    }

    /// Packets and bytes waiting at `now` (not in service), on a link
    /// that finishes sending everything admitted at `free_at`.
    pub fn backlog(&mut self, now: Time, free_at: Time) -> (usize, u64) {
        self.advance(now, free_at);
        (self.len(), self.bytes())
    }

    /// Packets waiting (not in service).
    #[inline]
    pub fn len(&self) -> usize {
        self.waiting.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test::{Ecn, TestPacket as Packet};

    /// Offers `n` packets at time 0 to a busy link that sends one per 10 ns.
    fn offer(f: &mut Fifo, p: Packet, n: usize) -> Vec<(Verdict, Packet)> {
        (0..n)
            .map(|i| {
                let mut q = p;
                let v = f.admit(0, &mut q, 10 * (i as Time + 1));
                (v, q)
            })
            .collect()
    }

    #[test]
    fn tail_drop_never_exceeds_its_limit() {
        let mut f = Fifo::new(Limit::Packets(3), None);
        let p = Packet::data(0, 0, 1500);
        let v: Vec<_> = offer(&mut f, p, 5).into_iter().map(|x| x.0).collect();
        assert_eq!(v[..3], [Verdict::Queued; 3]);
        assert_eq!(v[3..], [Verdict::Dropped; 2]);
        assert_eq!(f.len(), 3);
        // Service starts at 10, 20 and 30; the link is free at 40.
        f.advance(20, 40);
        assert_eq!(f.len(), 1);
        assert_eq!(f.bytes(), 1500);
        // Once the link is idle, nothing is left waiting.
        f.advance(40, 40);
        assert!(f.is_empty());
        assert_eq!(f.bytes(), 0);
        let mut f = Fifo::new(Limit::Bytes(4000), None);
        let v: Vec<_> = offer(&mut f, p, 3).into_iter().map(|x| x.0).collect();
        assert_eq!(v, [Verdict::Queued, Verdict::Queued, Verdict::Dropped]);
        let mut a = Packet::data(0, 0, 52);
        assert_eq!(f.admit(0, &mut a, 100), Verdict::Queued);
        assert_eq!(f.bytes(), 3052);
        // An idle link takes a packet straight into service.
        let mut f = Fifo::new(Limit::Packets(1), None);
        let mut q = p;
        assert_eq!(f.admit(5, &mut q, 5), Verdict::Queued);
        assert!(f.is_empty());
    }

    #[test]
    fn step_marking_at_k_marks_instead_of_dropping() {
        let mut f = Fifo::new(Limit::Packets(100), Some(2));
        let mut p = Packet::data(0, 0, 1500);
        p.ecn = Ecn::Ect;
        let out = offer(&mut f, p, 4);
        let v: Vec<_> = out.iter().map(|x| x.0).collect();
        assert_eq!(
            v,
            [
                Verdict::Queued,
                Verdict::Queued,
                Verdict::Marked,
                Verdict::Marked
            ]
        );
        assert_eq!(out[0].1.ecn, Ecn::Ect);
        assert_eq!(out[2].1.ecn, Ecn::Ce);
        // Not ECN-capable: queued unmarked.
        let out = offer(&mut f, Packet::data(0, 0, 1500), 3);
        assert!(out
            .iter()
            .all(|(v, q)| *v == Verdict::Queued && q.ecn == Ecn::NotEct));
    }
}
