//! CUBIC: window growth as a cubic function of time since the last loss.
//!
//! Ha, Rhee and Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant"
//! (ACM SIGOPS OSR, 2008); RFC 8312, RFC 9438. This is a bit-exact port of
//! `net/ipv4/tcp_cubic.c` as of Linux 6.18, the kernel's default algorithm.
//!
//! After a loss at window W_max the window is cut to beta * W_max (beta =
//! 717/1024, about 0.7) and then follows
//!
//! ```text
//!     W(t) = C * (t - K)^3 + W_max,     K = cbrt(W_max * (1 - beta) / C)
//! ```
//!
//! concave up to the old maximum, flat near it, convex beyond: fast recovery
//! of lost ground, caution where the last loss happened, then probing. C is
//! `bic_scale / 1024` (0.4) and t is measured on the jiffies clock from the
//! first ACK of the epoch. The kernel never computes W(t) in floating point:
//! it turns the target into `cnt`, the number of ACKed segments per one
//! segment of growth, and lets [`crate::aimd::tcp_cong_avoid_ai`] apply it.
//! The arithmetic:
//!
//! - time is in units of 1/1024 s (`BICTCP_HZ`), so that `(t - K)^3` fits
//!   in 64 bits for windows below a million segments;
//! - `cube_rtt_scale = bic_scale * 10` and
//!   `cube_factor = 2^40 / (bic_scale * 10)` fold C, the 1/1024 s time unit
//!   and a nominal 100 ms RTT into integer constants;
//! - the cube root is a 64-entry table lookup plus one Newton-Raphson step
//!   (average error 0.195%), exactly as [`cubic_root`] computes it.
//!
//! Around the curve:
//!
//! - **TCP friendliness**: CUBIC should never be slower than Reno would be.
//!   Linux estimates Reno's window by counting ACKs (`ack_cnt`, `tcp_cwnd`)
//!   at Reno's AIMD-equivalent rate `3(1-beta)/(1+beta)` and caps `cnt` so
//!   that cwnd keeps up with it. Two other estimators from the seeds can be
//!   chosen with `friendly=` (see [`Friendly`]).
//! - **Fast convergence**: a loss below the previous W_max means a new flow
//!   is taking its share, so remember a lower W_max ((1+beta)/2 of cwnd).
//! - **HyStart** ends the initial slow start on an ACK train or an RTT rise
//!   ([`crate::hystart`]); `hystart=hspp` uses HyStart++ instead.
//! - **Idle**: after an application-limited pause the epoch start is moved
//!   forward by the idle time, so the curve does not jump.
//! - `cnt` is never below 2: cwnd grows by at most 50% per round trip.
//!
//! Where this file departs from the kernel (only where the kernel would hang
//! or is ambiguous), docs/ALGORITHMS.md says so.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::aimd::{reads, tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start, AIMD_READS};
pub use crate::hystart::SlowStartExit;
use crate::hystart::{Hystart, HystartConfig};
use crate::hystart_pp::HystartPP;
use crate::ops::{AckSample, CaEvent, CaVisitor, CongestionControl};
use crate::params::{flag_value, param_enum, params, Params, Token};
use crate::registry::Declared;
use crate::sock::{after, usecs_to_jiffies, CaState, Field, Sock};
use crate::state::{private_state, PrivateState};

/// `BICTCP_BETA_SCALE`: beta is a fraction of 1024.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: CUBIC's own time unit is 2^-10 s.
pub const BICTCP_HZ: u32 = 10;

/// The 64-entry seed table of [`cubic_root`]: for x in 0..64,
/// `v[x] = cbrt(x << 18) - 1`, hand-refined (Willy Tarreau), so that
/// `cbrt(x) = (v[x] + 10) >> 6`.
const CBRT_TABLE: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, //
    123, 129, 134, 138, 143, 147, 151, 156, //
    157, 161, 164, 168, 170, 173, 176, 179, //
    181, 185, 187, 190, 192, 194, 197, 199, //
    200, 202, 204, 206, 209, 211, 213, 215, //
    217, 219, 221, 222, 224, 225, 227, 229, //
    231, 232, 234, 236, 237, 239, 240, 242, //
    244, 245, 246, 248, 250, 251, 252, 254, //
];

