//! One direction of the delay line, without I/O: the slots packets are
//! read into, the bottleneck they cross, the loss at its far end, and the
//! per-flow pipes that hold them until their release. This is the
//! simulator's link (`crates/sim/src/link.rs` and the pipes of
//! `world.rs`) on real packets:
//!
//! ```text
//! read ─► bottleneck (queue, serializer) ─► loss ─► pipe of the packet's flow ─► write
//!          bottleneck.rs                    LossModel   delay + the flow's own + jitter
//! ```
//!
//! A packet leaving the bottleneck at `departure` is released at
//! `departure + delay + the flow's extra delay + jitter` (jitter only on TCP
//! segments carrying data, as the simulator's data pipes), but never
//! before the packet of its pipe released last: releases within a flow
//! never go backwards, so neither jitter nor a delay shortened at run time
//! reorders a flow. Packets of different flows, whose paths differ, do
//! pass each other, as in the simulator's dumbbell. Without a bottleneck a
//! packet departs as it arrives, and only the delays apply.
//!
//! Storage is allocated once: a pool of slots (a free list, since packets
//! leave the bottleneck out of arrival order when an AQM drops from a
//! queue's head or FQ-CoDel serves flows in turn), each pipe a list linked
//! through the slots' metadata, and a heap of the pipes' heads, so that
//! the next release is found in O(log flows). The queues hold
//! [`Slotted`] handles, and give back the ones they drop, whose slots are
//! then free again.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use kleinrock_cc::rand::SplitMix64;
use kleinrock_link::config::{LinkConfig, LinkStats};
use kleinrock_link::jitter::Jitter;
use kleinrock_link::loss::LossModel;
use kleinrock_link::packet::ToFree;
use kleinrock_link::queue::Verdict;
use kleinrock_link::time::Time;

use crate::bottleneck::{Bottleneck, Slotted};
use crate::classify::Classifier;
use crate::config::MTU;
use crate::ecn;

/// Bytes per slot: the TUN devices' MTU rounded up to a power of two, so
/// that every packet fits.
pub(crate) const SLOT: usize = (MTU as usize).next_power_of_two();

/// No slot: the end of a pipe's list.
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    len: u32,
    /// The next slot of its pipe, in release order.
    next: u32,
    release: Time,
}

/// The slots, allocated once; pages are touched only as packets fill them,
/// and the free list is a stack, so a lab that never holds many packets
/// never touches many pages.
#[derive(Debug)]
struct Pool {
    buf: Box<[u8]>,
    meta: Box<[Meta]>,
    free: Vec<u32>,
}

impl Pool {
    fn new(slots: usize) -> Pool {
        Pool {
            buf: vec![0; slots * SLOT].into_boxed_slice(),
            meta: vec![Meta::default(); slots].into_boxed_slice(),
            free: (0..slots as u32).rev().collect(),
        }
    }

    fn bytes_mut(&mut self, slot: u32) -> &mut [u8] {
        let at = slot as usize * SLOT;
        let len = self.meta[slot as usize].len as usize;
        &mut self.buf[at..at + len]
    }

    fn bytes(&self, slot: u32) -> &[u8] {
        let at = slot as usize * SLOT;
        &self.buf[at..at + self.meta[slot as usize].len as usize]
    }
}

impl ToFree<Slotted> for Pool {
    fn free(&mut self, p: Slotted) {
        self.free.push(p.slot);
    }
}

/// A flow's pipe: its extra delay, its packets in release order (a list
/// through the slots' metadata), and its latest release.
#[derive(Clone, Copy, Debug)]
struct Pipe {
    extra: Time,
    head: u32,
    tail: u32,
    last: Time,
}

/// All times are nanoseconds on one monotonic clock.
#[derive(Debug)]
pub(crate) struct Lane {
    pool: Pool,
    classifier: Arc<Classifier>,
    bottleneck: Option<Bottleneck>,
    loss: LossModel,
    jitter: Jitter,
    rng: SplitMix64,
    /// Pipe 0 for packets of no configured flow, then one per flow.
    pipes: Box<[Pipe]>,
    /// (release, pipe) of every pipe's head.
    heads: BinaryHeap<Reverse<(Time, u16)>>,
    stats: LinkStats,
}

