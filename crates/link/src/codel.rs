//! CoDel: Controlled Delay active queue management (Nichols and Jacobson,
//! "Controlling Queue Delay", ACM Queue 2012; RFC 8289), as Linux's
//! `include/net/codel_impl.h` runs it.
//!
//! CoDel watches each packet's sojourn time at dequeue. Once the sojourn has
//! stayed above `target` (5 ms) for a whole `interval` (100 ms), it drops
//! (or ECN-marks) one packet and then more, the gaps shrinking as
//! interval / sqrt(count), until the sojourn falls below target again. A
//! standing queue is removed; bursts shorter than an interval pass.

use std::collections::VecDeque;

use crate::packet::{HeldPacket, ToFree};
use crate::time::{Time, MS};

/// CoDel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    /// Acceptable standing queue delay (5 ms).
    pub target: Time,
    /// Window over which the delay must persist (100 ms, about a
    /// worst-case RTT).
    pub interval: Time,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// Hard limit, packets (Linux's default 1000).
    pub limit: u32,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: 5 * MS,
            interval: 100 * MS,
            ecn: false,
            limit: 1000,
        }
    }
}

/// CoDel's control state (`struct codel_vars`), reusable per queue (FQ-CoDel
/// keeps one per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    pub first_above_time: Time,
    pub drop_next: Time,
}

/// `interval / sqrt(count)` after `t`: the next drop time.
pub fn control_law(t: Time, interval: Time, count: u32) -> Time {
    // interval * 2^32 / sqrt(count * 2^64): 32 bits of fraction in the
    // square root, exact to the nanosecond.
    let root = ((count.max(1) as u128) << 64).isqrt();
    t + ((interval as u128) << 32).div_ceil(root) as Time
}

/// What CoDel decided about the packets at a queue's head.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub dropped: u32,
    pub marked: u32,
}

impl CodelVars {
    /// `codel_should_drop()`; `backlog_bytes` is what remains queued after
    /// taking `p`.
    fn should_drop<P: HeldPacket>(
        &mut self,
        p: Option<&P>,
        now: Time,
        backlog_bytes: u64,
        mtu: u32,
        prm: &CodelParams,
    ) -> bool {
        let Some(p) = p else {
            self.first_above_time = 0;
            return false;
        };
        let sojourn = now.saturating_sub(p.enqueued());
        if sojourn < prm.target || backlog_bytes <= mtu as u64 {
            self.first_above_time = 0;
            return false;
        }
        if self.first_above_time == 0 {
            self.first_above_time = now + prm.interval;
            return false;
        }
        now >= self.first_above_time
    }

    /// `codel_dequeue()`: takes the next packet to send from `q`, dropping
    /// (into `to_free`) or marking per CoDel. `bytes` tracks the queue's
    /// byte count.
    pub fn dequeue<P: HeldPacket>(
        &mut self,
        q: &mut VecDeque<P>,
        bytes: &mut u64,
        now: Time,
        prm: &CodelParams,
        out: &mut Outcome,
        to_free: &mut impl ToFree<P>,
    ) -> Option<P> {
        let mtu = 1514;
        let pop = |q: &mut VecDeque<P>, bytes: &mut u64| {
            let p = q.pop_front();
            if let Some(p) = &p {
                *bytes -= p.bytes() as u64;
            }
            p
        };
        let mut p = pop(q, bytes);
        let mut drop = self.should_drop(p.as_ref(), now, *bytes, mtu, prm);
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else {
                while self.dropping && now >= self.drop_next {
                    self.count += 1;
                    let pk = p.as_mut().expect("should_drop saw a packet");
                    if prm.ecn && pk.ecn_capable() {
                        pk.set_ce();
                        out.marked += 1;
                        self.drop_next = control_law(self.drop_next, prm.interval, self.count);
                        return p;
                    }
                    out.dropped += 1;
                    if let Some(dropped) = p {
                        to_free.free(dropped);
                    }
                    p = pop(q, bytes);
                    if !self.should_drop(p.as_ref(), now, *bytes, mtu, prm) {
                        self.dropping = false;
                    } else {
                        self.drop_next = control_law(self.drop_next, prm.interval, self.count);
                    }
                }
            }
        } else if drop {
            let pk = p.as_mut().expect("should_drop saw a packet");
            if prm.ecn && pk.ecn_capable() {
                pk.set_ce();
                out.marked += 1;
            } else {
                out.dropped += 1;
                if let Some(dropped) = p {
                    to_free.free(dropped);
                }
                p = pop(q, bytes);
                drop = self.should_drop(p.as_ref(), now, *bytes, mtu, prm);
            }
            let _ = drop;
            self.dropping = true;
            // Resume near the previous drop rate if the last episode was
            // recent.
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = if delta > 1 && now.saturating_sub(self.drop_next) < 16 * prm.interval {
                delta
            } else {
                1
            };
            self.lastcount = self.count;
            self.drop_next = control_law(now, prm.interval, self.count);
        }
        p
    }
}