/// `fls64()`: the 1-based index of the most significant set bit, 0 for 0.
fn fls64(a: u64) -> u32 {
    64 - a.leading_zeros()
}

/// `cubic_root()`: the integer cube root of `a` by table lookup and one
/// Newton-Raphson step, `x' = (2x + a / x^2) / 3` (with `x(x-1)` for `x^2`
/// and `* 341 >> 10` for `/ 3`, as the kernel writes it).
pub fn cubic_root(a: u64) -> u32 {
    let b = fls64(a);
    if b < 7 {
        // a in 0..64: the table alone.
        return (CBRT_TABLE[a as usize] as u32 + 35) >> 6;
    }
    // b * 84 >> 8 is b / 3 (approximately): the cube root's bit length.
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as u32;
    let x = ((CBRT_TABLE[shift as usize] as u32 + 10) << b) >> 6;
    // x >= 4 here (a >= 64), so x * (x - 1) is never zero.
    let x = (2u32.wrapping_mul(x)).wrapping_add((a / ((x as u64) * ((x - 1) as u64))) as u32);
    x.wrapping_mul(341) >> 10
}

param_enum! {
    /// How CUBIC estimates the window Reno would have (the TCP-friendly
    /// region); the numbers are cubic.bpf.c's `FRIENDLY_*`.
    pub enum Friendly {
        /// Linux: count ACKs; Reno's window grows one segment per
        /// `cwnd * beta_scale / 8` ACKed segments, i.e. at `3(1-beta)/(1+beta)`
        /// segments per round trip.
        #[default]
        Linux = 0 => "linux",
        /// RFC 8312 Eq. 4 as stock FreeBSD computed it before review D46546:
        /// `W_est = W_max * beta + 3(1-beta)/(1+beta) * t / RTT`, with the
        /// elapsed time t and the RTT both counted in whole ticks of the jiffies
        /// clock, the RTT at least one tick. On a coarse clock (HZ=100) and a
        /// sub-millisecond path the RTT reads as 10 ms and W_est barely grows:
        /// the throughput collapse seed 001 reports.
        Eq4 = 1 => "eq4",
        /// FreeBSD after D46546: emulate NewReno's AIMD (one segment per window
        /// of ACKed segments, alpha = 1) from the window at the start of the
        /// epoch, by counting ACKs. Needs no clock at all.
        NewReno = 2 => "newreno",
        /// No friendliness (the kernel's `tcp_friendliness=0`).
        Off = 3 => "off",
    }
}

/// CUBIC's `hystart`: the kernel's `0|1`, also `on|off`, `linux`, and
/// `hspp` for HyStart++.
fn slow_start_exit(v: &str) -> Option<SlowStartExit> {
    match v {
        "hspp" => Some(SlowStartExit::HystartPP),
        "linux" => Some(SlowStartExit::Linux),
        _ => flag_value(v).map(|on| {
            if on {
                SlowStartExit::Linux
            } else {
                SlowStartExit::Off
            }
        }),
    }
}