impl Lane {
    /// A lane of `slots` slots, allocated here once. `link` is the
    /// bottleneck (its queue, rate or trace, loss and jitter; its delay is
    /// the caller's to add), `extras` the flows' extra delays this way.
    pub(crate) fn new(
        slots: usize,
        link: Option<&LinkConfig>,
        classifier: Arc<Classifier>,
        extras: &[Time],
        seed: u64,
    ) -> Lane {
        let pipe = |extra| Pipe {
            extra,
            head: NIL,
            tail: NIL,
            last: 0,
        };
        let pipes: Box<[Pipe]> = std::iter::once(0)
            .chain(extras.iter().copied())
            .map(pipe)
            .collect();
        Lane {
            pool: Pool::new(slots),
            classifier,
            bottleneck: link.map(|l| Bottleneck::new(l, slots)),
            loss: link.map_or(LossModel::None, |l| l.loss.clone()),
            jitter: Jitter::new(link.map_or(0, |l| l.jitter)),
            rng: SplitMix64::new(seed),
            heads: BinaryHeap::with_capacity(pipes.len()),
            pipes,
            stats: LinkStats::default(),
        }
    }

    /// The slot the next arrival is to be read into, or `None` when every
    /// slot holds a packet.
    pub(crate) fn free_slot(&mut self) -> Option<&mut [u8]> {
        let &slot = self.pool.free.last()?;
        let at = slot as usize * SLOT;
        Some(&mut self.pool.buf[at..at + SLOT])
    }

    /// Commits the `len` bytes just read into [`Lane::free_slot`], which
    /// arrived at `now`; `delay` is the link's one-way delay now. Departures
    /// due by `now` are taken first.
    pub(crate) fn admit(&mut self, len: usize, now: Time, delay: Time) -> Verdict {
        let slot = self.pool.free.pop().expect("admit after free_slot");
        self.pool.meta[slot as usize].len = len as u32;
        let class = self.classifier.classify(self.pool.bytes(slot));
        let p = Slotted {
            slot,
            len: len as u32,
            class,
            ce: false,
            enqueued: now,
        };
        self.advance(now, delay);
        match self.bottleneck.as_mut() {
            Some(b) => b.arrive(now, p, &mut self.rng, &mut self.stats, &mut self.pool),
            None => {
                self.propagate(p, now, delay);
                Verdict::Queued
            }
        }
    }

    /// Moves every packet that has left the bottleneck by `now` into its
    /// pipe (`delay`: the link's one-way delay now).
    pub(crate) fn advance(&mut self, now: Time, delay: Time) {
        while let Some(b) = self.bottleneck.as_mut() {
            let Some((p, at)) = b.depart(now, &mut self.stats, &mut self.pool) else {
                return;
            };
            self.leave(p, at, delay);
        }
    }

    /// A packet leaves the bottleneck at `at`: the loss process may take
    /// it; a mark the queue decided is written into its header.
    fn leave(&mut self, p: Slotted, at: Time, delay: Time) {
        let index = self.stats.tx_packets;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += u64::from(p.len);
        if self.loss.drop(&mut self.rng, index) {
            self.stats.loss_drops += 1;
            self.pool.free(p);
            return;
        }
        if p.ce {
            ecn::mark_ce(self.pool.bytes_mut(p.slot));
        }
        self.propagate(p, at, delay);
    }

    fn propagate(&mut self, p: Slotted, departure: Time, delay: Time) {
        let i = usize::from(p.class.path);
        let jitter = if p.class.data {
            self.jitter.draw(&mut self.rng)
        } else {
            0
        };
        let pipe = &mut self.pipes[i];
        let release = (departure + delay + pipe.extra + jitter).max(pipe.last);
        pipe.last = release;
        let meta = &mut self.pool.meta[p.slot as usize];
        meta.release = release;
        meta.next = NIL;
        if pipe.head == NIL {
            pipe.head = p.slot;
            self.heads.push(Reverse((release, i as u16)));
        } else {
            self.pool.meta[pipe.tail as usize].next = p.slot;
        }
        pipe.tail = p.slot;
    }

    /// When the next packet is to be released, if one is in a pipe.
    pub(crate) fn next_release(&self) -> Option<Time> {
        self.heads.peek().map(|Reverse((at, _))| *at)
    }

