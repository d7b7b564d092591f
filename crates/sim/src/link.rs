//! A link: a queue in front of a serializer of fixed rate, an optional loss
//! process at its far end, and per-flow propagation pipes after it. A FIFO
//! link knows each packet's departure when it arrives, so it schedules no
//! event of its own; each pipe schedules only its head's arrival (htsim's
//! design): events stay proportional to packets delivered.

use std::collections::VecDeque;

use kleinrock_cc::rand::SplitMix64;

use crate::loss::LossModel;
use crate::packet::Packet;
use crate::queue::{Fifo, Verdict};
use crate::time::{serialization, Time};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub marks: u64,
}

pub struct Link {
    pub rate_bps: u64,
    pub queue: Fifo,
    pub loss: LossModel,
    /// When the link finishes sending everything admitted so far.
    free_at: Time,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(rate_bps: u64, queue: Fifo, loss: LossModel) -> Link {
        Link {
            rate_bps,
            queue,
            loss,
            free_at: 0,
            stats: LinkStats::default(),
        }
    }

    /// A packet arrives at `now`. Returns it with the time its
    /// transmission completes, unless the queue or the loss process drops
    /// it.
    pub fn arrive(
        &mut self,
        now: Time,
        mut p: Packet,
        rng: &mut SplitMix64,
    ) -> Option<(Time, Packet)> {
        self.queue.advance(now);
        let start = self.free_at.max(now);
        match self.queue.admit(now, &mut p, start) {
            Verdict::Dropped => {
                self.stats.queue_drops += 1;
                return None;
            }
            Verdict::Marked => self.stats.marks += 1,
            Verdict::Queued => {}
        }
        let done = start + serialization(p.bytes, self.rate_bps);
        self.free_at = done;
        let index = self.stats.tx_packets;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += p.bytes as u64;
        if self.loss.drop(rng, index) {
            self.stats.loss_drops += 1;
            return None;
        }
        Some((done, p))
    }

    /// Queue length in packets and bytes at `now` (the packet in service
    /// excluded).
    pub fn backlog(&mut self, now: Time) -> (usize, u64) {
        self.queue.advance(now);
        (self.queue.len(), self.queue.bytes())
    }
}

/// A propagation delay, optionally with up to `jitter` of random extra
/// delay per packet. Packets leave in the order they entered: a packet is
/// never released before the one ahead of it.
///
/// The jitter breaks the phase effects of a perfectly deterministic
/// network (Floyd and Jacobson, "On Traffic Phase Effects in
/// Packet-Switched Gateways", 1992): without it, identical flows on a
/// drop-tail queue can lock into patterns where one always loses.
#[derive(Debug)]
pub struct Pipe {
    pub delay: Time,
    pub jitter: Time,
    last: Time,
    q: VecDeque<(Time, Packet)>,
}

impl Pipe {
    pub fn new(delay: Time, jitter: Time) -> Pipe {
        Pipe {
            delay,
            jitter,
            last: 0,
            q: VecDeque::with_capacity(64),
        }
    }

    /// Puts a packet in; returns its arrival time if it is now the head
    /// (the caller schedules the arrival event).
    pub fn push(&mut self, now: Time, p: Packet, rng: &mut SplitMix64) -> Option<Time> {
        let extra = if self.jitter > 0 {
            rng.next_u64() % (self.jitter + 1)
        } else {
            0
        };
        let at = (now + self.delay + extra).max(self.last);
        self.last = at;
        self.q.push_back((at, p));
        (self.q.len() == 1).then_some(at)
    }

    /// Takes the head if it has arrived.
    pub fn pop(&mut self, now: Time) -> Option<Packet> {
        match self.q.front() {
            Some(&(at, _)) if at <= now => self.q.pop_front().map(|(_, p)| p),
            _ => None,
        }
    }

    pub fn head_time(&self) -> Option<Time> {
        self.q.front().map(|&(t, _)| t)
    }
}