params! {
    /// CUBIC's parameters: the kernel's module parameters, per instance, plus
    /// the `friendly` estimator and the `hystart=hspp` choice.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CubicParams {
        /// Slow-start exit.
        hystart: SlowStartExit {
            default: SlowStartExit::Linux,
            parse: slow_start_exit,
            help: "slow-start exit: Linux HyStart (on, default), none, or HyStart++ (RFC 9406)",
            token: Token::Values(&[("off", "nohs"), ("hspp", "hspp")]),
        },
        /// TCP-friendliness estimator.
        friendly: Friendly {
            default: Friendly::Linux,
            help: "TCP-friendly estimator: Linux ACK counting (default), RFC 8312 Eq. 4 on the jiffies clock, FreeBSD NewReno emulation, none",
            token: Token::Values(&[("off", "nofr"), ("eq4", "eq4"), ("newreno", "nr")]),
        },
        /// Multiplicative decrease, /1024 (default 717, about 0.7).
        beta: u32 {
            default: 717,
            range: 1..=1023,
            help: "multiplicative decrease, /1024 (default 717)",
            token: Token::Prefix("b"),
        },
        /// Remember a lower W_max when losses come below the last one.
        fast_convergence: bool {
            default: true,
            help: "lower W_max when a loss comes below the previous one (default 1)",
            token: Token::Values(&[("0", "nofc")]),
        },
        /// The cubic coefficient: C = bic_scale * 10 / 1024 segments/s^3
        /// (default 41, C = 0.4).
        bic_scale: u32 {
            default: 41,
            range: 1..=1023,
            help: "cubic coefficient C, /1024 after the kernel's scaling (default 41)",
            token: Token::Prefix("c"),
        },
        /// ssthresh at init when HyStart is off (0: leave it infinite).
        initial_ssthresh: u32 {
            default: 0,
            range: 0..=2147483647,
            help: "ssthresh at start when hystart=off (default 0: infinite)",
            token: Token::Prefix("is"),
        },
        /// The kernel's switch, printed through `friendly`.
        tcp_friendliness: bool => friendly {
            map: |on| if on { Friendly::Linux } else { Friendly::Off },
            help: "the kernel's switch: 0 is friendly=off, 1 is friendly=linux",
        },
        /// Linux HyStart's detectors ([`HystartConfig::detect`]).
        hystart_detect: u32 {
            default: HystartConfig::DEFAULT.detect as u32,
            range: 1..=3,
            help: "HyStart detectors: 1 ACK train, 2 delay, 3 both (default 3)",
            token: Token::Prefix("hd"),
        },
        /// [`HystartConfig::low_window`].
        hystart_low_window: u32 {
            default: HystartConfig::DEFAULT.low_window,
            help: "cwnd below which HyStart does not judge (default 16)",
            token: Token::Prefix("lw"),
        },
        /// [`HystartConfig::ack_delta_us`].
        hystart_ack_delta_us: u32 {
            default: HystartConfig::DEFAULT.ack_delta_us,
            range: 0..=2147483647,
            help: "ACK spacing that forms a train, us (default 2000)",
            token: Token::Prefix("ad"),
        },
    }
}

impl CubicParams {
    /// Linux HyStart's tunables.
    pub fn hystart_cfg(&self) -> HystartConfig {
        HystartConfig {
            // 1..=3, as the spec checks.
            detect: self.hystart_detect as u8,
            low_window: self.hystart_low_window,
            ack_delta_us: self.hystart_ack_delta_us,
        }
    }
}

/// The scale factors `cubictcp_register()` precomputes from the parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scales {
    /// Reno's AIMD-equivalent growth, as ACKs per segment * 8 / cwnd:
    /// `8 * (1024 + beta) / 3 / (1024 - beta)` (15 for beta = 717).
    pub beta_scale: u32,
    /// `bic_scale * 10`: C over the nominal 100 ms RTT, /1024.
    pub cube_rtt_scale: u32,
    /// `2^40 / (bic_scale * 10)`: turns (W_max - cwnd) into K^3 in
    /// 2^-10 s units.
    pub cube_factor: u64,
    /// Eq. 4's `3(1-beta)/(1+beta)` in 1/1024 units (541 for beta = 717).
    pub alpha_eq4: u32,
}

