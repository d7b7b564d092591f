//! BBR v1: Bottleneck Bandwidth and Round-trip propagation time.
//!
//! Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016; seed 004 ("Making Linux TCP
//! Fast", netdev 1.2). A port of Linux 6.18 `net/ipv4/tcp_bbr.c`, with its
//! integer arithmetic, bitfield widths and order of operations.
//!
//! BBR does not react to loss or delay as such. It models the path:
//!
//! ```text
//!   bottleneck_bw = windowed max(delivered / interval, 10 round trips)
//!   min_rtt       = windowed min(rtt, 10 seconds)
//!   pacing_rate   = pacing_gain * bottleneck_bw
//!   cwnd          = max(cwnd_gain * bottleneck_bw * min_rtt, 4)
//! ```
//!
//! and operates at Kleinrock's optimal point, a full pipe with no queue,
//! by cycling its gains through four modes:
//!
//! ```text
//!          |
//!          V
//! +---> STARTUP  ----+      STARTUP: gain 2/ln2, double per round until
//! |        |         |               bw grows < 25% for 3 rounds
//! |        V         |      DRAIN:   gain ln2/2 until inflight <= BDP
//! |      DRAIN   ----+      PROBE_BW: gains 5/4, 3/4, then 1 x 6 rounds
//! |        |         |      PROBE_RTT: cwnd 4 for 200 ms and a round, when
//! |        V         |                min_rtt is 10 s old
//! +---> PROBE_BW ----+
//! |      ^    |      |
//! |      +----+      |
//! +---- PROBE_RTT <--+
//! ```
//!
//! Rates are packets per microsecond scaled by 2^24 (`BW_SCALE`), gains are
//! fractions of 256 (`BBR_SCALE`). A long-term estimator detects token-bucket
//! policers (consistent bw with heavy loss over two intervals) and then paces
//! at the policed rate; ACK aggregation is measured (`extra_acked`) and
//! provisioned in cwnd.
//!
//! The kernel draws one random number: the starting phase of the gain cycle
//! on entering PROBE_BW. Here it comes from a seeded generator
//! ([`CongestionControl::set_random_seed`]); replays take it from the trace.

use crate::minmax::MinMax;
use crate::ops::{CaEvent, CaVisitor, CongestionControl, RateSample};
use crate::params::NoParams;
use crate::rand::SplitMix64;
use crate::registry::Declared;
use crate::sock::{
    after, before, msecs_to_jiffies, CaState, Field, PacingStatus, Sock, GSO_LEGACY_MAX_SIZE,
    TCP_INFINITE_SSTHRESH, TCP_INIT_CWND,
};
use crate::state::{private_state, Member, PrivateState};

