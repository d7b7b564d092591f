//! Kleinrock's congestion-control algorithms.
//!
//! Each algorithm is written once, the way the Linux kernel writes it:
//! integer and fixed-point arithmetic behind the hooks of `struct
//! tcp_congestion_ops` ([`CongestionControl`]), reading and writing only the
//! connection fields the kernel lets it touch ([`Sock`]). The same code then
//! runs in the simulator, replays kernel traces bit for bit, and is the
//! reference the BPF ports are checked against.
//!
//! - [`sock`]: the connection state and its two clocks (µs and jiffies).
//! - [`ops`]: the hooks, their arguments, and [`Hook`] (one recorded call).
//! - [`aimd`]: slow start and additive increase, shared by every algorithm.
//! - [`hystart`], [`hystart_pp`]: slow-start exits algorithms opt into.
//! - [`reno`], [`cubic`], [`bbr`], [`cdg`], [`vegas`], [`htcp`], [`dctcp`]: the
//!   algorithms, each registered by one line of `algorithms!` below;
//!   [`minmax`]: the windowed min/max filter BBR keeps its estimates in.
//! - [`registry`]: what an algorithm's file declares about it ([`Declared`])
//!   and what the registration line makes of it ([`Algorithm`],
//!   [`ALGORITHMS`]).
//! - [`params`], [`state`]: each algorithm's parameters and private state,
//!   declared once for parsing, printing, traces, replay and its BPF port.
//! - [`spec`]: `cubic:hystart=off`-style names, parsed into [`Algorithm`];
//!   [`echo`]: how a message quotes what a person wrote (escaped, cut short).
//! - [`tcp`]: the TCP core's steps around the hooks (pacing rate, state
//!   changes, the start and end of a reduction), shared by every core that
//!   drives an algorithm.
//! - [`rate`]: the delivery-rate sampler (`tcp_rate.c`) that turns ACKs
//!   into the [`RateSample`] of `cong_control`, for every core.
//! - [`driver`]: a deterministic ACK clock for tests and demonstrations.
//! - `harness` (tests, and the `harness` feature): one algorithm and its
//!   connection, driven hook by hook; `script`: events of the TCP core
//!   played onto one algorithm for property tests (strategies for them
//!   with the `proptest` feature).
//! - [`rand`]: the seeded generator everything random draws from.
//!
//! The crate has no dependencies (proptest, optionally, for test
//! strategies) and reads no clock and no randomness. It is `no_std` (with
//! `alloc`, for spec strings), so the same algorithms build for embedded
//! and kernel-adjacent userspace transports.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(any(test, feature = "proptest"))]
extern crate std;

#[macro_use]
pub mod registry;

pub mod aimd;
pub mod bbr;
pub mod cdg;
pub mod cubic;
pub mod dctcp;
pub mod driver;
pub mod echo;
#[cfg(any(test, feature = "harness"))]
pub mod harness;
pub mod htcp;
pub mod hystart;
pub mod hystart_pp;
pub mod implementation;
pub mod minmax;
pub mod ops;
pub mod params;
pub mod rand;
pub mod rate;
pub mod reno;
#[cfg(any(test, feature = "harness"))]
pub mod script;
pub mod sock;
pub mod spec;
pub mod state;
pub mod tcp;
pub mod vegas;

// The registry: one line per algorithm, its module and type, in the order
// `kleinrock algorithms` lists them (registry.rs says what this generates).
// The modules are declared above, where rustfmt finds them.
algorithms! {
    reno::Reno,
    bbr::Bbr,
    cdg::Cdg,
    vegas::Vegas,
    htcp::Htcp,
    dctcp::Dctcp,
    cubic::Cubic,
}

pub use ops::{AckSample, CaEvent, CongestionControl, Hook, RateSample};
pub use registry::Declared;
pub use sock::{CaState, Field, PacingStatus, Sock};
pub use spec::SpecError;