impl Scales {
    /// The constants `bictcp_init()`'s module setup derives from the
    /// parameters.
    pub fn new(p: &CubicParams) -> Scales {
        Scales {
            beta_scale: 8 * (BICTCP_BETA_SCALE + p.beta) / 3 / (BICTCP_BETA_SCALE - p.beta),
            cube_rtt_scale: p.bic_scale * 10,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / (p.bic_scale as u64 * 10),
            alpha_eq4: 3 * (BICTCP_BETA_SCALE - p.beta) * BICTCP_BETA_SCALE
                / (BICTCP_BETA_SCALE + p.beta),
        }
    }
}

private_state! {
    /// The kernel's `struct bictcp`, less the HyStart members (in [`Hystart`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[allow(non_snake_case)]
    pub struct Bictcp {
        /// ACKed segments per one segment of cwnd growth.
        pub cnt: u32,
        /// W_max: cwnd at the last loss (lowered by fast convergence).
        pub last_max_cwnd: u32,
        /// cwnd when `cnt` was last computed.
        pub last_cwnd: u32,
        /// jiffies when `cnt` was last computed.
        pub last_time: u32,
        /// The window the cubic function plateaus at (W_max, or cwnd if above).
        pub bic_origin_point: u32,
        /// K: time from epoch start to the plateau, 2^-10 s.
        pub bic_K: u32,
        /// Minimum RTT seen, microseconds.
        pub delay_min: u32,
        /// jiffies at the first ACK of the epoch (0: no epoch).
        pub epoch_start: u32,
        /// ACKed segments not yet credited to `tcp_cwnd`.
        pub ack_cnt: u32,
        /// The estimated Reno window, segments.
        pub tcp_cwnd: u32,
    }
}

/// The CUBIC algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cubic {
    params: CubicParams,
    scales: Scales,
    ca: Bictcp,
    hystart: Hystart,
    hspp: HystartPP,
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic::new(CubicParams::default())
    }
}

impl Cubic {
    /// CUBIC with parameters `params`.
    pub fn new(params: CubicParams) -> Cubic {
        Cubic {
            scales: Scales::new(&params),
            params,
            ca: Bictcp::default(),
            hystart: Hystart::default(),
            hspp: HystartPP::default(),
        }
    }

    /// The constants derived from the parameters.
    pub fn scales(&self) -> &Scales {
        &self.scales
    }

    /// The private state, for tests and tools.
    pub fn state(&self) -> &Bictcp {
        &self.ca
    }

    /// HyStart's state (Linux's, in the private struct).
    pub fn hystart_state(&self) -> &Hystart {
        &self.hystart
    }

    /// HyStart++'s state (RFC 9406), when the spec chose it.
    pub fn hystart_pp_state(&self) -> &HystartPP {
        &self.hspp
    }

    /// `bictcp_reset()`: forget the epoch and W_max (HyStart's round
    /// bookkeeping survives; only `found` is cleared).
    fn reset(&mut self) {
        self.ca = Bictcp::default();
        self.hystart.found = 0;
    }

    /// `bictcp_update()`: recompute `cnt` for the current cwnd.
    fn update(&mut self, sk: &Sock, cwnd: u32, acked: u32) {
        let now = sk.jiffies;
        self.ca.ack_cnt = self.ca.ack_cnt.wrapping_add(acked);

        // Nothing changed and the last computation is recent (1/32 s): the
        // kernel skips everything, friendliness included, which on
        // sub-millisecond paths holds the friendly window back for dozens of
        // round trips. FreeBSD evaluates its estimate on every ACK, so its
        // two estimators do here too; only the cubic function is held.
        let hold = self.ca.last_cwnd == cwnd
            && (now.wrapping_sub(self.ca.last_time) as i32) <= (sk.hz / 32) as i32;
        if hold && matches!(self.params.friendly, Friendly::Linux | Friendly::Off) {
            return;
        }
        // The cubic function is evaluated at most once per jiffy; any cwnd
        // reduction clears epoch_start and forces a recomputation.
        if !hold && (self.ca.epoch_start == 0 || now != self.ca.last_time) {
            self.ca.last_cwnd = cwnd;
            self.ca.last_time = now;
            if self.ca.epoch_start == 0 {
                self.start_epoch(now, cwnd, acked);
            }
            self.ca.cnt = self.cubic_cnt(sk, now, cwnd);
        }
        self.apply_friendliness(sk, now, cwnd);
        // At most one segment of growth per two ACKed: 1.5x per round trip.
        self.ca.cnt = self.ca.cnt.max(2);
    }

