//! Kleinrock's packet-level simulator: a dumbbell of two bottleneck links,
//! Linux-like TCP senders and receivers, and the algorithms of
//! `kleinrock-cc` called through their hooks exactly as the kernel calls
//! them.
//!
//! - [`event`]: the event list; [`time`]: nanosecond time.
//! - [`packet`], [`link`]: the network. The queue disciplines, loss,
//!   jitter and mahimahi traces a link runs are `kleinrock-link`'s, shared
//!   with the live lab, and so is the description of a link,
//!   [`LinkConfig`], which the lab's delay line takes too; it and the
//!   types it names are re-exported here.
//! - [`tcp`]: the sender (SACK scoreboard, RACK-TLP, PRR, RTO, rate
//!   sampler, pacing) and the receiver (delayed ACKs, SACK, ECN echo).
//! - [`world`]: the topology and event loop; [`results`]: what a run
//!   produces, written as JSON and CSV through `json` and `decimal`;
//!   [`capture`]: a run's packets as a pcap or pcapng file.
//!
//! Deterministic: one seeded generator draws every random loss, events at
//! the same instant run in scheduling order, and nothing reads a real clock.

pub mod capture;
mod decimal;
pub mod event;
mod json;
pub mod link;
pub mod packet;
pub mod results;
pub mod scenario;
pub mod tcp;
pub mod time;
pub mod world;

pub use kleinrock_link::codel::CodelParams;
pub use kleinrock_link::config::LinkConfig;
pub use kleinrock_link::loss::LossModel;
pub use kleinrock_link::mahimahi::Trace;
pub use kleinrock_link::queue::Limit;
pub use kleinrock_link::red::RedParams;
pub use results::Results;
pub use world::{Config, FlowConfig, Sim};