/// Rates in packets per µs, scaled by 2^24: a unit is about 715 bit/s for
/// 1500-byte packets, so a u32 spans 715 bit/s to 3 Tbit/s.
pub const BW_SCALE: u32 = 24;
/// The fixed-point unit of bandwidth: bandwidths are segments per µs <<
/// BW_SCALE, so that slow links keep precision.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gains are fractions of 256.
pub const BBR_SCALE: u32 = 8;
/// The fixed-point unit of gains and fractions (1.0), as `tcp_bbr.c`'s
/// `BBR_UNIT`.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// Phases in the PROBE_BW gain cycle.
pub const CYCLE_LEN: u32 = 8;
/// The bw filter spans this many round trips: a cycle plus two.
pub const BW_RTTS: u32 = CYCLE_LEN + 2;
/// The min_rtt filter spans this many seconds.
pub const MIN_RTT_WIN_SEC: u32 = 10;
/// PROBE_RTT holds cwnd at the minimum this long, ms (about 2% of 10 s).
pub const PROBE_RTT_MODE_MS: u32 = 200;
/// Below this rate, bits/s, TSO is not worth its burst.
pub const MIN_TSO_RATE: u64 = 1_200_000;
/// Pace 1% below the estimate, to drain queues over time.
pub const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln(2): the smallest gain that doubles the rate each round, sending as
/// many packets per round as Reno's slow start.
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// ln(2)/2: drains STARTUP's queue in about one round.
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// cwnd gain in PROBE_BW: tolerates delayed and stretched ACKs.
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// PROBE_BW's cycle: probe at 5/4, drain at 3/4, cruise at 1 for six rounds.
pub const PACING_GAIN: [u32; 8] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// The cycle starts at a random phase among this many (never the drain).
pub const CYCLE_RAND: u32 = 7;
/// Fewest packets in flight: two 2-packet delayed-ACK exchanges.
pub const CWND_MIN_TARGET: u32 = 4;
/// STARTUP continues while bw grows by 25% per round...
pub const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// ...and ends after 3 rounds without.
pub const FULL_BW_CNT: u32 = 3;
/// Long-term (policer) estimator: rounds per sampling interval, at least.
pub const LT_INTVL_MIN_RTTS: u32 = 4;
/// An interval is lossy above 50/256 (about 20%) lost.
pub const LT_LOSS_THRESH: u32 = 50;
/// Two intervals agree within 1/8...
pub const LT_BW_RATIO: u32 = BBR_UNIT / 8;
/// ...or within 4 kbit/s (in bytes/s).
pub const LT_BW_DIFF: u64 = 4000 / 8;
/// Use the policed rate for this many rounds.
pub const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation provisioning: gain, window (rounds), epoch reset, cap.
pub const EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// The extra-ACKed filter's window, in round trips
/// (`bbr_extra_acked_win_rtts`).
pub const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// An ACK-aggregation epoch restarts after this many segments, so its count
/// cannot overflow (`bbr_ack_epoch_acked_reset_thresh`).
pub const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// The most cwnd that ACK aggregation may add, as time at the estimated
/// bandwidth (`bbr_extra_acked_max_us`, 100 ms).
pub const EXTRA_ACKED_MAX_US: u64 = 100 * 1000;
/// `MAX_TCP_HEADER` on x86-64 distribution kernels:
/// L1_CACHE_ALIGN(128 + MAX_HEADER) = 320 bytes.
pub const MAX_TCP_HEADER: u64 = 320;

/// `tcp_stamp_us_delta()`: `t1 - t0` in µs, 0 if negative, returned as the
/// kernel's `u32`, which truncates gaps of 2^32 µs (71.6 minutes) or more.
fn stamp_us_delta(t1: u64, t0: u64) -> u32 {
    (t1.wrapping_sub(t0) as i64).max(0) as u32
}

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    #[default]
    /// Doubling the sending rate each round until bandwidth stops growing.
    Startup = 0,
    /// Draining the queue STARTUP built.
    Drain = 1,
    /// Cruising at the estimated bandwidth, probing for more one phase in
    /// eight.
    ProbeBw = 2,
    /// Cutting the flight to four segments to measure the path's round trip
    /// again.
    ProbeRtt = 3,
}

impl Member for Mode {
    fn to_cell(self) -> i64 {
        self as i64
    }
    fn from_cell(cell: i64) -> Mode {
        match cell & 3 {
            0 => Mode::Startup,
            1 => Mode::Drain,
            2 => Mode::ProbeBw,
            _ => Mode::ProbeRtt,
        }
    }
}