/// A single CoDel queue (Linux `sch_codel`).
#[derive(Clone, Debug)]
pub struct Codel<P> {
    pub params: CodelParams,
    vars: CodelVars,
    q: VecDeque<P>,
    bytes: u64,
}

impl<P: HeldPacket> Codel<P> {
    pub fn new(params: CodelParams) -> Codel<P> {
        Codel {
            params,
            vars: CodelVars::default(),
            q: VecDeque::with_capacity(params.limit.min(1 << 16) as usize),
            bytes: 0,
        }
    }

    /// Tail-drops (into `to_free`) beyond the hard limit, else queues.
    pub fn enqueue(&mut self, now: Time, mut p: P, to_free: &mut impl ToFree<P>) -> bool {
        if self.q.len() as u32 >= self.params.limit {
            to_free.free(p);
            return false;
        }
        p.set_enqueued(now);
        self.bytes += p.bytes() as u64;
        self.q.push_back(p);
        true
    }

    /// The next packet to send; those CoDel drops on the way go to
    /// `to_free`.
    pub fn dequeue(
        &mut self,
        now: Time,
        out: &mut Outcome,
        to_free: &mut impl ToFree<P>,
    ) -> Option<P> {
        self.vars.dequeue(
            &mut self.q,
            &mut self.bytes,
            now,
            &self.params,
            out,
            to_free,
        )
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
    use crate::packet::test::{Ecn, TestPacket as Packet};
    use crate::packet::Forget;

    #[test]
    fn control_law_spaces_drops_by_interval_over_sqrt_count() {
        assert_eq!(control_law(0, 100 * MS, 1), 100 * MS);
        assert_eq!(control_law(0, 100 * MS, 4), 50 * MS);
        let t = control_law(1000, 100 * MS, 2);
        assert!((t - 1000).abs_diff(70_710_678) <= 2, "{t}");
    }

    /// A queue fed faster than it drains: CoDel waits an interval above
    /// target, then drops, each gap shorter than the last.
    #[test]
    fn a_standing_queue_is_attacked_after_one_interval() {
        let mut c = Codel::new(CodelParams::default());
        let mut out = Outcome::default();
        let mut drops = Vec::new();
        let mut freed = Vec::new();
        // Arrivals every 1 ms, departures 5 in 6 ms: sojourn passes 5 ms
        // at about 30 ms.
        for i in 0..1000u64 {
            let now = i * MS;
            c.enqueue(now, Packet::data(0, i as u32, 1500), &mut Forget);
            if i % 6 != 5 {
                let before = freed.len();
                c.dequeue(now, &mut out, &mut freed);
                if freed.len() > before {
                    drops.push(now);
                }
            }
        }
        assert!(
            (125 * MS..=140 * MS).contains(&drops[0]),
            "first drop at {}",
            drops[0]
        );
        let gaps: Vec<Time> = drops.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.len() > 5);
        assert!(gaps[0] > gaps[gaps.len() - 1], "{gaps:?}");
        // Every packet dropped is handed back, and counted.
        assert_eq!(freed.len() as u32, out.dropped);
        let mut seqs: Vec<u32> = freed.iter().map(|p| p.seq).collect();
        seqs.dedup();
        assert_eq!(seqs.len(), freed.len());
    }

    #[test]
    fn a_packet_beyond_the_limit_is_handed_back() {
        let mut c = Codel::new(CodelParams {
            limit: 2,
            ..Default::default()
        });
        let mut freed = Vec::new();
        for s in 0..3 {
            c.enqueue(0, Packet::data(0, s, 1500), &mut freed);
        }
        assert_eq!(c.len(), 2);
        assert_eq!(freed, [Packet::data(0, 2, 1500)]);
    }

    #[test]
    fn with_ecn_it_marks_instead_of_dropping() {
        let prm = CodelParams {
            ecn: true,
            ..Default::default()
        };
        let mut c = Codel::new(prm);
        let mut out = Outcome::default();
        for i in 0..1000u64 {
            let mut p = Packet::data(0, i as u32, 1500);
            p.ecn = Ecn::Ect;
            c.enqueue(i * MS, p, &mut Forget);
            if i % 6 != 5 {
                c.dequeue(i * MS, &mut out, &mut Forget);
            }
        }
        assert_eq!(out.dropped, 0);
        assert!(out.marked > 5);
    }
}
