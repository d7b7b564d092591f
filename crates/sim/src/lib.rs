//! Kleinrock's packet-level simulator: a dumbbell of two bottleneck links,
//! Linux-like TCP senders and receivers, and the algorithms of
//! `kleinrock-cc` called through their hooks exactly as the kernel calls
//! them.
//!
//! - [`event`]: the event list; [`time`]: nanosecond time.
//! - [`packet`], [`queue`], [`loss`], [`link`]: the network; `ring`: the
//!   power-of-two ring buffer the hot queues use.
//! - [`tcp`]: the sender (SACK scoreboard, RACK-TLP, PRR, RTO, rate
//!   sampler, pacing) and the receiver (delayed ACKs, SACK, ECN echo).
//! - [`world`]: the topology and event loop; [`results`]: what a run
//!   produces, written as JSON and CSV through `json` and `decimal`.
//!
//! Deterministic: one seeded generator draws every random loss, events at
//! the same instant run in scheduling order, and nothing reads a real clock.

pub mod codel;
mod decimal;
pub mod event;
pub mod fq_codel;
mod json;
pub mod link;
pub mod loss;
pub mod mahimahi;
pub mod packet;
pub mod queue;
pub mod red;
pub mod results;
mod ring;
pub mod scenario;
pub mod tcp;
pub mod time;
pub mod world;

pub use results::Results;
pub use world::{Config, FlowConfig, LinkConfig, Sim};