private_state! {
    /// `struct bbr`: the private state, bitfields as plain integers kept
    /// within their kernel widths.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub struct BbrState {
        /// Minimum RTT in the last `bbr_min_rtt_win_sec`, µs.
        pub min_rtt_us: u32,
        /// When `min_rtt_us` was measured, jiffies.
        pub min_rtt_stamp: u32,
        /// When PROBE_RTT may end, jiffies (0: not yet timed).
        pub probe_rtt_done_stamp: u32,
        /// The bandwidth max filter, `struct minmax bw`.
        pub bw: MinMax {
            bw_s0_t(.s[0].t), bw_s0_v(.s[0].v),
            bw_s1_t(.s[1].t), bw_s1_v(.s[1].v),
            bw_s2_t(.s[2].t), bw_s2_v(.s[2].v),
        },
        /// Round trips counted so far (the bandwidth filter's clock).
        pub rtt_cnt: u32,
        /// `delivered` at which the current round ends.
        pub next_rtt_delivered: u32,
        /// When the current PROBE_BW gain phase began, µs.
        pub cycle_mstamp: u64,
        /// Which state of the machine BBR is in.
        pub mode: Mode : 3,
        /// `icsk_ca_state` at the last ACK, to see Recovery begin and end.
        pub prev_ca_state: u8 : 3,
        /// Sending only as much as is delivered (the first round of
        /// Recovery)?
        pub packet_conservation: bool,
        /// Did this ACK start a new round?
        pub round_start: bool,
        /// Restarting after idle?
        pub idle_restart: bool,
        /// Has PROBE_RTT spent a round at its low flight?
        pub probe_rtt_round_done: bool,
        /// Taking a long-term (policer) bandwidth sample?
        pub lt_is_sampling: bool,
        /// Round trips in the long-term sampling interval.
        pub lt_rtt_cnt: u32 : 7,
        /// Pacing at the long-term bandwidth (a policer was detected)?
        pub lt_use_bw: bool,
        /// The long-term bandwidth estimate, BW_UNIT.
        pub lt_bw: u32,
        /// `delivered` when the long-term interval began.
        pub lt_last_delivered: u32,
        /// When the long-term interval began, `delivered_mstamp` in ms.
        pub lt_last_stamp: u32,
        /// `lost` when the long-term interval began.
        pub lt_last_lost: u32,
        /// The gain on the pacing rate, BBR_UNIT.
        pub pacing_gain: u32 : 10,
        /// The gain on cwnd, BBR_UNIT.
        pub cwnd_gain: u32 : 10,
        /// Has STARTUP found the pipe full (bandwidth plateaued)?
        pub full_bw_reached: bool,
        /// Rounds without 25% bandwidth growth.
        pub full_bw_cnt: u32 : 2,
        /// The PROBE_BW phase, an index into the gain cycle.
        pub cycle_idx: u32 : 3,
        /// Has an RTT sample arrived (for the first pacing rate)?
        pub has_seen_rtt: bool,
        /// cwnd before Recovery or PROBE_RTT, restored after.
        pub prior_cwnd: u32,
        /// The bandwidth STARTUP's growth is measured against, BW_UNIT.
        pub full_bw: u32,
        /// When the ACK-aggregation epoch began, µs.
        pub ack_epoch_mstamp: u64,
        /// The extra-ACKed max filter: the two windows' maxima, segments.
        pub extra_acked: [u16; 2] { extra_acked_0([0]), extra_acked_1([1]) },
        /// Segments ACKed in the aggregation epoch.
        pub ack_epoch_acked: u32 : 20,
        /// Round trips in the current extra-ACKed window.
        pub extra_acked_win_rtts: u32 : 5,
        /// The current slot of `extra_acked`.
        pub extra_acked_win_idx: usize : 1,
    }
}

/// The BBR algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bbr {
    st: BbrState,
    rng: SplitMix64,
    /// A replay's word on what the next gain-cycle draw must give.
    forced_cycle_idx: Option<u32>,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr::new()
    }
}

impl Bbr {
    /// BBR with the kernel's default parameters.
    pub fn new() -> Bbr {
        Bbr {
            st: BbrState::default(),
            rng: SplitMix64::new(0),
            forced_cycle_idx: None,
        }
    }

    /// The private state, as a trace names its members.
    pub fn state(&self) -> &BbrState {
        &self.st
    }

    fn max_bw(&self) -> u32 {
        self.st.bw.get()
    }

