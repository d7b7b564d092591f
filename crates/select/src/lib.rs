//! Per-destination choice of congestion control.
//!
//! A host talks to many peers over paths it cannot see. For each peer it can
//! learn, from the connections it has made, which algorithm comes closest to
//! the path's best operating point, the least RTT at the most delivery rate
//! (Kleinrock's optimal point), and use that one next time. Two policies:
//!
//! - [`bpftune::Bpftune`]: bpftune's TCP connection tuner (oracle/bpftune,
//!   `tcp_conn_tuner`, seed 003), ported with its integer arithmetic: a cost
//!   per (host, algorithm), an exponential moving average with a learning
//!   rate of 1/4, epsilon-greedy with epsilon 1/20, BBR on heavy
//!   retransmission, learning at connection close.
//! - [`bandit::Bandit`], the default: satisficing Thompson sampling over
//!   the full candidate set that compares algorithms per transfer size
//!   ([`evidence`]) and chooses for the peer's mix of sizes, explores in
//!   proportion to how noisy each algorithm's outcome is, learns from
//!   samples during connections, borrows from peers in the same prefix,
//!   and detects a path that changes ([`change`]), in a bounded table with
//!   LRU eviction.
//!
//! [`trade`] says what a choice gives up: the goodput an algorithm chosen
//! for its low RTT delivers short of another's, for the status.
//!
//! The library does no I/O and reads no clock: time is counted in
//! connections, randomness comes from a seeded generator, and only
//! [`persist`] touches files, when asked to.

pub mod bandit;
pub mod bpftune;
pub mod change;
pub mod evidence;
pub mod live;
pub mod lru;
pub mod persist;
pub mod trade;

use std::net::IpAddr;

/// A peer address as a 128-bit key: IPv6 as is, IPv4 mapped (`::ffff:a.b.c.d`),
/// as bpftune keys its map.
pub type Peer = u128;

/// A set of candidates, a bit per index (`1 << i`); the candidates past
/// the 64th are in it only when all are ([`ALL`]).
pub type Mask = u64;

/// Every candidate.
pub const ALL: Mask = u64::MAX;

/// Is candidate `i` in `mask`?
pub fn allows(mask: Mask, i: usize) -> bool {
    if i < 64 {
        mask >> i & 1 == 1
    } else {
        mask == ALL
    }
}

/// The key of an address.
pub fn peer(addr: IpAddr) -> Peer {
    match addr {
        IpAddr::V4(a) => u128::from(a.to_ipv6_mapped()),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The address of a key, for display (`::ffff:10.0.0.1` prints as IPv4).
pub fn addr(p: Peer) -> IpAddr {
    let v6 = std::net::Ipv6Addr::from(p);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    }
}

/// What a connection has shown so far (or at its close).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// The connection's windowed minimum RTT (`tp->rtt_min`), µs.
    pub min_rtt_us: u32,
    /// The last delivery-rate sample (`tp->rate_delivered` segments over
    /// `tp->rate_interval_us`), and the segment size, as bpftune reads them.
    pub rate_delivered: u32,
    pub rate_interval_us: u32,
    pub mss: u32,
    /// The largest delivery rate the connection has shown, bytes/s.
    pub max_rate_bps: u64,
    /// What it has delivered so far over how long it has run, bytes/s
    /// (`tcpi_bytes_acked` over the connection's age).
    pub mean_rate_bps: u64,
    /// The RTT the connection has been seeing (the mean of its smoothed
    /// RTT), µs: the queueing it causes, which `min_rtt_us` does not show.
    pub srtt_us: u32,
    /// Segments sent and retransmitted (`tp->segs_out`, `tp->total_retrans`).
    pub segs_out: u32,
    pub total_retrans: u32,
    /// How long the connection has been open, µs (0: not known).
    pub age_us: u64,
    /// Payload bytes the peer has acknowledged (`tcpi_bytes_acked`): at
    /// close, the transfer's size (0: not known).
    pub bytes_acked: u64,
    /// At close: everything the application wrote had been acknowledged
    /// (`tp->write_seq == tp->snd_una`), a transfer that completed, rather
    /// than a connection closed while it still had data to send.
    pub complete: bool,
}

impl Sample {
    /// The last delivery-rate sample in bytes per µs, truncated, as bpftune
    /// computes it.
    pub fn rate_bytes_per_us(&self) -> u64 {
        if self.rate_interval_us == 0 {
            return 0;
        }
        self.rate_delivered as u64 * self.mss as u64 / self.rate_interval_us as u64
    }
}