    /// A new epoch starts at the first ACK in congestion avoidance after a
    /// reduction: fix K and the origin of the cubic function.
    fn start_epoch(&mut self, now: u32, cwnd: u32, acked: u32) {
        let ca = &mut self.ca;
        ca.epoch_start = now;
        ca.ack_cnt = acked;
        ca.tcp_cwnd = cwnd;
        if ca.last_max_cwnd <= cwnd {
            ca.bic_K = 0;
            ca.bic_origin_point = cwnd;
        } else {
            // K = cbrt((W_max - cwnd) * rtt / C) in 2^-10 s.
            let gap = ca.last_max_cwnd.wrapping_sub(cwnd) as u64;
            ca.bic_K = cubic_root(self.scales.cube_factor.wrapping_mul(gap));
            ca.bic_origin_point = ca.last_max_cwnd;
        }
    }

    /// The cubic function's `cnt`: ACKs per segment to reach the target
    /// W(t + min RTT) within one round trip.
    fn cubic_cnt(&self, sk: &Sock, now: u32, cwnd: u32) -> u32 {
        let ca = &self.ca;
        // t in 2^-10 s, one min RTT ahead; the s32 elapsed time is
        // sign-extended into the u64 as in C.
        let mut t = (now.wrapping_sub(ca.epoch_start) as i32) as i64 as u64;
        t = t.wrapping_add(usecs_to_jiffies(ca.delay_min, sk.hz));
        t <<= BICTCP_HZ;
        t /= sk.hz as u64;

        let k = ca.bic_K as u64;
        let offs = k.abs_diff(t);
        // C/rtt * (t - K)^3, in segments.
        let delta = ((self.scales.cube_rtt_scale as u64)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            >> (10 + 3 * BICTCP_HZ)) as u32;
        let target = if t < k {
            ca.bic_origin_point.wrapping_sub(delta)
        } else {
            ca.bic_origin_point.wrapping_add(delta)
        };

        let mut cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            // At or above the target: grow very slowly.
            100u32.wrapping_mul(cwnd)
        };
        // Before the first loss the curve knows nothing of the path:
        // grow at least 5% per round trip.
        if ca.last_max_cwnd == 0 && cnt > 20 {
            cnt = 20;
        }
        cnt
    }

    /// Caps `cnt` so that cwnd grows at least as fast as the estimated Reno
    /// window `tcp_cwnd`.
    fn apply_friendliness(&mut self, sk: &Sock, now: u32, cwnd: u32) {
        match self.params.friendly {
            Friendly::Off => return,
            Friendly::Linux => self.count_reno_acks(cwnd),
            Friendly::NewReno => self.emulate_newreno(),
            Friendly::Eq4 => self.estimate_eq4(sk, now),
        }
        let ca = &mut self.ca;
        if ca.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (ca.tcp_cwnd - cwnd);
            if ca.cnt > max_cnt {
                ca.cnt = max_cnt;
            }
        }
    }

    /// Linux: Reno gains one segment per `cwnd * beta_scale / 8` ACKs.
    fn count_reno_acks(&mut self, cwnd: u32) {
        let ca = &mut self.ca;
        let delta = cwnd.wrapping_mul(self.scales.beta_scale) >> 3;
        // The kernel's `while (ack_cnt > delta) { ack_cnt -= delta;
        // tcp_cwnd++; }` in closed form. With delta == 0 the kernel would
        // spin forever; we leave the counters alone instead.
        if delta != 0 && ca.ack_cnt > delta {
            let n = (ca.ack_cnt - 1) / delta;
            ca.ack_cnt -= n * delta;
            ca.tcp_cwnd = ca.tcp_cwnd.wrapping_add(n);
        }
    }

    /// FreeBSD D46546: NewReno's window, one segment per window of ACKs.
    fn emulate_newreno(&mut self) {
        let ca = &mut self.ca;
        let w = ca.tcp_cwnd.max(1);
        if ca.ack_cnt >= w {
            let n = ca.ack_cnt / w;
            ca.ack_cnt -= n * w;
            ca.tcp_cwnd = ca.tcp_cwnd.wrapping_add(n);
        }
    }

    /// RFC 8312 Eq. 4 on the jiffies clock, as stock FreeBSD computed it.
    fn estimate_eq4(&mut self, sk: &Sock, now: u32) {
        let ca = &mut self.ca;
        let t_ticks = (now.wrapping_sub(ca.epoch_start) as i32).max(0) as u64;
        // The RTT as a tick-based measurement sees it: at least one tick.
        let rtt_ticks = usecs_to_jiffies(sk.srtt_us >> 3, sk.hz).max(1);
        let w_max_beta = ca.last_max_cwnd as u64 * self.params.beta as u64;
        let growth = self.scales.alpha_eq4 as u64 * t_ticks / rtt_ticks;
        let w_est = (w_max_beta + growth) >> 10;
        ca.tcp_cwnd = w_est.min(u32::MAX as u64) as u32;
    }

    /// `cubictcp_acked` minus the HyStart part: track the minimum RTT.
    fn track_delay_min(&mut self, sk: &Sock, rtt_us: i32) -> Option<u32> {
        if rtt_us < 0 {
            return None;
        }
        // Delay samples right after fast recovery are inflated by the queue
        // that caused the loss: skip the first second of an epoch.
        if self.ca.epoch_start != 0
            && (sk.jiffies.wrapping_sub(self.ca.epoch_start) as i32) < sk.hz as i32
        {
            return None;
        }
        let delay = (rtt_us as u32).max(1);
        if self.ca.delay_min == 0 || self.ca.delay_min > delay {
            self.ca.delay_min = delay;
        }
        Some(delay)
    }
}

