//! Kleinrock's link models: the queue disciplines, loss processes, jitter
//! and trace-driven rates of a bottleneck, written once for both engines.
//! The simulator (`kleinrock-sim`) runs them on simulated time; the live
//! lab's delay line (`kleinrock-lab`) runs them on the packets it holds
//! between network namespaces, on CLOCK_MONOTONIC. A queue that decides
//! the same way in both is what lets a lab run be compared with a
//! simulated one.
//!
//! Time is an input (`now`, nanoseconds) and randomness a seeded generator
//! passed in; nothing here reads a clock, a file descriptor or the OS's
//! randomness, and no file is read: a mahimahi trace is parsed from its
//! text, which the scenario reader of `kleinrock-sim` reads (a regular
//! file, bounded, as every file a person wrote). Queues are generic
//! over [`packet::Packet`] (and [`packet::HeldPacket`] for those that hold
//! packets until dequeue), implemented by each engine's own packets and
//! monomorphised, so that the simulator's per-packet path costs what it
//! did before the queues moved here.
//!
//! | module | what |
//! | --- | --- |
//! | [`config`] | one direction of a bottleneck as both engines take it (rate or trace, queue, loss, delay, jitter), and the counters a link keeps |
//! | [`time`] | nanoseconds, and a packet's serialization time at a rate |
//! | [`packet`] | what a queue reads of a packet and may do to it (size, ECN, enqueue time, flow), and where it puts what it drops |
//! | [`qdisc`] | a link's discipline as both engines drive it: made from a [`config::QueueConfig`], offered arrivals, asked for departures, what it did counted |
//! | [`queue`] | tail-drop FIFO sized in packets or bytes, with DCTCP's step ECN marking at K; the [`queue::Verdict`] every discipline gives |
//! | [`codel`] | CoDel (RFC 8289, Linux `codel_impl.h`): drop or mark at dequeue by sojourn time |
//! | [`fq_codel`] | FQ-CoDel (RFC 8290, Linux `sch_fq_codel`): per-flow queues, DRR, CoDel per queue |
//! | [`red`] | RED, gentle (Floyd and Jacobson 1993, Linux `sch_red`): drop or mark on arrival by average queue |
//! | [`loss`] | random loss: Bernoulli, Gilbert-Elliott, or a fixed list of packets |
//! | [`jitter`] | uniform random extra delay per packet |
//! | [`mahimahi`] | mahimahi delivery-opportunity traces: parsing, and the next opportunity at a time |
//! | [`ring`] | the power-of-two ring buffer the hot queues use |
//!
//! The link around its discipline (the serializer, the propagation that
//! follows, the events or release times that drive them) is each engine's
//! own:
//! `crates/sim/src/link.rs`; `crates/lab/src/bottleneck.rs` and
//! `lane.rs`.
//!
//! `std` only for RED's `f64::powi` and the trace file helper; the rest
//! needs no more than `alloc`.

pub mod codel;
pub mod config;
pub mod fq_codel;
pub mod jitter;
pub mod loss;
pub mod mahimahi;
pub mod packet;
pub mod qdisc;
pub mod queue;
pub mod red;
pub mod ring;
pub mod time;
