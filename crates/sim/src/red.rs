//! RED: Random Early Detection (Floyd and Jacobson, IEEE/ACM ToN 1993;
//! RFC 2309), with the "gentle" extension, as Linux `sch_red` configures
//! it: an exponentially weighted average of the queue length decides, on
//! arrival, to queue, to drop or mark with a probability rising linearly
//! from `min` to `max` (then to 1 at twice `max`), spaced evenly by a count
//! since the last drop.

use kleinrock_cc::rand::SplitMix64;

use crate::packet::{Ecn, Packet};
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
    pub fn decide(
        &mut self,
        now: Time,
        qlen: usize,
        p: &mut Packet,
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
        if self.params.ecn && p.ecn != Ecn::NotEct && pb < 1.0 {
            p.ecn = Ecn::Ce;
            Verdict::Marked
        } else {
            Verdict::Dropped
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