const CUBIC_READS: &[Field] = reads!(
    AIMD_READS,
    &[
        Field::snd_una,
        Field::snd_nxt,
        Field::lsndtime,
        Field::tcp_mstamp,
        Field::pacing_rate,
        Field::pacing_status,
        Field::gso_max_size,
        Field::jiffies,
    ]
);

/// Eq. 4 reads the smoothed RTT besides.
const CUBIC_EQ4_READS: &[Field] = reads!(CUBIC_READS, &[Field::srtt_us]);

impl Declared for Cubic {
    const NAME: &'static str = "cubic";
    const SUMMARY: &'static str =
        "Linux 6.18 CUBIC with HyStart, bit-exact; FreeBSD friendly-region variants";
    type Params = CubicParams;

    fn with_params(params: CubicParams) -> Cubic {
        Cubic::new(params)
    }

    fn params(&self) -> &CubicParams {
        &self.params
    }

    /// Parameters the kernel takes but does not use with the slow-start
    /// exit chosen: `cubictcp_init()` sets `initial_ssthresh` only when
    /// HyStart is off, and the `hystart_*` tunables are Linux HyStart's
    /// (HyStart++ has RFC 9406's constants).
    fn warnings(p: &CubicParams) -> Vec<String> {
        let exit = p.get("hystart");
        let mut w = Vec::new();
        if p.initial_ssthresh != 0 && p.hystart != SlowStartExit::Off {
            w.push(format!(
                "cubic's initial_ssthresh={} has no effect with hystart={exit}: the kernel \
                 sets it at init only when HyStart is off; add hystart=off to use it",
                p.initial_ssthresh
            ));
        }
        if p.hystart != SlowStartExit::Linux {
            let d = CubicParams::default();
            for key in [
                "hystart_detect",
                "hystart_low_window",
                "hystart_ack_delta_us",
            ] {
                if p.get(key) != d.get(key) {
                    w.push(format!(
                        "cubic's {key}={} has no effect with hystart={exit}: it tunes Linux \
                         HyStart (hystart=on) only",
                        p.get(key)
                    ));
                }
            }
        }
        w
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn init(&mut self, sk: &mut Sock) {
        self.reset();
        self.hspp = HystartPP::default();
        match self.params.hystart {
            SlowStartExit::Linux => self.hystart.start_round(sk),
            SlowStartExit::Off if self.params.initial_ssthresh != 0 => {
                sk.snd_ssthresh = self.params.initial_ssthresh
            }
            _ => {}
        }
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        if ev != CaEvent::TxStart {
            return;
        }
        // Idle (application-limited) for a while: shift the epoch so the
        // curve resumes where it left off.
        let now = sk.jiffies;
        let delta = now.wrapping_sub(sk.lsndtime) as i32;
        if self.ca.epoch_start != 0 && delta > 0 {
            self.ca.epoch_start = self.ca.epoch_start.wrapping_add(delta as u32);
            if after(self.ca.epoch_start, now) {
                self.ca.epoch_start = now;
            }
        }
    }

    fn cong_avoid(&mut self, sk: &mut Sock, _ack: u32, acked: u32) {
        if !sk.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if sk.in_slow_start() {
            acked = match self.params.hystart {
                SlowStartExit::HystartPP => self.hspp.slow_start(sk, acked),
                _ => tcp_slow_start(sk, acked),
            };
            if acked == 0 {
                return;
            }
        }
        let cwnd = sk.snd_cwnd;
        self.update(sk, cwnd, acked);
        tcp_cong_avoid_ai(sk, self.ca.cnt, acked);
    }

    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        let cwnd = sk.snd_cwnd;
        let beta = self.params.beta;
        self.ca.epoch_start = 0;
        self.hspp.on_loss();
        self.ca.last_max_cwnd = if cwnd < self.ca.last_max_cwnd && self.params.fast_convergence {
            cwnd.wrapping_mul(BICTCP_BETA_SCALE + beta) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        (cwnd.wrapping_mul(beta) / BICTCP_BETA_SCALE).max(2)
    }

    fn set_state(&mut self, sk: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart.start_round(sk);
        }
    }

    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        let delay = self.track_delay_min(sk, sample.rtt_us);
        match self.params.hystart {
            SlowStartExit::Off => {}
            SlowStartExit::Linux => {
                if let Some(delay) = delay {
                    if self.hystart.found == 0 && sk.in_slow_start() {
                        let cfg = self.params.hystart_cfg();
                        self.hystart.update(&cfg, sk, self.ca.delay_min, delay);
                    }
                }
            }
            SlowStartExit::HystartPP => {
                let rtt = u32::try_from(sample.rtt_us).ok().map(|r| r.max(1));
                self.hspp.on_ack(sk, rtt);
            }
        }
    }

    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        tcp_reno_undo_cwnd(sk)
    }

    /// `struct bictcp`'s members, HyStart's among them, then HyStart++'s
    /// when it runs.
    fn visit_ca(&self, visit: CaVisitor<'_>) {
        self.ca.visit(visit);
        self.hystart.visit(visit);
        if self.params.hystart == SlowStartExit::HystartPP {
            self.hspp.visit(visit);
        }
    }

    fn set_ca(&mut self, name: &str, cell: i64) -> bool {
        self.ca.set(name, cell) || self.hystart.set(name, cell) || self.hspp.set(name, cell)
    }

    fn reads(&self) -> &'static [Field] {
        if self.params.friendly == Friendly::Eq4 {
            CUBIC_EQ4_READS
        } else {
            CUBIC_READS
        }
    }
}
