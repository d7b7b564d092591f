//! One direction of a bottleneck as both engines take it: its rate or
//! mahimahi trace, its queue discipline, its random loss, its own one-way
//! delay and the jitter after it. The simulator builds its link from this
//! value (`crates/sim/src/world.rs`), the lab's delay line its lane
//! (`crates/lab/src/lane.rs`), so that one scenario file describes one
//! network in both. Plain data: nothing here runs.
//!
//! The counters a link keeps ([`LinkStats`]) are here too, so that both
//! engines report a link in the same terms.

use crate::codel::CodelParams;
use crate::loss::LossModel;
use crate::mahimahi::Trace;
use crate::queue::{Limit, Verdict};
use crate::red::RedParams;
use crate::time::Time;

/// The queue at a bottleneck.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueConfig {
    /// Tail-drop FIFO; optionally step-marking ECN at K packets.
    Fifo {
        limit: Limit,
        mark_at: Option<u32>,
    },
    Codel(CodelParams),
    FqCodel(CodelParams),
    Red(RedParams),
}

impl QueueConfig {
    /// The discipline's name as a scenario file writes it (`kind`), a FIFO
    /// being `fifo`.
    pub fn kind(&self) -> &'static str {
        match self {
            QueueConfig::Fifo { .. } => "fifo",
            QueueConfig::Codel(_) => "codel",
            QueueConfig::FqCodel(_) => "fq_codel",
            QueueConfig::Red(_) => "red",
        }
    }
}

/// One bottleneck direction.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// Constant rate, counting IP packets (no link-layer header); with a
    /// trace, its mean rate (for BDPs and reports).
    pub rate_bps: u64,
    /// A mahimahi trace of delivery opportunities (FIFO queues only).
    pub trace: Option<Trace>,
    /// One-way propagation delay of the link, added to every flow crossing
    /// it (a flow's RTT is its own `rtt` plus both directions' delays).
    pub delay: Time,
    pub queue: QueueConfig,
    /// Random loss of the packets leaving the queue.
    pub loss: LossModel,
    /// Up to this much random extra delay for each TCP data packet after
    /// this bottleneck, never reordering a flow (`crate::jitter` says
    /// why); 0 for a perfectly periodic network.
    pub jitter: Time,
}

impl LinkConfig {
    /// A link of `rate_bps` with `queue`, and no delay, loss or jitter.
    pub fn new(rate_bps: u64, queue: QueueConfig) -> LinkConfig {
        LinkConfig {
            rate_bps,
            trace: None,
            delay: 0,
            queue,
            loss: LossModel::None,
            jitter: 0,
        }
    }
}

/// A link's counters since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets (and their IP bytes) that left the queue, the ones the loss
    /// process then took included.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Packets the queue discipline dropped (tail drop, AQM drops).
    pub queue_drops: u64,
    /// Packets the loss process took as they left the queue.
    pub loss_drops: u64,
    /// Packets the queue discipline marked CE.
    pub marks: u64,
}

impl LinkStats {
    /// Counts what a queue did with an arriving packet; true if it kept
    /// it.
    #[inline(always)]
    pub fn count(&mut self, v: Verdict) -> bool {
        match v {
            Verdict::Dropped => {
                self.queue_drops += 1;
                false
            }
            Verdict::Marked => {
                self.marks += 1;
                true
            }
            Verdict::Queued => true,
        }
    }
}
