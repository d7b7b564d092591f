//! The queue discipline at a link's head as both engines drive it: which
//! of this crate's queues a [`QueueConfig`] makes, how an arrival is
//! offered to it and the next packet taken from it, and how what it did
//! is counted in [`LinkStats`]. The simulator's link
//! (`crates/sim/src/link.rs`) and the lab's bottleneck
//! (`crates/lab/src/bottleneck.rs`) both call this; what stays theirs is
//! the serializer around it (when a packet starts and finishes being sent)
//! and where the packets go after it.
//!
//! Two kinds of discipline, driven differently:
//!
//! - a FIFO decides at arrival, and a packet's departure is known then,
//!   so the engine keeps the packets (in their pipes, or in arrival order)
//!   and the [`Fifo`] only their service start times;
//! - CoDel and FQ-CoDel decide at dequeue from each packet's sojourn time
//!   (and FQ-CoDel serves flows out of arrival order), so they hold the
//!   packets until the serializer asks for the next ([`Held`]). RED
//!   decides at arrival, but over a queue of its own, so it is held too.

use kleinrock_cc::rand::SplitMix64;

use crate::codel::{Codel, Outcome};
use crate::config::{LinkStats, QueueConfig};
use crate::fq_codel::FqCodel;
use crate::packet::{HeldPacket, ToFree};
use crate::queue::{Fifo, Verdict};
use crate::red::{Red, RedQueue};
use crate::time::Time;

/// A link's queue discipline.
#[derive(Clone, Debug)]
pub enum Qdisc<P> {
    /// Tail drop (and step marking) at arrival; the engine keeps the
    /// packets with their departures.
    Fifo(Fifo),
    /// The disciplines that hold packets until the serializer asks.
    Held(Held<P>),
}

/// The disciplines that hold packets until dequeue.
#[derive(Clone, Debug)]
pub enum Held<P> {
    Codel(Codel<P>),
    FqCodel(FqCodel<P>),
    /// RED deciding on arrival, over a FIFO of packets.
    Red(RedQueue<P>),
}

impl<P: HeldPacket> Qdisc<P> {
    /// The discipline `queue` describes. `packet_time` is a typical
    /// packet's transmission time at the link's rate, in which RED counts
    /// the idle time its average decays over.
    pub fn new(queue: &QueueConfig, packet_time: Time) -> Qdisc<P> {
        match queue {
            QueueConfig::Fifo { limit, mark_at } => Qdisc::Fifo(Fifo::new(*limit, *mark_at)),
            QueueConfig::Codel(p) => Qdisc::Held(Held::Codel(Codel::new(*p))),
            QueueConfig::FqCodel(p) => Qdisc::Held(Held::FqCodel(FqCodel::new(*p))),
            QueueConfig::Red(p) => Qdisc::Held(Held::Red(RedQueue::new(Red::new(*p, packet_time)))),
        }
    }

    /// Packets and bytes waiting at `now`, the one being sent not
    /// counted; a FIFO's link finishes what it admitted at `free_at`.
    pub fn backlog(&mut self, now: Time, free_at: Time) -> (usize, u64) {
        match self {
            Qdisc::Fifo(f) => f.backlog(now, free_at),
            Qdisc::Held(h) => h.backlog(),
        }
    }
}

impl<P: HeldPacket> Held<P> {
    /// `p` arrives at `now`: queued, perhaps marked, or dropped into
    /// `to_free`, and counted once in `stats`. FQ-CoDel over its limit
    /// drops from its fattest flow instead, perhaps another flow's packet
    /// (counted as drops), and queues `p`.
    pub fn enqueue(
        &mut self,
        now: Time,
        p: P,
        rng: &mut SplitMix64,
        stats: &mut LinkStats,
        to_free: &mut impl ToFree<P>,
    ) -> Verdict {
        let v = match self {
            Held::Codel(c) => {
                if c.enqueue(now, p, to_free) {
                    Verdict::Queued
                } else {
                    Verdict::Dropped
                }
            }
            Held::FqCodel(fq) => {
                stats.queue_drops += u64::from(fq.enqueue(now, p, to_free));
                Verdict::Queued
            }
            Held::Red(red) => red.enqueue(now, p, rng, to_free),
        };
        stats.count(v);
        v
    }

