//! A link: a queue in front of a serializer of fixed rate, an optional loss
//! process at its far end, and per-flow propagation pipes after it. A FIFO
//! link knows each packet's departure when it arrives, so it schedules no
//! event of its own; each pipe schedules only its head's arrival (htsim's
//! design): events stay proportional to packets delivered.
//!
//! The queue disciplines (and how an arrival is offered to one, the next
//! packet taken from it, and what it did counted: `kleinrock_link::qdisc`),
//! the loss process, the jitter and the trace are `kleinrock-link`'s,
//! shared with the lab; what is here is how the simulator drives them: the
//! serializer, the pipes and their events.

use kleinrock_cc::rand::SplitMix64;
use kleinrock_link::jitter::Jitter;
use kleinrock_link::loss::LossModel;
use kleinrock_link::mahimahi::Trace;
use kleinrock_link::packet::Forget;
use kleinrock_link::qdisc;
use kleinrock_link::queue::Verdict;
use kleinrock_link::ring::Ring;

use crate::packet::Packet;
use crate::time::{serialization, Time};

pub use kleinrock_link::config::LinkStats;

/// The queue discipline at a link's head: a FIFO computes departures on
/// arrival and needs no events; the held disciplines (CoDel, FQ-CoDel,
/// RED) are served by completion events.
pub type Qdisc = qdisc::Qdisc<Packet>;

/// What became of an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// FIFO: it will have been sent at this time; take it (as `arrive`
    /// left it) to its pipe.
    Departs(Time),
    /// The link was idle and now sends a packet, done at this time:
    /// schedule the completion.
    Started(Time),
    /// It waits in the queue.
    Queued,
    Dropped,
}

pub struct Link {
    pub rate_bps: u64,
    /// A mahimahi trace replacing the constant rate (FIFO links only), and
    /// the index of its next unused opportunity.
    pub trace: Option<(Trace, u64)>,
    pub qdisc: Qdisc,
    pub loss: LossModel,
    /// FIFO: when the link finishes sending everything admitted so far.
    free_at: Time,
    /// Event-driven qdiscs: the packet being sent.
    in_service: Option<Packet>,
    /// Serialization times of the last two packet sizes seen (data and
    /// ACKs): saves a 64-bit division per packet.
    ser_cache: [(u32, Time); 2],
    pub stats: LinkStats,
}

impl Link {
    pub fn new(rate_bps: u64, qdisc: Qdisc, loss: LossModel) -> Link {
        Link {
            rate_bps,
            trace: None,
            qdisc,
            loss,
            free_at: 0,
            in_service: None,
            ser_cache: [(0, 0); 2],
            stats: LinkStats::default(),
        }
    }

    #[inline(always)]
    fn lose(&mut self, rng: &mut SplitMix64, p: &Packet) -> bool {
        let index = self.stats.tx_packets;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += p.bytes as u64;
        if self.loss.drop(rng, index) {
            self.stats.loss_drops += 1;
            return true;
        }
        false
    }

    /// A packet arrives at `now`. A FIFO decides on the spot and may mark
    /// `p` (it then departs as marked); the other qdiscs take a copy.
    /// Inlined: the FIFO's is the per-packet path of most runs.
    #[inline(always)]
    pub fn arrive(&mut self, now: Time, p: &mut Packet, rng: &mut SplitMix64) -> Arrival {
        let Qdisc::Fifo(f) = &mut self.qdisc else {
            return self.arrive_queued(now, p, rng);
        };
        f.advance(now, self.free_at);
        let start = self.free_at.max(now);
        // On a trace link the packet waits for its delivery opportunity
        // and leaves at it.
        let (start, done, next_idx) = match &self.trace {
            None => (
                start,
                start + tx_time(&mut self.ser_cache, self.rate_bps, p.bytes),
                0,
            ),
            Some((t, idx)) => {
                let (i, at) = t.next(*idx, start);
                (at, at, i + 1)
            }
        };
        let v = f.admit(now, p, start);
        if !self.stats.count(v) {
            return Arrival::Dropped;
        }
        // `next_idx` is 0 only without a trace: a register test, where
        // the trace's own tag would be read again from memory.
        if next_idx > 0 {
            if let Some((_, idx)) = &mut self.trace {
                *idx = next_idx;
            }
        }
        self.free_at = done;
        if self.lose(rng, p) {
            return Arrival::Dropped;
        }
        Arrival::Departs(done)
    }

