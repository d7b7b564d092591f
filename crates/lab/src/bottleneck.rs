//! The delay line's bottleneck: one direction of the simulator's link, a
//! queue discipline in front of a serializer, run on the packets the delay
//! line holds. The queues (with how an arrival is offered to one, the
//! next packet taken from it and what it did counted:
//! `kleinrock_link::qdisc`), the trace and the service times are
//! `kleinrock-link`'s, driven as the simulator drives them
//! (`crates/sim/src/link.rs`):
//!
//! - a FIFO decides at arrival, and a packet's departure is known then:
//!   `max(arrival, the previous departure) + size / rate`, or on a
//!   mahimahi trace link the first delivery opportunity at or after
//!   `max(arrival, the previous opportunity used)`. The packets wait in
//!   arrival order with their departures.
//! - CoDel and FQ-CoDel decide at dequeue from each packet's sojourn time,
//!   and FQ-CoDel serves flows out of arrival order; RED decides at
//!   arrival but is kept with them. They hold packets until the serializer
//!   is free: the packet in service leaves at `start + size / rate`, and
//!   the next one is dequeued at that moment.
//!
//! Times are the delay line's: nanoseconds on CLOCK_MONOTONIC, an arrival
//! stamped when it was read. The caller takes every departure due by an
//! arrival's time before it offers the arrival, so the queue sees events in
//! the order the simulator's event list would give them. It may take them
//! late (a departure's effects depend on its own time, not on when it is
//! taken), which is what lets the delay line sleep until a packet's
//! release instead of waking at every departure.
//!
//! The rate counts IP packets, as the simulator's does (tbf counts frames,
//! 14 bytes more each).

use std::collections::VecDeque;

use kleinrock_cc::rand::SplitMix64;
use kleinrock_link::config::{LinkConfig, LinkStats};
use kleinrock_link::mahimahi::Trace;
use kleinrock_link::packet::{HeldPacket, Packet, ToFree};
use kleinrock_link::qdisc::{Held, Qdisc};
use kleinrock_link::queue::{Fifo, Verdict};
use kleinrock_link::time::{serialization, Time};

use crate::classify::Class;
use crate::config::MTU;

/// A packet in one of the delay line's slots, as a queue holds it: the
/// slot's index and what the queues read of the packet. A mark a queue
/// decides is noted here and written into the IP header when the packet
/// leaves the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slotted {
    pub slot: u32,
    /// The IP packet's length.
    pub len: u32,
    pub class: Class,
    /// A queue marked it: set CE in its header on the way out.
    pub ce: bool,
    pub enqueued: Time,
}

impl Packet for Slotted {
    fn bytes(&self) -> u32 {
        self.len
    }

    fn ecn_capable(&self) -> bool {
        self.class.ecn_capable
    }

    fn set_ce(&mut self) {
        self.ce = true;
    }
}

impl HeldPacket for Slotted {
    fn enqueued(&self) -> Time {
        self.enqueued
    }

    fn set_enqueued(&mut self, now: Time) {
        self.enqueued = now;
    }

    fn flow(&self) -> u32 {
        self.class.flow
    }
}

#[derive(Debug)]
enum Server {
    Fifo {
        fifo: Fifo,
        /// The trace and the index of its next unused opportunity.
        trace: Option<(Trace, u64)>,
        /// When the last packet admitted leaves.
        busy_until: Time,
        /// The packets admitted, with their departures, in order.
        waiting: VecDeque<(Slotted, Time)>,
    },
    Held {
        queue: Held<Slotted>,
        /// The packet being sent, and when it will have been.
        in_service: Option<(Slotted, Time)>,
    },
}

#[derive(Debug)]
pub(crate) struct Bottleneck {
    rate_bps: u64,
    server: Server,
}

impl Bottleneck {
    /// The bottleneck `link` describes (its delay, loss and jitter are the
    /// lane's), for a delay line of `slots` slots.
    pub(crate) fn new(link: &LinkConfig, slots: usize) -> Bottleneck {
        // RED's average decays over idle time in units of a full-size
        // packet's transmission (the simulator's: its data packet, 1500
        // bytes at the default MSS).
        let server = match Qdisc::new(&link.queue, serialization(MTU, link.rate_bps)) {
            Qdisc::Fifo(fifo) => Server::Fifo {
                fifo,
                trace: link.trace.clone().map(|t| (t, 0)),
                busy_until: 0,
                waiting: VecDeque::with_capacity(slots),
            },
            Qdisc::Held(queue) => Server::Held {
                queue,
                in_service: None,
            },
        };
        Bottleneck {
            rate_bps: link.rate_bps,
            server,
        }
    }