    /// When the lane next has something to do: a release, or a departure
    /// from the bottleneck, which can wait until `delay` after it (its
    /// packet is released no sooner).
    pub(crate) fn next_deadline(&self, delay: Time) -> Option<Time> {
        let departure = self
            .bottleneck
            .as_ref()
            .and_then(Bottleneck::next_departure);
        match (self.next_release(), departure.map(|d| d + delay)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next packet to release, if its time has come by `now` (call
    /// [`Lane::advance`] first).
    pub(crate) fn due(&self, now: Time) -> Option<&[u8]> {
        let &Reverse((at, pipe)) = self.heads.peek()?;
        (at <= now).then(|| self.pool.bytes(self.pipes[usize::from(pipe)].head))
    }

    /// Forgets the packet [`Lane::due`] handed out; its slot is free again.
    pub(crate) fn pop(&mut self) {
        let Some(Reverse((_, i))) = self.heads.pop() else {
            return;
        };
        let pipe = &mut self.pipes[usize::from(i)];
        let slot = pipe.head;
        pipe.head = self.pool.meta[slot as usize].next;
        if pipe.head == NIL {
            pipe.tail = NIL;
        } else {
            let release = self.pool.meta[pipe.head as usize].release;
            self.heads.push(Reverse((release, i)));
        }
        self.pool.free.push(slot);
    }

    /// The bottleneck's backlog at `now` (packets and bytes waiting, the
    /// one being sent not counted), after [`Lane::advance`].
    pub(crate) fn backlog(&mut self, now: Time) -> (usize, u64) {
        self.bottleneck.as_mut().map_or((0, 0), |b| b.backlog(now))
    }

    pub(crate) fn stats(&self) -> LinkStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::classify::tests::ipv4;
    use crate::classify::{FlowPath, Proto};
    use kleinrock_link::codel::CodelParams;
    use kleinrock_link::config::QueueConfig;
    use kleinrock_link::queue::Limit;
    use kleinrock_link::time::{MS, US};

    /// A 1500-byte IPv4 TCP segment to port 5001 (or from it, `back`)
    /// with the given ECN bits and a tag in its last byte.
    fn packet(ecn: u8, tag: u8) -> Vec<u8> {
        tagged(ipv4(6, 40000, 5001, 1460, ecn), tag)
    }

    fn tagged(mut p: Vec<u8>, tag: u8) -> Vec<u8> {
        *p.last_mut().unwrap() = tag;
        p
    }

    fn lane(slots: usize, link: Option<&LinkConfig>, flows: &[FlowPath]) -> Lane {
        let extras: Vec<Time> = flows
            .iter()
            .map(|f| f.extra(0).as_nanos() as Time)
            .collect();
        Lane::new(slots, link, Arc::new(Classifier::new(flows)), &extras, 1)
    }

    fn offer(lane: &mut Lane, p: &[u8], now: Time, delay: Time) -> Verdict {
        lane.free_slot().unwrap()[..p.len()].copy_from_slice(p);
        lane.admit(p.len(), now, delay)
    }

    /// Every packet with its release time, in release order.
    fn drain(lane: &mut Lane, delay: Time) -> Vec<(Time, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            lane.advance(Time::MAX, delay);
            let Some(at) = lane.next_release() else {
                return out;
            };
            assert_eq!(lane.due(at - 1), None, "released early");
            out.push((at, lane.due(at).unwrap().to_vec()));
            lane.pop();
        }
    }

    fn releases(out: &[(Time, Vec<u8>)]) -> Vec<Time> {
        out.iter().map(|(t, _)| *t).collect()
    }

    /// 12 Mbit/s sends a 1500-byte packet in exactly 1 ms.
    fn fifo(limit: u32, k: Option<u32>) -> LinkConfig {
        LinkConfig::new(
            12_000_000,
            QueueConfig::Fifo {
                limit: Limit::Packets(limit),
                mark_at: k,
            },
        )
    }

    #[test]
    fn each_packet_is_held_exactly_the_delay_in_order() {
        let mut lane = lane(8, None, &[]);
        for (i, t) in [0, US, 5 * US, 5 * US, 7 * MS].into_iter().enumerate() {
            assert_eq!(
                offer(&mut lane, &packet(0, i as u8), t, 20 * MS),
                Verdict::Queued
            );
        }
        let out = drain(&mut lane, 20 * MS);
        assert_eq!(
            releases(&out),
            [
                20 * MS,
                20 * MS + US,
                20 * MS + 5 * US,
                20 * MS + 5 * US,
                27 * MS
            ]
        );
        let tags: Vec<u8> = out.iter().map(|(_, p)| p[1499]).collect();
        assert_eq!(tags, [0, 1, 2, 3, 4]);
        assert!(out.iter().all(|(_, p)| p.len() == 1500));
    }

    #[test]
    fn a_shortened_delay_does_not_reorder() {
        let mut lane = lane(8, None, &[]);
        offer(&mut lane, &packet(0, 0), 0, 20 * MS);
        offer(&mut lane, &packet(0, 1), MS, 5 * MS);
        offer(&mut lane, &packet(0, 2), 30 * MS, 5 * MS);
        assert_eq!(
            releases(&drain(&mut lane, 5 * MS)),
            [20 * MS, 20 * MS, 35 * MS]
        );
    }

    #[test]
    fn the_bottleneck_serves_back_to_back_at_its_rate_then_the_delay_follows() {
        let mut lane = lane(16, Some(&fifo(100, None)), &[]);
        for i in 0..3 {
            offer(&mut lane, &packet(0, i), 0, 10 * MS);
        }
        // Idle again by then: served from its own arrival.
        offer(&mut lane, &packet(0, 3), 50 * MS, 10 * MS);
        // Arrives while the fourth is being sent.
        offer(&mut lane, &packet(0, 4), 50 * MS + 300 * US, 10 * MS);
        assert_eq!(
            releases(&drain(&mut lane, 10 * MS)),
            [11 * MS, 12 * MS, 13 * MS, 61 * MS, 62 * MS]
        );
        let stats = lane.stats();
        assert_eq!((stats.tx_packets, stats.tx_bytes), (5, 7500));
    }

    #[test]
    fn ect_arrivals_finding_k_waiting_are_marked_and_the_limit_drops() {
        // At most 4 waiting, 5 with the one being sent.
        let mut lane = lane(16, Some(&fifo(4, Some(2))), &[]);
        let verdicts: Vec<Verdict> = (0..7)
            .map(|i| offer(&mut lane, &packet(0b10, i), 0, 0))
            .collect();
        use Verdict::*;
        // Waiting at arrival: none (sent at once), 0 1 2 3 4 4.
        assert_eq!(
            verdicts,
            [Queued, Queued, Queued, Marked, Marked, Dropped, Dropped]
        );
        // At 2.5 ms two have left: the arrival finds 2 waiting, K.
        assert_eq!(offer(&mut lane, &packet(0b01, 7), 2500 * US, 0), Marked);
        // By 5.5 ms the first five have left; only the one that arrived at
        // 2.5 ms (departing at 6 ms) is still queued.
        assert_eq!(offer(&mut lane, &packet(0b10, 8), 5500 * US, 0), Queued);
        let out = drain(&mut lane, 0);
        let marks: Vec<(u8, u8)> = out.iter().map(|(_, p)| (p[1499], p[1] & 3)).collect();
        assert_eq!(
            marks,
            [(0, 2), (1, 2), (2, 2), (3, 3), (4, 3), (7, 3), (8, 2)]
        );
        assert_eq!(
            releases(&out),
            [MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS, 6 * MS, 7 * MS]
        );
        // The mark is in the header, with a checksum that still verifies.
        let marked = &out[3].1;
        assert_eq!(
            ecn::tests::header_checksum(&marked[..20]),
            u16::from_be_bytes([marked[10], marked[11]])
        );
        assert_eq!((lane.stats().marks, lane.stats().queue_drops), (3, 2));
    }

    #[test]
    fn not_ect_packets_are_never_marked_but_are_dropped_at_the_limit() {
        let mut lane = lane(16, Some(&fifo(3, Some(1))), &[]);
        let verdicts: Vec<Verdict> = (0..5)
            .map(|i| offer(&mut lane, &packet(0, i), 0, 0))
            .collect();
        use Verdict::*;
        assert_eq!(verdicts, [Queued, Queued, Queued, Queued, Dropped]);
        assert!(drain(&mut lane, 0).iter().all(|(_, p)| p[1] == 0));
    }

    #[test]
    fn a_full_pool_has_no_free_slot_until_a_packet_is_released_or_dropped() {
        let mut lane = lane(4, Some(&fifo(2, None)), &[]);
        for i in 0..3 {
            offer(&mut lane, &packet(0, i), 0, MS);
        }
        // The fourth is dropped by the queue: its slot is free again.
        assert_eq!(offer(&mut lane, &packet(0, 3), 0, MS), Verdict::Dropped);
        assert!(lane.free_slot().is_some());
        offer(&mut lane, &packet(0, 4), 3 * MS, MS);
        assert!(lane.free_slot().is_none());
        lane.advance(2 * MS, MS);
        assert_eq!(lane.due(2 * MS).unwrap()[1499], 0);
        lane.pop();
        assert!(lane.free_slot().is_some());
        let tags: Vec<u8> = drain(&mut lane, MS).iter().map(|(_, p)| p[1499]).collect();
        assert_eq!(tags, [1, 2, 4]);
    }

    #[test]
    fn loss_takes_packets_leaving_the_bottleneck_and_counts_them() {
        let mut link = fifo(1000, None);
        link.loss = LossModel::Indices(vec![1, 2, 5]);
        let mut lane = lane(64, Some(&link), &[]);
        for i in 0..8 {
            offer(&mut lane, &packet(0, i), 0, 0);
        }
        let tags: Vec<u8> = drain(&mut lane, 0).iter().map(|(_, p)| p[1499]).collect();
        assert_eq!(tags, [0, 3, 4, 6, 7]);
        let stats = lane.stats();
        assert_eq!((stats.tx_packets, stats.loss_drops), (8, 3));
        // Every slot is free again.
        assert_eq!(lane.pool.free.len(), 64);
    }

    #[test]
    fn each_flow_has_its_own_pipe_and_no_pipe_goes_backwards() {
        let ms = Duration::from_millis;
        let flows = [
            FlowPath {
                proto: Proto::Tcp,
                port: 5001,
                forward: ms(30),
                reverse: ms(0),
            },
            FlowPath {
                proto: Proto::Icmp,
                port: 9,
                forward: ms(5),
                reverse: ms(0),
            },
        ];
        let mut link = fifo(100, None);
        link.jitter = 3 * MS;
        let mut lane = lane(64, Some(&link), &flows);
        let long = |tag| packet(0, tag);
        let ping = |tag| tagged(ipv4(1, 8, 9, 56, 0), tag);
        let other = |tag| tagged(ipv4(17, 40000, 7000, 100, 0), tag);
        for i in 0..10 {
            offer(&mut lane, &long(i), 0, 2 * MS);
        }
        offer(&mut lane, &ping(100), 0, 2 * MS);
        offer(&mut lane, &other(200), 0, 2 * MS);
        let out = drain(&mut lane, 2 * MS);
        let of = |tag_range: std::ops::Range<u8>| -> Vec<Time> {
            out.iter()
                .filter(|(_, p)| tag_range.contains(p.last().unwrap()))
                .map(|(t, _)| *t)
                .collect()
        };
        // The data segments: after their departures (1 to 10 ms), 2 ms of
        // link delay, 30 of their own, and up to 3 of jitter; in order.
        let long = of(0..10);
        assert_eq!(long.len(), 10);
        for (i, t) in long.iter().enumerate() {
            let departed = (i as Time + 1) * MS;
            assert!(
                *t >= departed + 32 * MS && *t <= departed + 35 * MS,
                "{i}: {t}"
            );
        }
        assert!(long.windows(2).all(|w| w[0] <= w[1]));
        // The ping (84 bytes, sent after the ten in 56 us) takes its own
        // 5 ms, no jitter, and passes the data segments still in their
        // pipe; another flow's packet (128 bytes, 85.334 us) the link's
        // delay only.
        let ping_departs = 10 * MS + 56 * US;
        assert_eq!(of(100..101), [ping_departs + 7 * MS]);
        assert_eq!(of(200..201), [ping_departs + 85_334 + 2 * MS]);
        let tags: Vec<u8> = out.iter().map(|(_, p)| *p.last().unwrap()).collect();
        assert_eq!(tags[..2], [200, 100]);
    }

    #[test]
    fn codel_drops_from_the_head_and_the_slots_come_back() {
        let link = LinkConfig::new(12_000_000, QueueConfig::Codel(CodelParams::default()));
        let mut lane = lane(4096, Some(&link), &[]);
        // 1500 bytes every 800 us into a link that sends one per ms.
        for i in 0..2000u64 {
            let p = packet(0, i as u8);
            let now = i * 800 * US;
            lane.advance(now, 0);
            while lane.due(now).is_some() {
                lane.pop();
            }
            offer(&mut lane, &p, now, 0);
        }
        let stats = lane.stats();
        assert!(stats.queue_drops > 0);
        let (waiting, _) = lane.backlog(1600 * MS);
        drain(&mut lane, 0);
        // Every slot not dropped was released, and every dropped one freed.
        assert_eq!(lane.pool.free.len(), 4096);
        assert_eq!(
            stats.tx_packets + stats.queue_drops + waiting as u64 + 1,
            2000
        );
    }
}