    /// The event-driven qdiscs: queue (or drop), and start sending if idle.
    #[inline(never)]
    fn arrive_queued(&mut self, now: Time, p: &mut Packet, rng: &mut SplitMix64) -> Arrival {
        let Qdisc::Held(q) = &mut self.qdisc else {
            return self.arrive(now, p, rng);
        };
        if q.enqueue(now, *p, rng, &mut self.stats, &mut Forget) == Verdict::Dropped {
            return Arrival::Dropped;
        }
        if self.in_service.is_none() {
            if let Some(done) = self.start_next(now) {
                return Arrival::Started(done);
            }
        }
        Arrival::Queued
    }

    /// Event-driven qdiscs: take the next packet into service.
    fn start_next(&mut self, now: Time) -> Option<Time> {
        let Qdisc::Held(q) = &mut self.qdisc else {
            return None;
        };
        let p = q.dequeue(now, &mut self.stats, &mut Forget)?;
        self.in_service = Some(p);
        Some(now + tx_time(&mut self.ser_cache, self.rate_bps, p.bytes))
    }

    /// The packet in service finished (event-driven qdiscs). Returns it
    /// unless the loss process took it, and when the next one finishes.
    pub fn complete(&mut self, now: Time, rng: &mut SplitMix64) -> (Option<Packet>, Option<Time>) {
        let p = self.in_service.take().expect("a packet in service");
        let delivered = (!self.lose(rng, &p)).then_some(p);
        (delivered, self.start_next(now))
    }

    /// Queue length in packets and bytes at `now` (the packet in service
    /// excluded).
    pub fn backlog(&mut self, now: Time) -> (usize, u64) {
        self.qdisc.backlog(now, self.free_at)
    }
}

/// `serialization(bytes, rate_bps)`, remembered for the last two sizes.
fn tx_time(cache: &mut [(u32, Time); 2], rate_bps: u64, bytes: u32) -> Time {
    if cache[0].0 == bytes {
        return cache[0].1;
    }
    if cache[1].0 == bytes {
        cache.swap(0, 1);
        return cache[0].1;
    }
    let t = serialization(bytes, rate_bps);
    cache[1] = cache[0];
    cache[0] = (bytes, t);
    t
}

/// A propagation delay, optionally with up to `jitter` of random extra
/// delay per packet ([`Jitter`], which says why). Packets leave in the
/// order they entered: a packet is never released before the one ahead of
/// it.
#[derive(Debug)]
pub struct Pipe {
    pub delay: Time,
    jitter: Jitter,
    last: Time,
    /// Packets in arrival order, each with its arrival time in `at`.
    q: Ring<Packet>,
}

impl Pipe {
    pub fn new(delay: Time, jitter: Time) -> Pipe {
        Pipe {
            delay,
            jitter: Jitter::new(jitter),
            last: 0,
            q: Ring::default(),
        }
    }

    /// Puts a copy of `p` in; returns its arrival time if it is now the
    /// head (the caller schedules the arrival event).
    #[inline]
    pub fn push(&mut self, now: Time, p: &Packet, rng: &mut SplitMix64) -> Option<Time> {
        let extra = self.jitter.draw(rng);
        let at = (now + self.delay + extra).max(self.last);
        self.last = at;
        self.q.push_back(Packet { at, ..*p });
        (self.q.len() == 1).then_some(at)
    }

    /// Takes the head. The caller knows it has arrived: its arrival is
    /// the event being served.
    pub fn pop(&mut self) -> Option<Packet> {
        self.q.pop_front()
    }

    pub fn head_time(&self) -> Option<Time> {
        self.q.front().map(|p| p.at)
    }
}