    /// A packet arrives at `now` (every departure due by then taken): the
    /// queue takes it, perhaps marked, or drops it into `to_free`. The
    /// counts go to `stats`.
    pub(crate) fn arrive(
        &mut self,
        now: Time,
        mut p: Slotted,
        rng: &mut SplitMix64,
        stats: &mut LinkStats,
        to_free: &mut impl ToFree<Slotted>,
    ) -> Verdict {
        match &mut self.server {
            Server::Fifo {
                fifo,
                trace,
                busy_until,
                waiting,
            } => {
                fifo.advance(now, *busy_until);
                let start = (*busy_until).max(now);
                // On a trace link the packet waits for its delivery
                // opportunity and leaves at it.
                let (start, done, next) = match trace {
                    None => (start, start + serialization(p.len, self.rate_bps), None),
                    Some((t, idx)) => {
                        let (i, at) = t.next(*idx, start);
                        (at, at, Some(i + 1))
                    }
                };
                let verdict = fifo.admit(now, &mut p, start);
                if stats.count(verdict) {
                    *busy_until = done;
                    if let (Some((_, idx)), Some(next)) = (trace, next) {
                        *idx = next;
                    }
                    waiting.push_back((p, done));
                } else {
                    to_free.free(p);
                }
                verdict
            }
            Server::Held { queue, in_service } => {
                let verdict = queue.enqueue(now, p, rng, stats, to_free);
                if in_service.is_none() {
                    *in_service = start_next(queue, now, self.rate_bps, stats, to_free);
                }
                verdict
            }
        }
    }

    /// When the next packet leaves, if one is queued or in service.
    pub(crate) fn next_departure(&self) -> Option<Time> {
        match &self.server {
            Server::Fifo { waiting, .. } => waiting.front().map(|&(_, at)| at),
            Server::Held { in_service, .. } => in_service.map(|(_, at)| at),
        }
    }

    /// The next packet to have left by `now`, and when it left. A held
    /// queue dequeues the one after it at that moment.
    pub(crate) fn depart(
        &mut self,
        now: Time,
        stats: &mut LinkStats,
        to_free: &mut impl ToFree<Slotted>,
    ) -> Option<(Slotted, Time)> {
        match &mut self.server {
            Server::Fifo { waiting, .. } => match waiting.front() {
                Some(&(_, at)) if at <= now => waiting.pop_front(),
                _ => None,
            },
            Server::Held { queue, in_service } => match *in_service {
                Some((p, at)) if at <= now => {
                    *in_service = start_next(queue, at, self.rate_bps, stats, to_free);
                    Some((p, at))
                }
                _ => None,
            },
        }
    }

    /// Packets and bytes waiting at `now`, the one being sent not counted
    /// (as the simulator's queues.csv counts them).
    pub(crate) fn backlog(&mut self, now: Time) -> (usize, u64) {
        match &mut self.server {
            Server::Fifo {
                fifo, busy_until, ..
            } => fifo.backlog(now, *busy_until),
            Server::Held { queue, .. } => queue.backlog(),
        }
    }
}