    /// `bbr_bw()`: the policed rate when one is detected, else the max
    /// filter.
    fn bw(&self) -> u32 {
        if self.st.lt_use_bw {
            self.st.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked(&self) -> u32 {
        self.st.extra_acked[0].max(self.st.extra_acked[1]) as u32
    }

    /// `bbr_rate_bytes_per_sec()`: ordered to avoid overflowing u64 up to
    /// 2.9 Tbit/s at 2.89x gain.
    fn rate_bytes_per_sec(sk: &Sock, rate: u64, gain: u32) -> u64 {
        let mut rate = rate.wrapping_mul(sk.mss_cache as u64);
        rate = rate.wrapping_mul(gain as u64);
        rate >>= BBR_SCALE;
        rate = rate.wrapping_mul(1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT));
        rate >> BW_SCALE
    }

    fn bw_to_pacing_rate(sk: &Sock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(sk, bw as u64, gain).min(sk.max_pacing_rate)
    }

    /// `bbr_init_pacing_rate_from_rtt()`: high_gain * init_cwnd / RTT.
    fn init_pacing_rate_from_rtt(&mut self, sk: &mut Sock) {
        let rtt_us = if sk.srtt_us != 0 {
            self.st.has_seen_rtt = true;
            (sk.srtt_us >> 3).max(1)
        } else {
            1000
        };
        let bw = (sk.snd_cwnd as u64 * BW_UNIT) / rtt_us as u64;
        sk.pacing_rate = Self::bw_to_pacing_rate(sk, bw as u32, HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate()`: never lower the rate before the pipe is
    /// known full.
    fn set_pacing_rate(&mut self, sk: &mut Sock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(sk, bw, gain);
        if !self.st.has_seen_rtt && sk.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(sk);
        }
        if self.st.full_bw_reached || rate > sk.pacing_rate {
            sk.pacing_rate = rate;
        }
    }

    /// `bbr_min_tso_segs()`.
    fn min_tso_segs(sk: &Sock) -> u32 {
        if sk.pacing_rate < MIN_TSO_RATE >> 3 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal()`: about a millisecond of data per TSO burst.
    fn tso_segs_goal(sk: &Sock) -> u32 {
        let bytes = (sk.pacing_rate >> sk.pacing_shift)
            .min(GSO_LEGACY_MAX_SIZE as u64 - 1 - MAX_TCP_HEADER) as u32;
        let segs = (bytes / sk.mss_cache.max(1)).max(Self::min_tso_segs(sk));
        segs.min(0x7f)
    }

    /// `bbr_save_cwnd()`.
    fn save_cwnd(&mut self, sk: &Sock) {
        if self.st.prev_ca_state < CaState::Recovery as u8 && self.st.mode != Mode::ProbeRtt {
            self.st.prior_cwnd = sk.snd_cwnd;
        } else {
            self.st.prior_cwnd = self.st.prior_cwnd.max(sk.snd_cwnd);
        }
    }

    /// `bbr_bdp()`: ceil(bw * min_rtt * gain), in packets.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.st.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u64 * self.st.min_rtt_us as u64;
        // The kernel's round-up, whose sum can wrap (div_ceil cannot).
        #[allow(clippy::manual_div_ceil)]
        let bdp =
            ((w.wrapping_mul(gain as u64) >> BBR_SCALE).wrapping_add(BW_UNIT - 1) / BW_UNIT) as u32;
        bdp
    }

    /// `bbr_quantization_budget()`: room for TSO bursts at both ends, an
    /// even cwnd, and a little more when probing.
    fn quantization_budget(&self, sk: &Sock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.wrapping_add(3 * Self::tso_segs_goal(sk));
        cwnd = cwnd.wrapping_add(1) & !1;
        if self.st.mode == Mode::ProbeBw && self.st.cycle_idx == 0 {
            cwnd = cwnd.wrapping_add(2);
        }
        cwnd
    }

    fn inflight(&self, sk: &Sock, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(sk, self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt()`: inflight when the next packet leaves,
    /// net of what the bottleneck delivers meanwhile.
    fn packets_in_net_at_edt(&self, sk: &Sock, inflight_now: u32) -> u32 {
        let now_ns = sk.tcp_clock_cache;
        let edt_ns = sk.tcp_wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = ((self.bw() as u64).wrapping_mul(interval_us) >> BW_SCALE) as u32;
        let mut at_edt = inflight_now;
        if self.st.pacing_gain > BBR_UNIT {
            at_edt = at_edt.wrapping_add(Self::tso_segs_goal(sk));
        }
        at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd()`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.st.full_bw_reached {
            return 0;
        }
        let max_aggr = ((self.bw() as u64 * EXTRA_ACKED_MAX_US) / BW_UNIT) as u32;
        let aggr = (EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE;
        aggr.min(max_aggr)
    }

    /// `bbr_set_cwnd_to_recover_or_restore()`: packet conservation in the
    /// first round of recovery, restore the saved cwnd after it.
    fn recover_or_restore(&mut self, sk: &Sock, rs: &RateSample, acked: u32) -> (bool, u32) {
        let prev = self.st.prev_ca_state;
        let state = sk.icsk_ca_state as u8;
        let mut cwnd = sk.snd_cwnd;
        if rs.losses > 0 {
            cwnd = (cwnd as i32).wrapping_sub(rs.losses).max(1) as u32;
        }
        let in_flight = sk.packets_in_flight();
        if state == CaState::Recovery as u8 && prev != CaState::Recovery as u8 {
            self.st.packet_conservation = true;
            self.st.next_rtt_delivered = sk.delivered;
            cwnd = in_flight.wrapping_add(acked);
        } else if prev >= CaState::Recovery as u8 && state < CaState::Recovery as u8 {
            cwnd = cwnd.max(self.st.prior_cwnd);
            self.st.packet_conservation = false;
        }
        self.st.prev_ca_state = state;
        if self.st.packet_conservation {
            return (true, cwnd.max(in_flight.wrapping_add(acked)));
        }
        (false, cwnd)
    }

    /// `bbr_set_cwnd()`: slow-start toward the target, or snap down to it.
    fn set_cwnd(&mut self, sk: &mut Sock, rs: &RateSample, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = sk.snd_cwnd;
        if acked != 0 {
            let (conserving, c) = self.recover_or_restore(sk, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target = target.wrapping_add(self.ack_aggregation_cwnd());
                target = self.quantization_budget(sk, target);
                if self.st.full_bw_reached {
                    cwnd = cwnd.wrapping_add(acked).min(target);
                } else if cwnd < target || sk.delivered < TCP_INIT_CWND {
                    cwnd = cwnd.wrapping_add(acked);
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        sk.snd_cwnd = cwnd.min(sk.snd_cwnd_clamp);
        if self.st.mode == Mode::ProbeRtt {
            sk.snd_cwnd = sk.snd_cwnd.min(CWND_MIN_TARGET);
        }
    }

    /// `bbr_is_next_cycle_phase()`.
    fn is_next_cycle_phase(&self, sk: &Sock, rs: &RateSample) -> bool {
        let is_full_length =
            stamp_us_delta(sk.delivered_mstamp, self.st.cycle_mstamp) > self.st.min_rtt_us;
        if self.st.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(sk, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.st.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses != 0 || inflight >= self.inflight(sk, bw, self.st.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(sk, bw, BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self, sk: &Sock) {
        self.st.cycle_idx = (self.st.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.st.cycle_mstamp = sk.delivered_mstamp;
    }

    fn update_cycle_phase(&mut self, sk: &Sock, rs: &RateSample) {
        if self.st.mode == Mode::ProbeBw && self.is_next_cycle_phase(sk, rs) {
            self.advance_cycle_phase(sk);
        }
    }

    /// `bbr_reset_probe_bw_mode()`: a random phase, never the drain phase.
    fn reset_probe_bw_mode(&mut self, sk: &Sock) {
        self.st.mode = Mode::ProbeBw;
        self.st.cycle_idx = match self.forced_cycle_idx.take() {
            // The phase after the draw must come out as the trace says.
            Some(after) => after.wrapping_sub(1) & (CYCLE_LEN - 1),
            None => CYCLE_LEN - 1 - (self.rng.next_u64() % CYCLE_RAND as u64) as u32,
        };
        self.advance_cycle_phase(sk);
    }

    fn reset_mode(&mut self, sk: &Sock) {
        if !self.st.full_bw_reached {
            self.st.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode(sk);
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self, sk: &Sock) {
        self.st.lt_last_stamp = (sk.delivered_mstamp / 1000) as u32;
        self.st.lt_last_delivered = sk.delivered;
        self.st.lt_last_lost = sk.lost;
        self.st.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, sk: &Sock) {
        self.st.lt_bw = 0;
        self.st.lt_use_bw = false;
        self.st.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(sk);
    }

    /// `bbr_lt_bw_interval_done()`: two consistent lossy intervals mean a
    /// policer; use their average.
    fn lt_bw_interval_done(&mut self, sk: &Sock, bw: u32) {
        if self.st.lt_bw != 0 {
            // The kernel's abs() of a u32 difference reads it as an s32.
            let diff = (bw.wrapping_sub(self.st.lt_bw) as i32).unsigned_abs();
            if diff.wrapping_mul(BBR_UNIT) <= LT_BW_RATIO.wrapping_mul(self.st.lt_bw)
                || Self::rate_bytes_per_sec(sk, diff as u64, BBR_UNIT) <= LT_BW_DIFF
            {
                self.st.lt_bw = ((bw as u64 + self.st.lt_bw as u64) >> 1) as u32;
                self.st.lt_use_bw = true;
                self.st.pacing_gain = BBR_UNIT;
                self.st.lt_rtt_cnt = 0;
                return;
            }
        }
        self.st.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(sk);
    }

    /// `bbr_lt_bw_sampling()`.
    fn lt_bw_sampling(&mut self, sk: &Sock, rs: &RateSample) {
        if self.st.lt_use_bw {
            if self.st.mode == Mode::ProbeBw && self.st.round_start {
                self.st.lt_rtt_cnt = (self.st.lt_rtt_cnt + 1) & 0x7f;
                if self.st.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(sk);
                    self.reset_probe_bw_mode(sk);
                }
            }
            return;
        }
        if !self.st.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(sk);
            self.st.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(sk);
            return;
        }
        if self.st.round_start {
            self.st.lt_rtt_cnt = (self.st.lt_rtt_cnt + 1) & 0x7f;
        }
        if self.st.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.st.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(sk);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = sk.lost.wrapping_sub(self.st.lt_last_lost);
        let delivered = sk.delivered.wrapping_sub(self.st.lt_last_delivered);
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH.wrapping_mul(delivered) {
            return;
        }
        let t = ((sk.delivered_mstamp / 1000) as u32).wrapping_sub(self.st.lt_last_stamp);
        if (t as i32) < 1 {
            return;
        }
        if t >= u32::MAX / 1000 {
            self.reset_lt_bw_sampling(sk);
            return;
        }
        let bw = (delivered as u64 * BW_UNIT) / (t as u64 * 1000);
        self.lt_bw_interval_done(sk, bw as u32);
    }

    /// `bbr_update_bw()`: count rounds, sample the delivery rate.
    fn update_bw(&mut self, sk: &Sock, rs: &RateSample) {
        self.st.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if !before(rs.prior_delivered, self.st.next_rtt_delivered) {
            self.st.next_rtt_delivered = sk.delivered;
            self.st.rtt_cnt = self.st.rtt_cnt.wrapping_add(1);
            self.st.round_start = true;
            self.st.packet_conservation = false;
        }
        self.lt_bw_sampling(sk, rs);
        let bw = (rs.delivered as u64 * BW_UNIT) / rs.interval_us as u64;
        if !rs.is_app_limited || bw >= self.max_bw() as u64 {
            let rtt_cnt = self.st.rtt_cnt;
            self.st.bw.running_max(BW_RTTS, rtt_cnt, bw as u32);
        }
    }

    /// `bbr_update_ack_aggregation()`.
    fn update_ack_aggregation(&mut self, sk: &Sock, rs: &RateSample) {
        if rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if self.st.round_start {
            self.st.extra_acked_win_rtts = (self.st.extra_acked_win_rtts + 1).min(0x1f);
            if self.st.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.st.extra_acked_win_rtts = 0;
                self.st.extra_acked_win_idx ^= 1;
                self.st.extra_acked[self.st.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = stamp_us_delta(sk.delivered_mstamp, self.st.ack_epoch_mstamp);
        let mut expected = ((self.bw() as u64 * epoch_us as u64) / BW_UNIT) as u32;
        if self.st.ack_epoch_acked <= expected
            || self.st.ack_epoch_acked.wrapping_add(rs.acked_sacked) >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.st.ack_epoch_acked = 0;
            self.st.ack_epoch_mstamp = sk.delivered_mstamp;
            expected = 0;
        }
        self.st.ack_epoch_acked = self
            .st
            .ack_epoch_acked
            .wrapping_add(rs.acked_sacked)
            .min(0xfffff);
        let extra = self
            .st
            .ack_epoch_acked
            .wrapping_sub(expected)
            .min(sk.snd_cwnd);
        let idx = self.st.extra_acked_win_idx;
        if extra > self.st.extra_acked[idx] as u32 {
            self.st.extra_acked[idx] = extra as u16;
        }
    }

    /// `bbr_check_full_bw_reached()`.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.st.full_bw_reached || !self.st.round_start || rs.is_app_limited {
            return;
        }
        let thresh = ((self.st.full_bw as u64 * FULL_BW_THRESH as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= thresh {
            self.st.full_bw = self.max_bw();
            self.st.full_bw_cnt = 0;
            return;
        }
        self.st.full_bw_cnt = (self.st.full_bw_cnt + 1) & 3;
        self.st.full_bw_reached = self.st.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain()`.
    fn check_drain(&mut self, sk: &mut Sock) {
        if self.st.mode == Mode::Startup && self.st.full_bw_reached {
            self.st.mode = Mode::Drain;
            sk.snd_ssthresh = self.inflight(sk, self.max_bw(), BBR_UNIT);
        }
        if self.st.mode == Mode::Drain
            && self.packets_in_net_at_edt(sk, sk.packets_in_flight())
                <= self.inflight(sk, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(sk);
        }
    }

    /// `bbr_check_probe_rtt_done()`.
    fn check_probe_rtt_done(&mut self, sk: &mut Sock) {
        if !(self.st.probe_rtt_done_stamp != 0 && after(sk.jiffies, self.st.probe_rtt_done_stamp)) {
            return;
        }
        self.st.min_rtt_stamp = sk.jiffies;
        sk.snd_cwnd = sk.snd_cwnd.max(self.st.prior_cwnd);
        self.reset_mode(sk);
    }

    /// `bbr_update_min_rtt()`, and PROBE_RTT.
    fn update_min_rtt(&mut self, sk: &mut Sock, rs: &RateSample) {
        let expired = after(
            sk.jiffies,
            self.st
                .min_rtt_stamp
                .wrapping_add(MIN_RTT_WIN_SEC.wrapping_mul(sk.hz)),
        );
        if rs.rtt_us >= 0
            && (rs.rtt_us < self.st.min_rtt_us as i64 || (expired && !rs.is_ack_delayed))
        {
            self.st.min_rtt_us = rs.rtt_us as u32;
            self.st.min_rtt_stamp = sk.jiffies;
        }
        if expired && !self.st.idle_restart && self.st.mode != Mode::ProbeRtt {
            self.st.mode = Mode::ProbeRtt;
            self.save_cwnd(sk);
            self.st.probe_rtt_done_stamp = 0;
        }
        if self.st.mode == Mode::ProbeRtt {
            // Samples in this mode say little about the path's rate.
            let mark = sk.delivered.wrapping_add(sk.packets_in_flight());
            sk.app_limited = if mark == 0 { 1 } else { mark };
            if self.st.probe_rtt_done_stamp == 0 && sk.packets_in_flight() <= CWND_MIN_TARGET {
                let j = msecs_to_jiffies(PROBE_RTT_MODE_MS, sk.hz);
                self.st.probe_rtt_done_stamp = sk.jiffies.wrapping_add(j);
                self.st.probe_rtt_round_done = false;
                self.st.next_rtt_delivered = sk.delivered;
            } else if self.st.probe_rtt_done_stamp != 0 {
                if self.st.round_start {
                    self.st.probe_rtt_round_done = true;
                }
                if self.st.probe_rtt_round_done {
                    self.check_probe_rtt_done(sk);
                }
            }
        }
        if rs.delivered > 0 {
            self.st.idle_restart = false;
        }
    }

    /// `bbr_update_gains()`.
    fn update_gains(&mut self) {
        let (p, c) = match self.st.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (
                if self.st.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.st.cycle_idx as usize]
                },
                CWND_GAIN,
            ),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.st.pacing_gain = p;
        self.st.cwnd_gain = c;
    }

    fn update_model(&mut self, sk: &mut Sock, rs: &RateSample) {
        self.update_bw(sk, rs);
        self.update_ack_aggregation(sk, rs);
        self.update_cycle_phase(sk, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(sk);
        self.update_min_rtt(sk, rs);
        self.update_gains();
    }
}

const BBR_READS: &[Field] = &[
    Field::snd_cwnd,
    Field::snd_ssthresh,
    Field::snd_cwnd_clamp,
    Field::srtt_us,
    Field::min_rtt_us,
    Field::packets_out,
    Field::sacked_out,
    Field::lost_out,
    Field::retrans_out,
    Field::icsk_ca_state,
    Field::tcp_mstamp,
    Field::tcp_clock_cache,
    Field::tcp_wstamp_ns,
    Field::delivered,
    Field::delivered_mstamp,
    Field::lost,
    Field::app_limited,
    Field::mss_cache,
    Field::pacing_rate,
    Field::max_pacing_rate,
    Field::pacing_status,
    Field::pacing_shift,
    Field::jiffies,
];

impl Declared for Bbr {
    const NAME: &'static str = "bbr";
    const SUMMARY: &'static str =
        "Linux 6.18 BBR v1: model-based, paces at the estimated bottleneck rate";
    type Params = NoParams;

    fn with_params(_: NoParams) -> Bbr {
        Bbr::new()
    }

    fn params(&self) -> &NoParams {
        &NoParams {}
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn set_random_seed(&mut self, seed: u64) {
        self.rng = SplitMix64::new(seed);
    }

    fn init(&mut self, sk: &mut Sock) {
        let s = &mut self.st;
        s.prior_cwnd = 0;
        sk.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        s.rtt_cnt = 0;
        s.next_rtt_delivered = sk.delivered;
        s.prev_ca_state = CaState::Open as u8;
        s.packet_conservation = false;
        s.probe_rtt_done_stamp = 0;
        s.probe_rtt_round_done = false;
        s.min_rtt_us = sk.min_rtt_us;
        s.min_rtt_stamp = sk.jiffies;
        let rtt_cnt = s.rtt_cnt;
        s.bw.reset(rtt_cnt, 0);
        s.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(sk);
        let s = &mut self.st;
        s.round_start = false;
        s.idle_restart = false;
        s.full_bw_reached = false;
        s.full_bw = 0;
        s.full_bw_cnt = 0;
        s.cycle_mstamp = 0;
        s.cycle_idx = 0;
        self.reset_lt_bw_sampling(sk);
        let s = &mut self.st;
        s.mode = Mode::Startup;
        s.ack_epoch_mstamp = sk.tcp_mstamp;
        s.ack_epoch_acked = 0;
        s.extra_acked_win_rtts = 0;
        s.extra_acked_win_idx = 0;
        s.extra_acked = [0, 0];
        if sk.pacing_status == PacingStatus::None {
            sk.pacing_status = PacingStatus::Needed;
        }
    }

    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        self.save_cwnd(sk);
        sk.snd_ssthresh
    }

    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        self.st.full_bw = 0;
        self.st.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(sk);
        sk.snd_cwnd
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        if ev == CaEvent::TxStart && sk.app_limited != 0 {
            self.st.idle_restart = true;
            self.st.ack_epoch_mstamp = sk.tcp_mstamp;
            self.st.ack_epoch_acked = 0;
            // Restarting from idle, app-limited: pace at the estimate.
            if self.st.mode == Mode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(sk, bw, BBR_UNIT);
            } else if self.st.mode == Mode::ProbeRtt {
                self.check_probe_rtt_done(sk);
            }
        }
    }

    fn set_state(&mut self, sk: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..RateSample::default()
            };
            self.st.prev_ca_state = CaState::Loss as u8;
            self.st.full_bw = 0;
            self.st.round_start = true;
            self.lt_bw_sampling(sk, &rs);
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_main()`.
    fn cong_control(&mut self, sk: &mut Sock, _ack: u32, _flag: u32, rs: &RateSample) {
        self.update_model(sk, rs);
        let bw = self.bw();
        let gain = self.st.pacing_gain;
        self.set_pacing_rate(sk, bw, gain);
        let cwnd_gain = self.st.cwnd_gain;
        self.set_cwnd(sk, rs, rs.acked_sacked, bw, cwnd_gain);
    }

    fn visit_ca(&self, visit: CaVisitor<'_>) {
        self.st.visit(visit)
    }

    fn set_ca(&mut self, name: &str, cell: i64) -> bool {
        self.st.set(name, cell)
    }

    fn drawn_at_random(&self) -> &'static [&'static str] {
        &["cycle_idx"]
    }

    fn expect_random(&mut self, name: &str, value: i64) {
        if name == "cycle_idx" {
            self.forced_cycle_idx = Some((value & 7) as u32);
        }
    }

    fn reads(&self) -> &'static [Field] {
        BBR_READS
    }
}
