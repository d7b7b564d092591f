//! RED: Random Early Detection (Floyd and Jacobson, IEEE/ACM ToN 1993;
//! RFC 2309), with the "gentle" extension, as Linux `sch_red` configures
//! it: an exponentially weighted average of the queue length decides, on
//! arrival, to queue, to drop or mark with a probability rising linearly
//! from `min` to `max` (then to 1 at twice `max`), spaced evenly by a count
//! since the last drop. [`Red`] decides; [`RedQueue`] holds the packets
//! it lets in, in arrival order.

use std::collections::VecDeque;

use kleinrock_cc::rand::SplitMix64;

use crate::packet::{Packet, ToFree};
use crate::queue::Verdict;
use crate::time::Time;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    /// Hard limit, packets.
    pub limit: u32,
    /// Average queue (packets) below which nothing is dropped.
    pub min: f64,
    /// Average queue at which the probability reaches `max_p`.
    pub max: f64,
    pub max_p: f64,
    /// Weight of a new sample in the average (Linux default 2^-9).
    pub wq: f64,
    pub ecn: bool,
}

#[derive(Clone, Debug)]
pub struct Red {
    pub params: RedParams,
    avg: f64,
    count: i64,
    idle_since: Option<Time>,
    /// Typical transmission time of one packet, for decaying the average
    /// over idle periods.
    pkt_time: Time,
}

impl Red {
    pub fn new(params: RedParams, pkt_time: Time) -> Red {
        Red {
            params,
            avg: 0.0,
            count: -1,
            idle_since: None,
            pkt_time: pkt_time.max(1),
        }
    }

    pub fn average(&self) -> f64 {
        self.avg
    }

    /// The link went idle at `now`.
    pub fn idle(&mut self, now: Time) {
        self.idle_since = Some(now);
    }

    /// Decides for a packet arriving to a queue of `qlen` packets.
    pub fn decide<P: Packet>(
        &mut self,
        now: Time,
        qlen: usize,
        p: &mut P,
        rng: &mut SplitMix64,
    ) -> Verdict {
        let w = self.params.wq;
        if let Some(since) = self.idle_since.take() {
            let m = (now.saturating_sub(since) / self.pkt_time) as i32;
            self.avg *= (1.0 - w).powi(m);
        }
        self.avg += w * (qlen as f64 - self.avg);
        if qlen as u32 >= self.params.limit {
            return Verdict::Dropped;
        }
        let (min, max, max_p) = (self.params.min, self.params.max, self.params.max_p);
        let pb = if self.avg < min {
            self.count = -1;
            return Verdict::Queued;
        } else if self.avg < max {
            max_p * (self.avg - min) / (max - min)
        } else if self.avg < 2.0 * max {
            max_p + (1.0 - max_p) * (self.avg - max) / max
        } else {
            1.0
        };
        self.count += 1;
        // Spread drops evenly: the probability grows with the packets
        // queued since the last drop.
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if pb >= 1.0 || denom <= 0.0 {
            1.0
        } else {
            (pb / denom).min(1.0)
        };
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        if u >= pa {
            return Verdict::Queued;
        }
        self.count = 0;
        if self.params.ecn && p.ecn_capable() && pb < 1.0 {
            p.set_ce();
            Verdict::Marked
        } else {
            Verdict::Dropped
        }
    }
}

/// RED in front of a FIFO of packets: [`Red`] decides on arrival, and the
/// packets it lets in leave in order.
#[derive(Clone, Debug)]
pub struct RedQueue<P> {
    pub red: Red,
    q: VecDeque<P>,
    bytes: u64,
}

impl<P: Packet> RedQueue<P> {
    pub fn new(red: Red) -> RedQueue<P> {
        RedQueue {
            red,
            q: VecDeque::new(),
            bytes: 0,
        }
    }

    /// A packet arrives at `now`: queued (perhaps marked) or dropped (into
    /// `to_free`).
    pub fn enqueue(
        &mut self,
        now: Time,
        mut p: P,
        rng: &mut SplitMix64,
        to_free: &mut impl ToFree<P>,
    ) -> Verdict {
        let v = self.red.decide(now, self.q.len(), &mut p, rng);
        if v == Verdict::Dropped {
            to_free.free(p);
        } else {
            self.bytes += p.bytes() as u64;
            self.q.push_back(p);
        }
        v
    }

    /// The next packet to send; when there is none, the link goes idle at
    /// `now` (the average decays over the idle time).
    pub fn dequeue(&mut self, now: Time) -> Option<P> {
        let p = self.q.pop_front();
        match &p {
            Some(p) => self.bytes -= p.bytes() as u64,
            None => self.red.idle(now),
        }
        p
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

    fn red(ecn: bool) -> Red {
        Red::new(
            RedParams {
                limit: 100,
                min: 5.0,
                max: 15.0,
                max_p: 0.1,
                wq: 0.002,
                ecn,
            },
            1000,
        )
    }

    #[test]
    fn no_drops_below_min_and_some_between_min_and_max() {
        let mut r = red(false);
        let mut rng = SplitMix64::new(1);
        let mut p = Packet::data(0, 0, 1500);
        for _ in 0..10_000 {
            assert_eq!(r.decide(0, 3, &mut p, &mut rng), Verdict::Queued);
        }
        let drops = (0..10_000)
            .filter(|_| r.decide(0, 10, &mut p, &mut rng) == Verdict::Dropped)
            .count();
        // avg -> 10: pb = 0.05, spaced drops: about 1 in 1/(2 pb) ~ 10-20.
        assert!((300..1200).contains(&drops), "{drops}");
        assert!((r.average() - 10.0).abs() < 0.5);
    }

    #[test]
    fn the_queue_keeps_what_red_lets_in_in_order_and_decays_when_idle() {
        let mut q: RedQueue<Packet> = RedQueue::new(red(false));
        let mut rng = SplitMix64::new(1);
        for s in 0..3 {
            assert_eq!(
                q.enqueue(0, Packet::data(0, s, 1000 + s), &mut rng, &mut Forget),
                Verdict::Queued
            );
        }
        assert_eq!((q.len(), q.bytes()), (3, 3003));
        let avg = q.red.average();
        assert!(avg > 0.0);
        let seqs: Vec<u32> = (0..3).map(|_| q.dequeue(0).unwrap().seq).collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert!(q.is_empty() && q.bytes() == 0);
        // Empty at 0 and idle for 1000 packet times: the next arrival
        // finds the average decayed (by 0.998^1000) before its own sample.
        assert_eq!(q.dequeue(0), None);
        q.enqueue(1_000_000, Packet::data(0, 3, 1000), &mut rng, &mut Forget);
        assert!(q.red.average() < avg * 0.2, "{}", q.red.average());
    }

    #[test]
    fn ecn_capable_packets_are_marked() {
        let mut r = red(true);
        let mut rng = SplitMix64::new(1);
        let mut marks = 0;
        for _ in 0..10_000 {
            let mut p = Packet::data(0, 0, 1500);
            p.ecn = Ecn::Ect;
            match r.decide(0, 10, &mut p, &mut rng) {
                Verdict::Marked => {
                    marks += 1;
                    assert_eq!(p.ecn, Ecn::Ce);
                }
                Verdict::Dropped => panic!("an ECN-capable packet was dropped below max"),
                Verdict::Queued => {}
            }
        }
        assert!(marks > 300);
    }
}
