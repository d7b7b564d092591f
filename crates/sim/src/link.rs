//! A link: a queue discipline in front of a serializer of fixed rate, an
//! optional loss process at its far end, and per-flow propagation pipes
//! after it. The link schedules only its next transmission completion, and
//! each pipe only its head's arrival (htsim's design): events stay
//! proportional to packets, not to time.

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
    in_service: Option<Packet>,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(rate_bps: u64, queue: Fifo, loss: LossModel) -> Link {
        Link {
            rate_bps,
            queue,
            loss,
            in_service: None,
            stats: LinkStats::default(),
        }
    }

    /// A packet arrives. Returns when its transmission completes if the
    /// link was idle and starts sending it now.
    pub fn arrive(&mut self, now: Time, p: Packet) -> Option<Time> {
        match self.queue.enqueue(now, p) {
            Verdict::Dropped => {
                self.stats.queue_drops += 1;
                return None;
            }
            Verdict::Marked => self.stats.marks += 1,
            Verdict::Queued => {}
        }
        if self.in_service.is_none() {
            return self.start_next(now);
        }
        None
    }

    fn start_next(&mut self, now: Time) -> Option<Time> {
        let p = self.queue.dequeue()?;
        let done = now + serialization(p.bytes, self.rate_bps);
        self.in_service = Some(p);
        Some(done)
    }

    /// The packet in service finished. Returns it unless the loss process
    /// took it, and when the next transmission completes.
    pub fn complete(&mut self, now: Time, rng: &mut SplitMix64) -> (Option<Packet>, Option<Time>) {
        let p = self.in_service.take().expect("a packet in service");
        let index = self.stats.tx_packets;
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += p.bytes as u64;
        let delivered = if self.loss.drop(rng, index) {
            self.stats.loss_drops += 1;
            None
        } else {
            Some(p)
        };
        (delivered, self.start_next(now))
    }

    /// Queue length in packets and bytes (the packet in service excluded).
    pub fn backlog(&self) -> (usize, u64) {
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
