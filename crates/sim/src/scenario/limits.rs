//! The largest (and a few smallest) values a scenario or a workload file
//! may hold, each with the reason it sits where it does. Every size that
//! comes from a file is checked against one of these before anything is
//! built from it, so that no value a person writes can make the simulator
//! allocate, loop or count past what the run needs: a bad value is one
//! sentence naming the limit, never an abort or a run that does not end.
//! docs/SCENARIOS.md lists them for people.

use crate::time::{Time, MS, SEC, US};

/// The range a key's value must fall in, and why (a few words a message
/// quotes after the limit passed, so they explain both ends where both
/// need it).
pub struct Within<T> {
    pub min: T,
    pub max: T,
    pub why: &'static str,
}

/// A scenario or workload file: a few kilobytes when a person writes it
/// (the largest in scenarios/ is 4 KB). Read no further, so that a path to
/// a huge or endless file is refused rather than read into memory.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A mahimahi trace: a line of a few bytes per millisecond delivery
/// opportunity, so 64 MiB is hours of a fast cellular link (mahimahi's own
/// traces are a few megabytes).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// Simulated time: a day. No experiment here needs more, a longer value is
/// a slip of units (`"1000000000000s"`), and with every time below it no
/// sum of times comes near the 584 years a `u64` of nanoseconds holds.
pub const MAX_DURATION: Time = 86_400 * SEC;

/// The finest sample interval: the series print time in microseconds, so
/// finer samples would share their timestamps.
pub const MIN_SAMPLE_INTERVAL: Time = US;

/// Records the time series of a run may hold together (a sample per flow
/// and per bottleneck every sample interval, and a ping's replies): about
/// 1 GB of memory and 4.5 GB of results.json. One microsecond samples
/// over ten minutes, say, would be 6 x 10^8 per flow.
pub const MAX_SERIES_RECORDS: u64 = 10_000_000;

/// A flow's (or ping's, or UDP flow's) base RTT: Linux's `TCP_RTO_MAX`, 120
/// s. On a longer path every segment is retransmitted by timeout before
/// its ACK can return, and the RTT estimator (`srtt_us`, microseconds << 3
/// in 32 bits) overflows at 537 s.
pub const MAX_RTT: Time = 120 * SEC;

/// A bottleneck's own one-way `delay`, and its `jitter`: half of
/// [`MAX_RTT`], so that a path's RTT (`rtt` plus both delays) stays under
/// 240 s, well inside what `srtt_us` holds.
pub const MAX_LINK_DELAY: Time = 60 * SEC;

/// A ping's interval: iputils' ping keeps `-i` in whole milliseconds
/// (`interval = (int)(optval * 1000)` in ping.c: a smaller value becomes
/// 0, flooding, which only root may do; other users may go down to 2 ms,
/// 200 ms before 2021, iputils issue #367).
pub const MIN_PING_INTERVAL: Time = MS;

/// A link's (or a UDP flow's) rate: 1 Tbit/s, above the fastest Ethernet
/// standardised (800 Gbit/s, IEEE 802.3df-2024). Time is counted in whole
/// nanoseconds: at 1 Tbit/s a 1500-byte packet takes 12 ns, and faster
/// rates would be misrepresented by the rounding of every packet's time.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;

/// Datagrams a UDP flow sends per second: as many as the fastest link
/// carries full-sized packets ([`MAX_RATE_BPS`] in 1500-byte packets), so
/// that small datagrams cannot make a flow of more packets, each an event,
/// than any link sends (1 Tbit/s of 28-byte datagrams would be 4.5 x 10^9
/// a second).
pub const MAX_UDP_PPS: u64 = MAX_RATE_BPS / (8 * 1500);

/// The initial congestion window, segments. Linux takes any 32-bit value
/// (`ip route ... initcwnd` is an unchecked u32 route metric, and
/// `tcp_init_cwnd()` clamps it only to `snd_cwnd_clamp`), so the limit is
/// ours: 1,000 times RFC 6928's ten segments, 14.5 MB in the first round
/// trip at the default mss, more than a stock Linux sender may have
/// unacknowledged (`net.ipv4.tcp_wmem` allows 4 MiB). Beyond it the first
/// flight is nearly all loss, and recovering it takes time that grows
/// faster than the window (a 2 s run with 1,000,000 took 28 s).
pub const MAX_INIT_CWND: i64 = 10_000;

/// The receive window: the largest TCP can advertise, 65535 bytes shifted
/// by the largest window scale, 14 (RFC 7323 section 2.3).
pub const MAX_RWND_BYTES: u64 = 65_535 << 14;