/// Takes the next packet into service at `now`, if the queue gives one.
fn start_next(
    queue: &mut Held<Slotted>,
    now: Time,
    rate_bps: u64,
    stats: &mut LinkStats,
    to_free: &mut impl ToFree<Slotted>,
) -> Option<(Slotted, Time)> {
    let p = queue.dequeue(now, stats, to_free)?;
    Some((p, now + serialization(p.len, rate_bps)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_link::codel::CodelParams;
    use kleinrock_link::config::QueueConfig;
    use kleinrock_link::queue::Limit;
    use kleinrock_link::time::{MS, US};

    /// A 1500-byte packet in slot `slot` of flow `flow`, ECN-capable or not.
    fn packet(slot: u32, flow: u32, ecn_capable: bool) -> Slotted {
        Slotted {
            slot,
            len: 1500,
            class: Class {
                flow,
                ecn_capable,
                ..Class::default()
            },
            ce: false,
            enqueued: 0,
        }
    }

    /// 12 Mbit/s sends a 1500-byte packet in exactly 1 ms.
    fn link(queue: QueueConfig) -> LinkConfig {
        LinkConfig::new(12_000_000, queue)
    }

    /// Every departure up to `until`, as (slot, time, marked).
    fn drain(b: &mut Bottleneck, until: Time, freed: &mut Vec<Slotted>) -> Vec<(u32, Time, bool)> {
        let mut stats = LinkStats::default();
        std::iter::from_fn(|| b.depart(until, &mut stats, freed))
            .map(|(p, at)| (p.slot, at, p.ce))
            .collect()
    }

    #[test]
    fn a_fifo_serves_back_to_back_at_its_rate() {
        let mut b = Bottleneck::new(
            &link(QueueConfig::Fifo {
                limit: Limit::Packets(2),
                mark_at: Some(1),
            }),
            16,
        );
        let (mut rng, mut stats, mut freed) = (SplitMix64::new(1), LinkStats::default(), vec![]);
        let verdicts: Vec<Verdict> = (0..4)
            .map(|i| b.arrive(0, packet(i, 0, true), &mut rng, &mut stats, &mut freed))
            .collect();
        // Sent at once; waits; waits, finding one waiting (K = 1): marked;
        // finds two waiting, the limit: dropped.
        use Verdict::*;
        assert_eq!(verdicts, [Queued, Queued, Marked, Dropped]);
        assert_eq!(freed.iter().map(|p| p.slot).collect::<Vec<_>>(), [3]);
        assert_eq!(b.backlog(0), (2, 3000));
        assert_eq!(b.backlog(MS), (1, 1500));
        assert_eq!(b.next_departure(), Some(MS));
        assert_eq!(
            drain(&mut b, 10 * MS, &mut freed),
            [(0, MS, false), (1, 2 * MS, false), (2, 3 * MS, true)]
        );
        // Idle again: an arrival is served from its own time.
        b.arrive(
            50 * MS,
            packet(4, 0, false),
            &mut rng,
            &mut stats,
            &mut freed,
        );
        assert_eq!(b.next_departure(), Some(51 * MS));
        assert_eq!(
            stats,
            LinkStats {
                queue_drops: 1,
                marks: 1,
                ..LinkStats::default()
            }
        );
    }

    #[test]
    fn a_trace_link_sends_at_its_delivery_opportunities() {
        let mut l = link(QueueConfig::Fifo {
            limit: Limit::Packets(10),
            mark_at: None,
        });
        // Opportunities at 1, 1, 3 and 4 ms, then every 4 ms again.
        l.trace = Some(Trace::parse("1\n1\n3\n4\n", "t").unwrap());
        let mut b = Bottleneck::new(&l, 16);
        let (mut rng, mut stats, mut freed) = (SplitMix64::new(1), LinkStats::default(), vec![]);
        for i in 0..5 {
            b.arrive(0, packet(i, 0, false), &mut rng, &mut stats, &mut freed);
        }
        let times: Vec<Time> = drain(&mut b, 10 * MS, &mut freed)
            .iter()
            .map(|d| d.1)
            .collect();
        assert_eq!(times, [MS, MS, 3 * MS, 4 * MS, 5 * MS]);
    }

    #[test]
    fn codel_dequeues_when_the_serializer_is_free_and_drops_by_sojourn() {
        let mut b = Bottleneck::new(&link(QueueConfig::Codel(CodelParams::default())), 4096);
        let (mut rng, mut stats, mut freed) = (SplitMix64::new(1), LinkStats::default(), vec![]);
        // 1500 bytes every 800 us into a link that sends one per ms: the
        // queue grows, CoDel lets it stand above target for an interval,
        // then drops from its head, ever more often.
        let mut departures = Vec::new();
        let mut drops = Vec::new();
        for i in 0..2000u32 {
            let now = u64::from(i) * 800 * US;
            loop {
                let before = stats.queue_drops;
                let Some(d) = b.depart(now, &mut stats, &mut freed) else {
                    break;
                };
                // The drop happened as the next packet was dequeued, when
                // this one left.
                if stats.queue_drops > before {
                    drops.push(d.1);
                }
                departures.push(d);
            }
            b.arrive(now, packet(i, 0, false), &mut rng, &mut stats, &mut freed);
        }
        // The sojourn passes 5 ms at about 25 ms; an interval later, the
        // first drop.
        assert!((125 * MS..=140 * MS).contains(&drops[0]), "{}", drops[0]);
        let gaps: Vec<Time> = drops.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps[0] > gaps[gaps.len() - 1], "{gaps:?}");
        // Every dropped packet's slot is handed back.
        assert_eq!(freed.len() as u64, stats.queue_drops);
        // Back to back: each departure a millisecond after the one before.
        assert!(departures.windows(2).all(|w| w[1].1 - w[0].1 == MS));
    }

    #[test]
    fn fq_codel_sends_a_sparse_flow_ahead_of_a_backlog() {
        let mut b = Bottleneck::new(&link(QueueConfig::FqCodel(CodelParams::default())), 64);
        let (mut rng, mut stats, mut freed) = (SplitMix64::new(1), LinkStats::default(), vec![]);
        for i in 0..20 {
            b.arrive(0, packet(i, 1, false), &mut rng, &mut stats, &mut freed);
        }
        // By 2.5 ms the backlogged flow has used its quantum and is an old
        // flow; a newcomer then goes ahead of it.
        let mut order: Vec<u32> = drain(&mut b, 2500 * US, &mut freed)
            .iter()
            .map(|d| d.0)
            .collect();
        b.arrive(
            2500 * US,
            packet(20, 2, false),
            &mut rng,
            &mut stats,
            &mut freed,
        );
        order.extend(drain(&mut b, 5 * MS, &mut freed).iter().map(|d| d.0));
        assert_eq!(order, [0, 1, 2, 20, 3]);
        // 21 arrived, 5 sent, one in service.
        assert_eq!(b.backlog(5 * MS), (15, 15 * 1500));
    }
}