    /// The next packet to send at `now`, if any; the packets an AQM drops
    /// on the way (into `to_free`) and the one it marks are counted.
    pub fn dequeue(
        &mut self,
        now: Time,
        stats: &mut LinkStats,
        to_free: &mut impl ToFree<P>,
    ) -> Option<P> {
        let mut out = Outcome::default();
        let p = match self {
            Held::Codel(c) => c.dequeue(now, &mut out, to_free),
            Held::FqCodel(fq) => fq.dequeue(now, &mut out, to_free),
            Held::Red(red) => red.dequeue(now),
        };
        stats.queue_drops += u64::from(out.dropped);
        stats.marks += u64::from(out.marked);
        p
    }

    /// Packets and bytes waiting, the one being sent not counted.
    pub fn backlog(&self) -> (usize, u64) {
        match self {
            Held::Codel(c) => (c.len(), c.bytes()),
            Held::FqCodel(fq) => (fq.len(), fq.bytes()),
            Held::Red(red) => (red.len(), red.bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codel::CodelParams;
    use crate::packet::test::TestPacket;
    use crate::queue::Limit;
    use crate::red::RedParams;
    use crate::time::MS;

    fn red(limit: u32) -> QueueConfig {
        QueueConfig::Red(RedParams {
            limit,
            min: 1.0,
            max: 2.0,
            max_p: 1.0,
            wq: 1.0,
            ecn: false,
        })
    }

    /// Each drop counted once, whichever discipline made it and where.
    #[test]
    fn every_drop_and_mark_is_counted_once() {
        let mut rng = SplitMix64::new(1);
        for (queue, drops) in [
            // Two are queued; from the third on, the average (of weight 1:
            // the queue itself) is above RED's max, and it drops.
            (red(100), 8),
            // At the hard limit.
            (
                QueueConfig::Codel(CodelParams {
                    limit: 4,
                    ..CodelParams::default()
                }),
                6,
            ),
            // Over the limit, from the fattest flow.
            (
                QueueConfig::FqCodel(CodelParams {
                    limit: 4,
                    ..CodelParams::default()
                }),
                6,
            ),
        ] {
            let Qdisc::Held(mut q) = Qdisc::<TestPacket>::new(&queue, MS) else {
                panic!("{queue:?} is held");
            };
            let (mut stats, mut freed) = (LinkStats::default(), Vec::new());
            for seq in 0..10 {
                q.enqueue(
                    0,
                    TestPacket::data(0, seq, 1500),
                    &mut rng,
                    &mut stats,
                    &mut freed,
                );
            }
            assert_eq!(stats.queue_drops, drops, "{queue:?}");
            assert_eq!(freed.len() as u64, drops, "{queue:?}");
            assert_eq!(q.backlog(), (10 - drops as usize, (10 - drops) * 1500));
            let sent = std::iter::from_fn(|| q.dequeue(MS, &mut stats, &mut freed)).count();
            assert_eq!(sent as u64 + stats.queue_drops, 10, "{queue:?}");
        }
    }

    #[test]
    fn a_fifo_is_the_engines_to_drive_and_reports_its_backlog() {
        let fifo = QueueConfig::Fifo {
            limit: Limit::Packets(10),
            mark_at: None,
        };
        let mut q = Qdisc::<TestPacket>::new(&fifo, MS);
        let Qdisc::Fifo(f) = &mut q else {
            panic!("a FIFO");
        };
        let mut p = TestPacket::data(0, 0, 1500);
        // Sent from 1 ms and 2 ms: both wait at 0, one at 1 ms.
        let mut stats = LinkStats::default();
        assert!(stats.count(f.admit(0, &mut p, MS)));
        assert!(stats.count(f.admit(0, &mut p, 2 * MS)));
        assert_eq!(q.backlog(0, 3 * MS), (2, 3000));
        assert_eq!(q.backlog(MS, 3 * MS), (1, 1500));
        assert_eq!(q.backlog(3 * MS, 3 * MS), (0, 0));
    }
}