/// TCP flows, pings and UDP flows together, `count` replicas included: a
/// few KB each before they send (100,000 take about 300 MB).
pub const MAX_FLOWS: u64 = 100_000;

/// Packets a queue may hold, and packets a link's bandwidth-delay product
/// may keep in flight: the simulator holds every packet on a path or in a
/// queue (64 bytes each, more while its ring grows), so 10^7 is most of
/// a gigabyte. Deep-buffer
/// switches hold a few million full-sized packets.
pub const MAX_PACKETS: u64 = 10_000_000;

/// A queue's size in bytes: [`MAX_PACKETS`] packets of 1500 bytes.
pub const MAX_QUEUE_BYTES: u64 = MAX_PACKETS * 1500;

/// Segments one flow may send in a run (its `size`, or what its link can
/// carry in `duration`): the simulated TCP numbers segments in 32 bits and
/// compares them without wrapping, so a flow stays below 2^31 of them.
pub const MAX_FLOW_SEGMENTS: u64 = 1 << 31;

/// A flow's size in bytes (`size`, `response`) with segments of `mss`
/// bytes: fewer than [`MAX_FLOW_SEGMENTS`] segments.
pub fn flow_bytes(mss: u32) -> Within<u64> {
    Within {
        min: 1,
        max: (MAX_FLOW_SEGMENTS - 1) * mss as u64,
        why: "fewer than 2^31 segments: the simulated TCP numbers them in 32 bits, without wrap-around",
    }
}

/// The weight of a workload's size class: weights are relative, and a
/// million to one already draws a class once in a million connections;
/// larger ones would only risk their sum overflowing.
pub const MAX_WEIGHT: f64 = 1e6;

/// A run's `duration`.
pub const DURATION: Within<Time> = Within {
    min: 1,
    max: MAX_DURATION,
    why: "a day; a longer run is usually a slip of units",
};

/// When something happens in a run (`start`, `stop`, `stagger`, `think`).
pub const TIME_IN_RUN: Within<Time> = Within {
    min: 0,
    max: MAX_DURATION,
    why: "a day, the longest run",
};

/// `sample_interval` (a workload's `sample`).
pub const SAMPLE_INTERVAL: Within<Time> = Within {
    min: MIN_SAMPLE_INTERVAL,
    max: MAX_DURATION,
    why: "from 1us, as the series print time in microseconds, to a day",
};

/// A path's `rtt`.
pub const RTT: Within<Time> = Within {
    min: 1,
    max: MAX_RTT,
    why: "Linux's TCP_RTO_MAX: on a longer path every segment times out before its ACK returns",
};

/// A bottleneck's `delay` and `jitter`.
pub const LINK_DELAY: Within<Time> = Within {
    min: 0,
    max: MAX_LINK_DELAY,
    why: "half of TCP_RTO_MAX, so that a path's RTT stays within what TCP measures",
};

/// A ping's `interval`.
pub const PING_INTERVAL: Within<Time> = Within {
    min: MIN_PING_INTERVAL,
    max: MAX_DURATION,
    why: "from 1ms, as ping counts its interval in whole milliseconds, to a day",
};

/// CoDel's `target` and `interval`.
pub const AQM_TIME: Within<Time> = Within {
    min: 1,
    max: MAX_RTT,
    why: "CoDel's interval is the longest RTT expected (RFC 8289), and an RTT is at most 120s",
};

/// A link's or a UDP flow's `rate`.
pub const RATE: Within<u64> = Within {
    min: 1,
    max: MAX_RATE_BPS,
    why: "faster than any Ethernet, and time is counted in whole nanoseconds",
};

/// `[tcp] mss`.
pub const MSS: Within<i64> = Within {
    min: 64,
    max: 65_483,
    why: "a segment and its 52 bytes of headers fit an IPv4 packet",
};

/// `[tcp] init_cwnd`.
pub const INIT_CWND: Within<i64> = Within {
    min: 1,
    max: MAX_INIT_CWND,
    why: "1,000 times RFC 6928's initial window, more than Linux's default send buffer holds",
};

/// `[tcp] hz`: Linux builds with 100, 250, 300 or 1000.
pub const HZ: Within<i64> = Within {
    min: 1,
    max: 1_000_000,
    why: "",
};

/// A `[[flow]]`'s `count`.
pub const COUNT: Within<i64> = Within {
    min: 1,
    max: MAX_FLOWS as i64,
    why: "the most flows a scenario may hold",
};

/// A queue's size in packets (a FIFO's, an AQM's `limit`, RED's `min` and
/// `max`) and `ecn_mark_at`.
pub const QUEUE_PACKETS: Within<i64> = Within {
    min: 1,
    max: MAX_PACKETS as i64,
    why: "the simulator keeps every queued packet in memory",
};
