//! CDG: CAIA Delay-Gradient congestion control.
//!
//! Hayes and Armitage, "Revisiting TCP congestion control using delay
//! gradients", IFIP Networking 2011; a port of Linux 6.18
//! `net/ipv4/tcp_cdg.c` (Kenneth Klette Jonassen, seed 002).
//!
//! Once per round trip CDG takes the smallest and largest RTT it saw and
//! compares them with the previous round's: the differences (gradients),
//! summed over a moving window of `window` rounds, say whether a queue is
//! building. A positive gradient g (µs per window) triggers a backoff with
//! probability
//!
//! ```text
//!     P = 1 - exp(-g * backoff_factor / 10^6)     (backoff_factor = 1000 / (G * window))
//! ```
//!
//! to `backoff_beta` (0.7) of the window, so that flows sharing a queue do
//! not all back off at once. Between backoffs growth is Reno's. Three
//! heuristics let it coexist with loss-based flows: a backoff that did not
//! shrink the RTT several times running is ineffectual and stops being taken
//! (`use_ineff`); a shadow window remembers what backoffs gave up, so that
//! a later loss halves that rather than the reduced window (`use_shadow`);
//! and losses while the queue is not full are tolerated (`use_tolerance`).
//! Slow start ends by its own HyStart (ACK trains on the µs clock, RTT
//! minima behind a delayed-ACK filter).
//!
//! The random draw comes from a seeded generator ([`CongestionControl::
//! set_random_seed`]); a replay forces its outcome from the trace.
//!
//! A backoff enters CWR. `cwr=kernel` (the default) is Linux's
//! `tcp_enter_cwr()`: the core's CWR state, which PRR brings down to
//! ssthresh over a round trip. `cwr=own` is the CWR the BPF port
//! (crates/kernel/src/bpf/cdg.bpf.c) keeps itself, since a program can
//! neither call `tcp_enter_cwr()` nor write what it sets: cwnd cut to
//! ssthresh at once, growth held until an ACK passes the backoff's
//! `snd_nxt`, then what `tcp_end_cwnd_reduction()` does. It is here so that
//! traces of the port replay and the simulator can show what it changes.

use alloc::vec;
use alloc::vec::Vec;

use crate::aimd::{reads, tcp_reno_cong_avoid, tcp_reno_undo_cwnd, AIMD_READS};
use crate::minmax::min_not_zero;
use crate::ops::{AckSample, CaEvent, CaVisitor, CongestionControl};
use crate::params::{param_enum, params, Token};
use crate::rand::SplitMix64;
use crate::registry::Declared;
use crate::sock::{after, before, CaState, Field, Sock, TCP_ECN_OK, TCP_ECN_QUEUE_CWR};
use crate::state::{private_state, PrivateState};

/// `hystart_detect` bit: end slow start on a long ACK train.
pub const HYSTART_ACK_TRAIN: u32 = 1;
/// `hystart_detect` bit: end slow start when the RTT rises.
pub const HYSTART_DELAY: u32 = 2;

/// `enum cdg_state`.
pub const CDG_UNKNOWN: u8 = 0;
/// A round whose RTT did not rise: the queue is not full (`CDG_NONFULL`).
pub const CDG_NONFULL: u8 = 1;
/// A round whose RTT rose: the queue is filling (`CDG_FULL`).
pub const CDG_FULL: u8 = 2;
/// Backing off: the window was cut on a positive delay gradient
/// (`CDG_BACKOFF`).
pub const CDG_BACKOFF: u8 = 3;

/// An ACK train ends when ACKs are more than this far apart (µs).
const ACK_TRAIN_GAP_US: u32 = 3000;
/// Floor of HyStart's one-way-delay and delay thresholds (µs).
const HYSTART_MIN_US: u32 = 125;
/// RTT samples per round before the delay test may fire.
const HYSTART_SAMPLES: u16 = 8;
/// Consecutive single-segment ACKs after a stretch ACK that the delayed-ACK
/// filter treats as delayed.
const DELACK_MAX: u8 = 5;
/// A gradient sum this negative (µs) means the last backoff worked.
const EFFECTUAL_GRADIENT_US: i32 = -32;

param_enum! {
    /// The CWR a backoff enters.
    pub enum CdgCwr {
        /// `tcp_enter_cwr()`: the TCP core's CWR, with PRR (Linux).
        #[default]
        Kernel = 0 => "kernel",
        /// The BPF port's own CWR (`cdg_enter_cwr()` of cdg.bpf.c).
        Own = 1 => "own",
    }
}

params! {
    /// CDG's module parameters, and the CWR its backoff enters.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct CdgParams {
        /// Rounds in the gradient window, a power of two in 1..=256 (default 8).
        window: u32 {
            default: 8,
            values: "1|2|4|8|16|32|64|128|256",
            range: 1..=256,
            check: |w: u32| w.is_power_of_two(),
            help: "gradient window in rounds (default 8)",
            token: Token::Prefix("w"),
        },
        /// Backoff multiplier in 1/1024 (default 724, 0.7071 = sqrt(1/2)).
        backoff_beta: u32 {
            default: 724,
            range: 0..=1024,
            help: "window multiplier on backoff, 1/1024 (default 724)",
            token: Token::Prefix("b"),
        },
        /// Backoff probability scale, 1000 / (G * window) (default 42: G = 3).
        backoff_factor: u32 {
            default: 42,
            help: "backoff probability scale, 1000/(G*window) (default 42, G=3)",
            token: Token::Prefix("f"),
        },
        /// HyStart: 0 off, 1 ACK train, 2 delay, 3 both (default 3). Paced
        /// flows spread their ACKs, which reads as a long train: use 2.
        hystart_detect: u32 {
            default: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            range: 0..=3,
            help: "slow-start exit: 1 ACK train, 2 delay, 3 both (default 3; 2 when paced)",
            token: Token::Prefix("hd"),
        },
        /// Ineffectual backoffs tolerated before backing off stops; 0 disables
        /// the heuristic (default 5).
        use_ineff: u32 {
            default: 5,
            range: 0..=65535,
            help: "ineffectual backoffs before giving up, 0 off (default 5)",
            token: Token::Prefix("i"),
        },
        /// Keep a shadow window for losses (default on).
        use_shadow: bool {
            default: true,
            help: "shadow window for losses (default 1)",
            token: Token::Values(&[("0", "nosh")]),
        },
        /// Tolerate losses while the queue is not full (default off).
        use_tolerance: bool {
            default: false,
            help: "tolerate losses while the queue is not full (default 0)",
            token: Token::Values(&[("1", "tol")]),
        },
        /// Which CWR a backoff enters (default the kernel's). The BPF port
        /// can run only its own (it cannot call `tcp_enter_cwr()`,
        /// docs/KERNEL.md), so it has no such parameter.
        cwr: CdgCwr {
            default: CdgCwr::Kernel,
            help: "backoff's CWR: the kernel's (PRR over a round trip) or the BPF port's (cwnd cut at once) (default kernel)",
            ported: CdgCwr::Own,
        },
    }
}

/// `struct cdg_minmax`: the smallest and largest RTT of a round, or the
/// gradients of two rounds' extremes, in µs (signed, as the kernel's
/// `s32`s).
///
/// Not [`crate::minmax::MinMax`]: that is Nichols' windowed filter (three
/// timestamped samples, the extreme of one quantity over a sliding window,
/// `lib/win_minmax.c`). This is a plain pair tracked over one round, and
/// CDG's window over rounds is a moving *sum* of these pairs (`gsum`), not a
/// windowed extreme. The two share only a name, in the kernel too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CdgMinMax {
    /// The least sample of the round.
    pub min: i32,
    /// The greatest sample of the round.
    pub max: i32,
}

impl CdgMinMax {
    /// The kernel's `v64 != 0`.
    fn is_set(self) -> bool {
        self.min != 0 || self.max != 0
    }
}

private_state! {
    /// `struct cdg`.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub struct CdgState {
        /// This round's and the previous round's RTT extremes.
        pub rtt: CdgMinMax { rtt_min(.min), rtt_max(.max) },
        /// The previous round's.
        pub rtt_prev: CdgMinMax { rtt_prev_min(.min), rtt_prev_max(.max) },
        /// The last `window` gradients (empty when `window` is 1); traces
        /// show their sums.
        untraced gradients: Vec<CdgMinMax>,
        /// Their sums.
        pub gsum: CdgMinMax { gsum_min(.min), gsum_max(.max) },
        /// Has the window been filled once?
        pub gfilled: bool,
        /// Next slot of `gradients`.
        pub tail: u8,
        /// What the last round's delay said (`CDG_UNKNOWN`, `CDG_NONFULL`,
        /// `CDG_FULL`, `CDG_BACKOFF`).
        pub state: u8,
        /// Single-segment ACKs still to treat as delayed.
        pub delack: u8,
        /// The round ends when an ACK passes this.
        pub rtt_seq: u32,
        /// The window a loss halves when larger than cwnd (what cwnd would be
        /// without backoffs), segments.
        pub shadow_wnd: u32,
        /// Backoffs since one last shrank the RTT.
        pub backoff_cnt: u16,
        /// HyStart's RTT samples this round.
        pub sample_cnt: u16,
        /// Smallest RTT seen in slow start (µs).
        pub delay_min: i32,
        /// HyStart's ACK train: last ACK and start of the train (µs, u32 clock).
        pub last_ack: u32,
        /// Start of HyStart's ACK train (µs, u32 clock).
        pub round_start: u32,
        /// `cwr=own`: the BPF port's CWR, whose members follow `struct cdg`'s
        /// in the port's private struct (and in traces, with `cwr=own` only).
        untraced own: OwnCwr,
    }
}

private_state! {
    /// `cwr=own`: the members `cdg.bpf.c` adds for the CWR it keeps itself.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct OwnCwr {
        /// The port's CWR ends when an ACK passes this.
        pub cwr_high_seq: u32,
        /// The port's CWR is on.
        pub in_cwr: bool,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// CDG (Hayes and Armitage, "Revisiting TCP congestion control using delay
/// gradients", 2011), as `tcp_cdg.c`.
pub struct Cdg {
    params: CdgParams,
    st: CdgState,
    rng: SplitMix64,
    /// A replay's view of the next draw's outcome, from the trace.
    expect_state: Option<u8>,
    expect_backoff_cnt: Option<u16>,
    /// A replay's second try: take an undecided draw as not fired.
    other_draw: bool,
}

impl Default for Cdg {
    fn default() -> Self {
        Cdg::new(CdgParams::default())
    }
}

const CDG_READS: &[Field] = reads!(
    AIMD_READS,
    &[
        Field::snd_nxt,
        Field::sacked_out,
        Field::tcp_mstamp,
        Field::icsk_ca_state,
        Field::ecn_flags,
    ]
);

/// `nexp_u32()`'s table: exp(-x) * 65536 - 1 for x = 0, then 0.000256 * 2^k,
/// k = 0..15 (the weight of bit 8 + k of `ux`, in seconds).
const NEXP_TABLE: [u16; 17] = [
    65535, 65518, 65501, 65468, 65401, 65267, 65001, 64470, 63422, 61378, 57484, 50423, 38795,
    22965, 8047, 987, 14,
];

/// `nexp_u32()`: e^(-ux / 10^6) scaled to `u32::MAX`, by a product of table
/// entries for each set bit of `ux >> 8` and a linear step for the low
/// eight bits.
pub fn nexp_u32(ux: u32) -> u32 {
    const V: [u16; 17] = NEXP_TABLE;
    let mut msb = ux >> 8;
    // Cut off when ux >= 2^24 (the true value is at most 222 / u32::MAX).
    if msb > u16::MAX as u32 {
        return 0;
    }
    let mut res = u32::MAX - (ux & 0xff) * (u32::MAX / 1_000_000);
    let mut i = 1usize;
    while msb != 0 {
        // Bit clear: V[0] + 1 = 65536, a multiplication by one.
        let y = V[if msb & 1 != 0 { i } else { 0 }] as u64 + 1;
        res = ((res as u64 * y) >> 16) as u32;
        i += 1;
        msb >>= 1;
    }
    res
}

/// `DIV_ROUND_CLOSEST(x, 64)` for a signed `x`.
fn div_round_closest_64(x: i32) -> i32 {
    if x > 0 {
        x.wrapping_add(32) / 64
    } else {
        x.wrapping_sub(32) / 64
    }
}

impl Cdg {
    /// CDG with parameters `params`.
    pub fn new(params: CdgParams) -> Cdg {
        Cdg {
            params,
            st: CdgState::default(),
            rng: SplitMix64::new(0),
            expect_state: None,
            expect_backoff_cnt: None,
            other_draw: false,
        }
    }

    /// The private state, as a trace names its members.
    pub fn state(&self) -> &CdgState {
        &self.st
    }

    /// `tcp_cdg_hystart_update()`: CUBIC's HyStart with CDG's changes — the
    /// µs clock for ACK trains, the train restarting when not cwnd-limited,
    /// any cwnd (no low-window gate), and RTT minima that passed the
    /// delayed-ACK filter.
    fn hystart_update(&mut self, sk: &mut Sock) {
        let st = &mut self.st;
        st.delay_min = min_not_zero(st.delay_min, st.rtt.min);
        if st.delay_min == 0 {
            return;
        }
        if self.params.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now_us = sk.tcp_mstamp as u32;
            if st.last_ack == 0 || !sk.is_cwnd_limited() {
                st.last_ack = now_us;
                st.round_start = now_us;
            } else if before(now_us, st.last_ack.wrapping_add(ACK_TRAIN_GAP_US)) {
                let base_owd = (st.delay_min as u32 / 2).max(HYSTART_MIN_US);
                st.last_ack = now_us;
                if after(now_us, st.round_start.wrapping_add(base_owd)) {
                    sk.snd_ssthresh = sk.snd_cwnd;
                    return;
                }
            }
        }
        if self.params.hystart_detect & HYSTART_DELAY != 0 {
            if st.sample_cnt < HYSTART_SAMPLES {
                st.sample_cnt += 1;
            } else {
                let d = st.delay_min as u32;
                let thresh = d.wrapping_add(d / 8).max(HYSTART_MIN_US) as i32;
                if st.rtt.min > thresh {
                    sk.snd_ssthresh = sk.snd_cwnd;
                }
            }
        }
    }

    /// `tcp_cdg_grad()`: this round's gradient, summed over the window
    /// (the paper's average without its division by `window`), scaled up
    /// while the window is still filling.
    fn grad(&mut self) -> i32 {
        let window = self.params.window as i32;
        let st = &mut self.st;
        let mut gmin = st.rtt.min.wrapping_sub(st.rtt_prev.min);
        let mut gmax = st.rtt.max.wrapping_sub(st.rtt_prev.max);
        if !st.gradients.is_empty() {
            let old = st.gradients[st.tail as usize];
            st.gsum.min = st.gsum.min.wrapping_add(gmin.wrapping_sub(old.min));
            st.gsum.max = st.gsum.max.wrapping_add(gmax.wrapping_sub(old.max));
            st.gradients[st.tail as usize] = CdgMinMax {
                min: gmin,
                max: gmax,
            };
            st.tail = ((st.tail as u32 + 1) & (self.params.window - 1)) as u8;
            gmin = st.gsum.min;
            gmax = st.gsum.max;
        }
        let mut grad = if gmin > 0 { gmin } else { gmax };
        if !st.gfilled {
            if st.tail == 0 {
                st.gfilled = true;
            } else {
                grad = grad.wrapping_mul(window) / st.tail as i32;
            }
        }
        if gmin <= EFFECTUAL_GRADIENT_US || gmax <= EFFECTUAL_GRADIENT_US {
            st.backoff_cnt = 0;
        }
        if self.params.use_tolerance {
            // Small variations count as none.
            let (gmin, gmax) = (div_round_closest_64(gmin), div_round_closest_64(gmax));
            if gmin > 0 && gmax <= 0 {
                st.state = CDG_FULL;
            } else if (gmin > 0 && gmax > 0) || gmax < 0 {
                st.state = CDG_NONFULL;
            }
        }
        grad
    }

    /// Does the backoff draw fire? `prandom <= P(no backoff)` keeps going.
    /// A replay has told us what the trace shows the draw did: with
    /// `use_ineff` the count of backoffs says; else the state after the
    /// call, `CDG_BACKOFF` if it fired. That cannot tell when CDG was
    /// backing off already: a backoff in Loss, where `tcp_enter_cwr()` does
    /// nothing, leaves `CDG_BACKOFF` until some CWR completes, and a draw
    /// that does not fire meanwhile leaves it too. Such a draw is taken as
    /// fired, and on a replay's second try ([`Cdg::expect_other_draw`]) as
    /// not.
    fn draw_backoff(&mut self, grad: u32) -> bool {
        let cnt = self.expect_backoff_cnt.take();
        let state = self.expect_state.take();
        let other = core::mem::take(&mut self.other_draw);
        match (cnt, state) {
            (Some(c), _) if self.params.use_ineff != 0 => c == self.st.backoff_cnt.wrapping_add(1),
            (_, Some(s)) => s == CDG_BACKOFF && !(other && self.undecided(s)),
            _ => {
                let r = (self.rng.next_u64() >> 32) as u32;
                r > nexp_u32(grad.wrapping_mul(self.params.backoff_factor))
            }
        }
    }

    /// `tcp_cdg_backoff()`: maybe reduce to `backoff_beta` of cwnd.
    fn backoff(&mut self, sk: &mut Sock, grad: u32) -> bool {
        if !self.draw_backoff(grad) {
            return false;
        }
        if self.params.use_ineff != 0 {
            self.st.backoff_cnt = self.st.backoff_cnt.wrapping_add(1);
            if self.st.backoff_cnt as u32 > self.params.use_ineff {
                return false;
            }
        }
        self.st.shadow_wnd = self.st.shadow_wnd.max(sk.snd_cwnd);
        self.st.state = CDG_BACKOFF;
        match self.params.cwr {
            CdgCwr::Kernel => sk.enter_cwr(|sk| self.ssthresh(sk)),
            CdgCwr::Own => self.enter_own_cwr(sk),
        }
        true
    }

    /// `cdg_enter_cwr()` of cdg.bpf.c: `tcp_enter_cwr()` as far as a BPF
    /// program can. Once per reduction, the threshold
    /// `tcp_init_cwnd_reduction()` would set and, at once, the window PRR
    /// would reach a round trip later; `cong_avoid` holds until an ACK
    /// passes `snd_nxt` of now. The core's state stays as it was.
    fn enter_own_cwr(&mut self, sk: &mut Sock) {
        if sk.icsk_ca_state >= CaState::Cwr || self.st.own.in_cwr {
            return;
        }
        self.st.own.cwr_high_seq = sk.snd_nxt;
        sk.snd_cwnd_cnt = 0;
        sk.snd_ssthresh = self.ssthresh(sk);
        if sk.ecn_flags & TCP_ECN_OK != 0 {
            sk.ecn_flags |= TCP_ECN_QUEUE_CWR;
        }
        sk.snd_cwnd = sk.snd_cwnd.min(sk.snd_ssthresh);
        sk.snd_cwnd_stamp = sk.jiffies;
        self.st.own.in_cwr = true;
    }

    /// `cdg_end_cwr()` of cdg.bpf.c: `tcp_end_cwnd_reduction()` for the
    /// port's own CWR.
    fn end_own_cwr(&mut self, sk: &mut Sock) {
        sk.snd_cwnd = sk.snd_ssthresh;
        sk.snd_cwnd_stamp = sk.jiffies;
        self.cwnd_event(sk, CaEvent::CompleteCwr);
    }

    /// Forgets a draw outcome the replay announced for a `cong_avoid` that
    /// did not draw, so that it cannot decide a later draw.
    fn forget_forced_draw(&mut self) {
        self.expect_state = None;
        self.expect_backoff_cnt = None;
        self.other_draw = false;
    }

    /// Can a trace's `state` of `s` after a draw not say whether it fired?
    fn undecided(&self, s: u8) -> bool {
        self.params.use_ineff == 0 && s == CDG_BACKOFF && self.st.state == CDG_BACKOFF
    }

    /// Ends the round: gradient, possibly a backoff. True if it backed off.
    fn end_round(&mut self, sk: &mut Sock) -> bool {
        let grad = if self.st.rtt_prev.is_set() {
            self.grad()
        } else {
            0
        };
        self.st.rtt_seq = sk.snd_nxt;
        self.st.rtt_prev = self.st.rtt;
        self.st.rtt = CdgMinMax::default();
        self.st.last_ack = 0;
        self.st.sample_cnt = 0;
        grad > 0 && self.backoff(sk, grad as u32)
    }
}

impl Declared for Cdg {
    const NAME: &'static str = "cdg";
    const SUMMARY: &'static str =
        "Linux CDG: probabilistic backoff on the RTT gradient, shadow window, own HyStart";
    type Params = CdgParams;

    fn with_params(params: CdgParams) -> Cdg {
        Cdg::new(params)
    }

    fn params(&self) -> &CdgParams {
        &self.params
    }
}

impl CongestionControl for Cdg {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn init(&mut self, sk: &mut Sock) {
        let w = self.params.window as usize;
        self.st.gradients = if w > 1 {
            vec![CdgMinMax::default(); w]
        } else {
            Vec::new()
        };
        self.st.rtt_seq = sk.snd_nxt;
        self.st.shadow_wnd = sk.snd_cwnd;
    }

    fn release(&mut self, _sk: &mut Sock) {
        self.st.gradients = Vec::new();
    }

    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        let cwnd = sk.snd_cwnd;
        let st = &mut self.st;
        if st.own.in_cwr {
            // cwr=own: the core starts a reduction of its own (a loss)
            // inside the port's CWR. The kernel, in CWR already, would not
            // have asked: keep the backoff's threshold and let the core's
            // reduction take over (it completes with COMPLETE_CWR as CWR
            // does).
            st.own.in_cwr = false;
            return sk.snd_ssthresh;
        }
        if st.state == CDG_BACKOFF {
            return (cwnd.wrapping_mul(self.params.backoff_beta.min(1024)) >> 10).max(2);
        }
        if st.state == CDG_NONFULL && self.params.use_tolerance {
            return cwnd;
        }
        st.shadow_wnd = (st.shadow_wnd >> 1).min(cwnd);
        if self.params.use_shadow {
            return st.shadow_wnd.max(cwnd >> 1).max(2);
        }
        (cwnd >> 1).max(2)
    }

    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        // cwr=own: in CWR the kernel calls no cong_avoid; it leaves CWR when
        // an ACK passes high_seq, before that ACK's cong_avoid.
        if self.st.own.in_cwr {
            if !after(ack, self.st.own.cwr_high_seq) {
                self.forget_forced_draw();
                return;
            }
            self.end_own_cwr(sk);
        }
        if sk.in_slow_start() && self.params.hystart_detect != 0 {
            self.hystart_update(sk);
        }
        let backed_off = after(ack, self.st.rtt_seq) && self.st.rtt.is_set() && self.end_round(sk);
        self.forget_forced_draw();
        if backed_off {
            return;
        }
        if !sk.is_cwnd_limited() {
            self.st.shadow_wnd = self.st.shadow_wnd.min(sk.snd_cwnd);
            return;
        }
        let prior = sk.snd_cwnd;
        tcp_reno_cong_avoid(sk, ack, acked);
        let incr = sk.snd_cwnd.wrapping_sub(prior);
        self.st.shadow_wnd = self
            .st
            .shadow_wnd
            .max(self.st.shadow_wnd.wrapping_add(incr));
    }

    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        let rtt = sample.rtt_us;
        if rtt <= 0 {
            return;
        }
        let st = &mut self.st;
        // Hayes' delayed-ACK filter (CAIA TR 100219A): after a stretch ACK,
        // single-segment ACKs are probably delayed ones, which may only
        // lower an existing minimum.
        if sk.sacked_out == 0 {
            if sample.pkts_acked == 1 && st.delack != 0 {
                st.rtt.min = st.rtt.min.min(rtt);
                st.delack -= 1;
                return;
            } else if sample.pkts_acked > 1 && st.delack < DELACK_MAX {
                st.delack += 1;
            }
        }
        st.rtt.min = min_not_zero(st.rtt.min, rtt);
        st.rtt.max = st.rtt.max.max(rtt);
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        match ev {
            CaEvent::CwndRestart => {
                let mut gradients = core::mem::take(&mut self.st.gradients);
                gradients.fill(CdgMinMax::default());
                // Everything but the port's CWR, which idling does not end.
                self.st = CdgState {
                    gradients,
                    rtt_seq: sk.snd_nxt,
                    shadow_wnd: sk.snd_cwnd,
                    own: self.st.own,
                    ..CdgState::default()
                };
            }
            CaEvent::CompleteCwr => {
                self.st.state = CDG_UNKNOWN;
                self.st.rtt_seq = sk.snd_nxt;
                self.st.rtt_prev = self.st.rtt;
                self.st.rtt = CdgMinMax::default();
                self.st.own.in_cwr = false;
            }
            _ => {}
        }
    }

    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        tcp_reno_undo_cwnd(sk)
    }

    fn set_random_seed(&mut self, seed: u64) {
        self.rng = SplitMix64::new(seed);
    }

    fn drawn_at_random(&self) -> &'static [&'static str] {
        &["state", "backoff_cnt"]
    }

    fn expect_random(&mut self, name: &str, value: i64) {
        match name {
            "state" => self.expect_state = Some(value as u8),
            "backoff_cnt" => self.expect_backoff_cnt = Some(value as u16),
            _ => {}
        }
    }

    fn expect_other_draw(&mut self) -> bool {
        // The state cannot become CDG_BACKOFF before the draw within a
        // call, so the state now says whether the draw will be undecided.
        self.other_draw = self.expect_state.is_some_and(|s| self.undecided(s));
        self.other_draw
    }

    fn visit_ca(&self, visit: CaVisitor<'_>) {
        self.st.visit(visit);
        if self.params.cwr == CdgCwr::Own {
            self.st.own.visit(visit);
        }
    }

    fn set_ca(&mut self, name: &str, cell: i64) -> bool {
        self.st.set(name, cell) || (self.params.cwr == CdgCwr::Own && self.st.own.set(name, cell))
    }

    fn reads(&self) -> &'static [Field] {
        CDG_READS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Harness, Setup};
    use crate::sock::CaState;
    use alloc::string::ToString;

    #[test]
    fn nexp_is_the_kernels_table_product() {
        // res = u32::MAX - (ux & 0xff) * 4294 (u32::MAX / 10^6), then for
        // each set bit 8 + k of ux, res = res * (v[k + 1] + 1) >> 16.
        for (ux, want) in [
            (0, 4_294_967_295),
            // Low byte 1: 4294967295 - 4294.
            (1, 4_294_963_001),
            // Low byte 255: 4294967295 - 1094970.
            (255, 4_293_872_325),
            // Bit 8: 4294967295 * 65519 >> 16.
            (256, 4_293_853_183),
            // 1000 = 0b11 << 8 | 232: 4294967295 - 996208 = 4293971087;
            // * 65519 >> 16 = 4292857233; * 65502 >> 16 = 4290630103.
            (1000, 4_290_630_103),
            // 42000 = 164 << 8 | 16 (bits 2, 5, 7 of 164): 4294898591;
            // * 65469 >> 16 = 4290507749; * 65002 >> 16 = 4255547862;
            // * 63423 >> 16 = 4118341248.
            (42_000, 4_118_341_248),
            // 125000 = 488 << 8 | 72 (bits 3, 5, 6, 7, 8): 4294658127;
            // * 65402 = 4285876935; * 65002 = 4250954781; * 64471 =
            // 4181874171; * 63423 = 4047042931; * 61379 = 3790335816.
            (125_000, 3_790_335_816),
            // G = 3 at window 8, a gradient of 8 ms: 8000 * 42 = 336000 =
            // 1312 << 8 | 128 (bits 5, 8, 10): 4294417663; * 65002 =
            // 4259425917; * 61379 = 3989247182; * 50424 = 3069363401.
            (336_000, 3_069_363_401),
            // 10^6 = 3906 << 8 | 64 (bits 1, 6, 8, 9, 10, 11): 4294692479;
            // * 65502 = 4292464397; * 64471 = 4222709230; * 61379 =
            // 3954859463; * 57485 = 3469010867; * 50424 = 2669088805;
            // * 38796 = 1580047138.
            (1_000_000, 1_580_047_138),
            // Every bit: 4293872325, then through all sixteen entries down
            // to * 15 >> 16 = 223 (e^-16.78 * u32::MAX is 222.2).
            ((1 << 24) - 1, 223),
            // msb > u16::MAX: cut off.
            (1 << 24, 0),
            (u32::MAX, 0),
        ] {
            assert_eq!(nexp_u32(ux), want, "nexp_u32({ux})");
        }
    }

    /// exp(-ux / 10^6) * u32::MAX in f64, the function the kernel's table
    /// product approximates.
    fn exp_scaled(ux: u32) -> f64 {
        (-(ux as f64) / 1e6).exp() * u32::MAX as f64
    }

    #[test]
    fn nexp_table_is_e_to_the_minus_0_000256_times_powers_of_two() {
        // v[0] + 1 = 65536 = e^0; v[k + 1] + 1 within one of
        // 65536 e^(-0.000256 * 2^k) (the entries are rounded by hand).
        assert_eq!(NEXP_TABLE[0], 65535);
        for k in 0..16 {
            let exact = 65536.0 * (-0.000256 * (1u32 << k) as f64).exp();
            let v = NEXP_TABLE[k + 1] as f64 + 1.0;
            assert!(
                (v - exact).abs() < 1.0,
                "v[{}] + 1 = {v}, exact {exact}",
                k + 1
            );
        }
    }

    #[test]
    fn nexp_stays_within_its_tables_error_of_the_exponential() {
        // Each entry's relative error compounds over the set bits; the low
        // byte's linear step loses at most 255 * 0.967 (u32::MAX / 10^6
        // truncated to 4294) plus 140 for the curvature it ignores
        // ((255e-6)^2 / 2 of u32::MAX), and each >> 16 truncates one more:
        // 403 units in all. Every product of entries, with low bytes 0,
        // 1, 128 and 255.
        let err = |k: usize| {
            let exact = 65536.0 * (-0.000256 * (1u32 << k) as f64).exp();
            ((NEXP_TABLE[k + 1] as f64 + 1.0) / exact - 1.0).abs()
        };
        for msb in 0..=u16::MAX as u32 {
            let growth: f64 = (0..16)
                .filter(|&k| msb >> k & 1 != 0)
                .map(|k| 1.0 + err(k))
                .product();
            for low in [0, 1, 128, 255] {
                let ux = msb << 8 | low;
                let exact = exp_scaled(ux);
                let bound = exact * (growth - 1.0) + 403.0;
                let got = nexp_u32(ux) as f64;
                assert!(
                    (got - exact).abs() <= bound,
                    "nexp_u32({ux}) = {got}, exact {exact}"
                );
            }
        }
    }

    #[test]
    fn backoff_probability_follows_one_minus_exp_of_g_over_big_g() {
        // P(backoff) = 1 - exp(-grad * backoff_factor / 1e6), with
        // backoff_factor = 1000 / (G * window): for window 8 and a gradient
        // sum of 8 ms (1 ms per round) P = 1 - exp(-1/G): 63.2%, 39.6%,
        // 28.5%. The table product is off by under 2e-5 here
        // (nexp_stays_within_its_tables_error_of_the_exponential).
        for (g, factor) in [(1, 125), (2, 63), (3, 42)] {
            let p = 1.0 - nexp_u32(8_000 * factor) as f64 / u32::MAX as f64;
            let want = 1.0 - (-(8.0 * factor as f64 / 1000.0)).exp();
            assert!((p - want).abs() < 2e-5, "G={g}: {p} vs {want}");
        }
    }

    /// CDG attached to a cwnd-limited connection at cwnd 100.
    fn cdg(params: CdgParams) -> Harness<Cdg> {
        let sk = Sock::new(1000).cwnd(100).ssthresh(50).cwnd_limited();
        let mut h = Harness::new(Cdg::new(params), sk);
        h.init();
        h
    }

    fn set_round(c: &mut Cdg, prev: (i32, i32), cur: (i32, i32)) {
        c.st.rtt_prev = CdgMinMax {
            min: prev.0,
            max: prev.1,
        };
        c.st.rtt = CdgMinMax {
            min: cur.0,
            max: cur.1,
        };
    }

    #[test]
    fn gradients_sum_over_the_window_and_extrapolate_until_it_fills() {
        let mut c = cdg(CdgParams {
            window: 4,
            ..CdgParams::default()
        })
        .cc;
        // Round 1: min +1000, max +2000: grad = gmin, scaled by 4/1.
        set_round(&mut c, (10_000, 12_000), (11_000, 14_000));
        assert_eq!(c.grad(), 4_000);
        assert_eq!(
            (c.st.gsum, c.st.tail),
            (
                CdgMinMax {
                    min: 1000,
                    max: 2000
                },
                1
            )
        );
        // Round 2: min falls 1500, max +500: sums (-500, 2500); gmin <= 0 so
        // grad is gmax, scaled by 4/2.
        set_round(&mut c, (11_000, 14_000), (9_500, 14_500));
        assert_eq!(c.grad(), 5_000);
        // Rounds 3 and 4 fill the window: no more scaling.
        set_round(&mut c, (9_500, 14_500), (9_500, 14_500));
        assert_eq!(c.grad(), 2500 * 4 / 3);
        assert!(!c.st.gfilled);
        set_round(&mut c, (9_500, 14_500), (9_600, 14_500));
        assert_eq!(c.grad(), 2_500);
        assert!(c.st.gfilled);
        assert_eq!(c.st.tail, 0);
        // Round 5 replaces round 1's (1000, 2000) with (0, 0): sums (-1400, 500).
        set_round(&mut c, (9_600, 14_500), (9_600, 14_500));
        c.st.backoff_cnt = 3;
        assert_eq!(c.grad(), 500);
        assert_eq!(
            c.st.gsum,
            CdgMinMax {
                min: -1400,
                max: 500
            }
        );
        // A sum at or below -32 us: the last backoff worked.
        assert_eq!(c.st.backoff_cnt, 0);
    }

    #[test]
    fn tolerance_classifies_the_queue_from_rounded_gradients() {
        let mut c = cdg(CdgParams {
            window: 1,
            use_tolerance: true,
            ..CdgParams::default()
        })
        .cc;
        // Window 1: no sums, filled at once.
        set_round(&mut c, (10_000, 20_000), (10_100, 20_000));
        assert_eq!(c.grad(), 100);
        assert!(c.st.gfilled);
        // gmin rounds to 2 > 0, gmax to 0: the queue is full.
        assert_eq!(c.st.state, CDG_FULL);
        set_round(&mut c, (10_000, 20_000), (10_100, 20_100));
        c.grad();
        assert_eq!(c.st.state, CDG_NONFULL);
        // +31 us rounds to zero: no change of mind.
        set_round(&mut c, (10_000, 20_000), (10_031, 20_000));
        c.grad();
        assert_eq!(c.st.state, CDG_NONFULL);
        set_round(&mut c, (10_000, 20_000), (10_000, 19_900));
        c.grad();
        assert_eq!(c.st.state, CDG_NONFULL, "a shrinking max: not full");
    }

    /// One round at RTT `rtt`, ended by an ACK past `rtt_seq`.
    fn round(h: &mut Harness<Cdg>, rtt: i32) {
        h.acked(2, rtt);
        let end = h.cc.st.rtt_seq.wrapping_add(1);
        h.sk.snd_nxt = end.wrapping_add(100 * 1448);
        h.cong_avoid(end, 1);
    }

    #[test]
    fn a_backoff_enters_cwr_at_beta_and_keeps_a_shadow() {
        let mut h = cdg(CdgParams::default());
        h.cc.set_random_seed(1);
        round(&mut h, 10_000);
        // The draw is forced as a replay would force it.
        h.cc.expect_random("backoff_cnt", 1);
        round(&mut h, 12_000);
        assert_eq!(h.sk.icsk_ca_state, CaState::Cwr);
        assert_eq!(h.cc.st.state, CDG_BACKOFF);
        assert_eq!(h.sk.snd_ssthresh, 70, "100 * 724 >> 10");
        assert_eq!(
            (h.sk.prior_cwnd, h.sk.snd_cwnd),
            (100, 100),
            "no growth on a backoff"
        );
        assert_eq!(h.cc.st.shadow_wnd, 100);
        assert_eq!(h.cc.st.backoff_cnt, 1);
        // CWR completes: the shadow survives, the round restarts.
        h.sk.icsk_ca_state = CaState::Open;
        h.sk.snd_cwnd = 70;
        h.event(CaEvent::CompleteCwr);
        assert_eq!(h.cc.st.state, CDG_UNKNOWN);
        // A loss now halves the shadow, not the reduced window: 50 > 35.
        assert_eq!(h.ssthresh(), 50);
        let mut no_shadow = h.clone();
        no_shadow.cc.params.use_shadow = false;
        no_shadow.cc.st.shadow_wnd = 100;
        assert_eq!(no_shadow.ssthresh(), 35);
    }

    #[test]
    fn ineffectual_backoffs_stop_after_use_ineff() {
        let mut h = cdg(CdgParams {
            use_ineff: 2,
            ..CdgParams::default()
        });
        round(&mut h, 10_000);
        let mut rtt = 10_000;
        for n in 1..=3u16 {
            rtt += 1000;
            h.sk.icsk_ca_state = CaState::Open;
            h.cc.st.state = CDG_UNKNOWN;
            h.cc.expect_random("backoff_cnt", n as i64);
            round(&mut h, rtt);
            assert_eq!(h.cc.st.backoff_cnt, n);
            let backed_off = h.sk.icsk_ca_state == CaState::Cwr;
            assert_eq!(backed_off, n <= 2, "draw {n}");
        }
    }

    #[test]
    fn a_replay_can_take_an_undecided_draw_either_way() {
        // In Loss, where a backoff cannot enter CWR, CDG backing off already:
        // the trace's state of CDG_BACKOFF after the next round cannot say
        // whether that round's draw fired.
        let mut h = cdg(CdgParams {
            use_ineff: 0,
            ..CdgParams::default()
        });
        round(&mut h, 10_000); // Reno's credit: snd_cwnd_cnt 1.
        h.sk.icsk_ca_state = CaState::Loss;
        h.cc.st.state = CDG_BACKOFF;
        let mut other = h.clone();
        // Taken as fired: the round ends there, no congestion avoidance.
        h.cc.expect_random("state", CDG_BACKOFF as i64);
        round(&mut h, 12_000);
        assert_eq!((h.sk.snd_cwnd, h.sk.snd_cwnd_cnt), (100, 1));
        // The second try takes it as not fired: Reno's credit for the ACK.
        other.cc.expect_random("state", CDG_BACKOFF as i64);
        assert!(other.cc.expect_other_draw());
        round(&mut other, 12_000);
        assert_eq!((other.sk.snd_cwnd, other.sk.snd_cwnd_cnt), (100, 2));
        assert_eq!(other.cc.st.state, CDG_BACKOFF);
        // A state the draw would have to change is no doubt.
        let mut h = cdg(CdgParams::default());
        round(&mut h, 10_000);
        h.cc.expect_random("state", CDG_BACKOFF as i64);
        assert!(!h.cc.expect_other_draw());
    }

    #[test]
    fn seeded_draws_back_off_at_about_the_published_probability() {
        // grad 8000 with G = 3: P = 28.5%. Count fired draws over many
        // rounds with a steady gradient: one draw each, firing when it
        // exceeds nexp_u32(8000 * 42) = 3069363401.
        let mut draws = SplitMix64::new(7);
        let want = (0..4000)
            .filter(|_| (draws.next_u64() >> 32) as u32 > 3_069_363_401)
            .count();
        let mut h = cdg(CdgParams {
            window: 1,
            use_ineff: 0,
            ..CdgParams::default()
        });
        h.cc.set_random_seed(7);
        let mut fired = 0;
        for _ in 0..4000 {
            h.cc.st.state = CDG_UNKNOWN;
            h.sk.icsk_ca_state = CaState::Open;
            if h.cc.backoff(&mut h.sk, 8_000) {
                fired += 1;
            }
        }
        assert_eq!(fired, want);
        // Within three standard deviations of 4000 * 28.5% = 1141.
        assert!((1055..1228).contains(&fired), "{fired} of 4000");
    }

    #[test]
    fn the_delayed_ack_filter_keeps_delayed_samples_out_of_the_max() {
        let mut h = cdg(CdgParams::default());
        h.acked(2, 10_000);
        assert_eq!(h.cc.st.delack, 1);
        h.acked(1, 30_000);
        assert_eq!(
            h.cc.st.rtt,
            CdgMinMax {
                min: 10_000,
                max: 10_000
            }
        );
        assert_eq!(h.cc.st.delack, 0);
        h.acked(1, 30_000);
        assert_eq!(
            h.cc.st.rtt,
            CdgMinMax {
                min: 10_000,
                max: 30_000
            }
        );
        // With SACKed data outstanding the filter is off.
        h.acked(2, 9_000);
        h.sk.sacked_out = 1;
        h.acked(1, 40_000);
        assert_eq!(
            h.cc.st.rtt,
            CdgMinMax {
                min: 9_000,
                max: 40_000
            }
        );
        // No sample: nothing.
        h.acked(1, -1);
        assert_eq!(h.cc.st.rtt.max, 40_000);
    }

    #[test]
    fn hystart_ack_train_ends_slow_start_after_half_the_min_rtt() {
        let mut h = cdg(CdgParams {
            hystart_detect: HYSTART_ACK_TRAIN,
            ..CdgParams::default()
        });
        h.sk.snd_ssthresh = u32::MAX >> 1;
        h.sk.snd_cwnd = 20;
        h.sk.snd_nxt = 1_000_000;
        h.init();
        h.acked(2, 10_000);
        // ACKs 1 ms apart from t = 1 s: the train passes 5 ms at t + 6 ms.
        for k in 0..=6u64 {
            h.at(1_000_000 + k * 1000);
            h.cong_avoid(1, 1);
            if k < 6 {
                assert!(h.sk.in_slow_start(), "exited at {k} ms");
            }
        }
        // ssthresh = cwnd at the exit: 20 and one per earlier ACK.
        assert_eq!(h.sk.snd_ssthresh, 26);
        // A gap of 3 ms or more breaks the train (no exit, no restart).
        let mut h = cdg(CdgParams {
            hystart_detect: HYSTART_ACK_TRAIN,
            ..CdgParams::default()
        });
        h.sk.snd_ssthresh = u32::MAX >> 1;
        h.sk.snd_cwnd = 20;
        h.acked(2, 10_000);
        for k in 0..=6u64 {
            h.at(1_000_000 + k * 3000);
            h.cong_avoid(0, 1);
        }
        assert!(h.sk.in_slow_start());
    }

    #[test]
    fn hystart_delay_ends_slow_start_when_the_round_min_rises_an_eighth() {
        let mut h = cdg(CdgParams {
            hystart_detect: HYSTART_DELAY,
            ..CdgParams::default()
        });
        h.sk.snd_ssthresh = u32::MAX >> 1;
        h.sk.snd_cwnd = 10;
        round(&mut h, 10_000);
        assert_eq!(h.cc.st.delay_min, 10_000);
        // Next round at 11,300 us > 10,000 + 1,250: the ninth call exits.
        h.acked(2, 11_300);
        for k in 0..9 {
            assert!(h.sk.in_slow_start(), "exited after {k} calls");
            h.cong_avoid(0, 0);
        }
        assert!(!h.sk.in_slow_start());
        // 11,200 us would not have.
        let mut h = cdg(CdgParams {
            hystart_detect: HYSTART_DELAY,
            ..CdgParams::default()
        });
        h.sk.snd_ssthresh = u32::MAX >> 1;
        round(&mut h, 10_000);
        h.acked(2, 11_200);
        for _ in 0..20 {
            h.cong_avoid(0, 0);
        }
        assert!(h.sk.in_slow_start());
    }

    #[test]
    fn restart_after_idle_forgets_everything_but_the_window_buffer() {
        let mut h = cdg(CdgParams::default());
        round(&mut h, 10_000);
        round(&mut h, 10_000);
        h.cc.st.gradients[0] = CdgMinMax { min: 5, max: 6 };
        h.sk.snd_nxt = 777;
        h.sk.snd_cwnd = 33;
        h.event(CaEvent::CwndRestart);
        assert_eq!(h.cc.st.gradients, vec![CdgMinMax::default(); 8]);
        assert_eq!((h.cc.st.rtt_seq, h.cc.st.shadow_wnd), (777, 33));
        assert_eq!(h.cc.st.rtt_prev, CdgMinMax::default());
    }

    fn own() -> CdgParams {
        CdgParams {
            cwr: CdgCwr::Own,
            ..CdgParams::default()
        }
    }

    /// Two rounds at 10 and 12 ms with the second one's draw forced to
    /// fire: a backoff at cwnd 100 (gradient 2000 us, 16000 extrapolated).
    fn back_off(params: CdgParams) -> Harness<Cdg> {
        let mut h = cdg(params);
        h.sk.ecn_flags = TCP_ECN_OK;
        h.at(2_000_000);
        round(&mut h, 10_000);
        h.cc.expect_random("backoff_cnt", 1);
        round(&mut h, 12_000);
        h
    }

    #[test]
    fn own_cwr_cuts_cwnd_at_once_and_holds_until_an_ack_passes_the_backoffs_snd_nxt() {
        let mut h = back_off(own());
        // The backoff's round ended at ACK 144,802 with snd_nxt 289,602:
        // each round ends one past the last one's snd_nxt (0, then
        // 144,801) and sends 100 segments of 1448 bytes beyond it.
        assert_eq!(h.cc.st.state, CDG_BACKOFF);
        assert!(h.cc.st.own.in_cwr);
        assert_eq!(h.cc.st.own.cwr_high_seq, 289_602);
        assert_eq!(
            (h.sk.snd_cwnd, h.sk.snd_ssthresh, h.sk.snd_cwnd_cnt),
            (70, 70, 0),
            "cwnd cut to 100 * 724 >> 10 at once"
        );
        assert_eq!(h.sk.snd_cwnd_stamp, h.sk.jiffies);
        assert_eq!(h.sk.ecn_flags, TCP_ECN_OK | TCP_ECN_QUEUE_CWR);
        // The core's state is the core's: no CWR, no prior_cwnd.
        assert_eq!((h.sk.icsk_ca_state, h.sk.prior_cwnd), (CaState::Open, 0));
        assert_eq!((h.cc.st.shadow_wnd, h.cc.st.backoff_cnt), (100, 1));

        // ACKs up to the backoff's snd_nxt: no growth (100 segments acked
        // at cwnd 70 would add one), no round, but RTT samples still count.
        h.acked(2, 11_000);
        for a in [200_000, 289_602] {
            h.cong_avoid(a, 100);
            assert_eq!((h.sk.snd_cwnd, h.sk.snd_cwnd_cnt), (70, 0), "ack {a}");
            assert!(h.cc.st.own.in_cwr);
        }
        assert_eq!(
            h.cc.st.rtt,
            CdgMinMax {
                min: 11_000,
                max: 11_000
            }
        );
        assert_eq!(h.cc.st.rtt_seq, 289_602);

        // The next ACK ends it as tcp_end_cwnd_reduction() does: cwnd to
        // ssthresh (the core had lowered it to 60), COMPLETE_CWR (state
        // UNKNOWN, the round restarts from snd_nxt), then this ACK's own
        // congestion avoidance.
        h.sk.snd_cwnd = 60;
        h.sk.snd_nxt = 500_000;
        h.at(2_100_000);
        h.cong_avoid(289_603, 1);
        assert!(!h.cc.st.own.in_cwr);
        assert_eq!(h.cc.st.state, CDG_UNKNOWN);
        assert_eq!((h.sk.snd_cwnd, h.sk.snd_cwnd_cnt), (70, 1));
        assert_eq!(h.sk.snd_cwnd_stamp, h.sk.jiffies);
        assert_eq!(h.cc.st.rtt_seq, 500_000);
        assert_eq!(
            h.cc.st.rtt_prev,
            CdgMinMax {
                min: 11_000,
                max: 11_000
            }
        );
        assert_eq!(h.cc.st.rtt, CdgMinMax::default());
        // Growth is Reno's again: 69 more segments make 71.
        h.cong_avoid(289_604, 69);
        assert_eq!((h.sk.snd_cwnd, h.sk.snd_cwnd_cnt), (71, 0));
    }

    #[test]
    fn own_and_kernel_cwr_set_the_same_threshold_and_differ_in_the_window() {
        let Harness { cc: kc, sk: ksk } = back_off(CdgParams::default());
        let Harness { cc: oc, sk: osk } = back_off(own());
        // 100 * 724 >> 10 = 70 either way.
        assert_eq!((ksk.snd_ssthresh, osk.snd_ssthresh), (70, 70));
        assert_eq!((ksk.snd_cwnd, osk.snd_cwnd), (100, 70));
        assert_eq!(
            (ksk.icsk_ca_state, osk.icsk_ca_state),
            (CaState::Cwr, CaState::Open)
        );
        assert_eq!((ksk.prior_cwnd, ksk.high_seq), (100, 289_602));
        assert!(!kc.st.own.in_cwr && oc.st.own.in_cwr);
        // The kernel's variant names no members it does not have.
        let names = |c: &Cdg| {
            let mut v = Vec::new();
            c.visit_ca(&mut |n, x| v.push((n, x)));
            v
        };
        let (k, o) = (names(&kc), names(&oc));
        assert_eq!(k.len(), 17);
        assert_eq!(
            o[..17].iter().map(|p| p.0).collect::<Vec<_>>(),
            k.iter().map(|p| p.0).collect::<Vec<_>>()
        );
        assert_eq!(&o[17..], &[("cwr_high_seq", 289_602), ("in_cwr", 1)]);
        let mut kc = kc;
        assert!(!kc.set_ca("in_cwr", 1));
    }

    #[test]
    fn a_loss_inside_own_cwr_keeps_the_backoffs_threshold() {
        let mut h = back_off(own());
        // The core enters Recovery: its tcp_init_cwnd_reduction() asks.
        assert_eq!(h.ssthresh(), 70, "not 70 * 724 >> 10 = 49");
        assert!(!h.cc.st.own.in_cwr);
        assert_eq!(h.cc.st.shadow_wnd, 100, "a loss did not halve the shadow");
        // The core's reduction owns the window now: cong_avoid grows again
        // once the core calls it.
        h.sk.icsk_ca_state = CaState::Recovery;
        h.event(CaEvent::CompleteCwr);
        h.sk.icsk_ca_state = CaState::Open;
        h.sk.snd_cwnd = 70;
        h.sk.snd_cwnd_cnt = 69;
        h.cong_avoid(1, 1);
        assert_eq!(h.sk.snd_cwnd, 71);
        // A second loss is CDG's ordinary one.
        h.cc.st.state = CDG_UNKNOWN;
        assert_eq!(h.ssthresh(), 50, "the shadow, halved");
    }

    #[test]
    fn own_cwr_is_entered_once_and_not_inside_the_cores_reduction() {
        for state in [CaState::Cwr, CaState::Recovery, CaState::Loss] {
            let mut h = cdg(own());
            h.sk.icsk_ca_state = state;
            h.sk.snd_ssthresh = 80;
            h.cc.st.state = CDG_BACKOFF;
            h.cc.enter_own_cwr(&mut h.sk);
            assert_eq!((h.sk.snd_cwnd, h.sk.snd_ssthresh), (100, 80), "{state:?}");
            assert!(!h.cc.st.own.in_cwr);
        }
        let mut h = back_off(own());
        h.sk.snd_nxt = 1;
        h.cc.enter_own_cwr(&mut h.sk);
        assert_eq!((h.sk.snd_cwnd, h.cc.st.own.cwr_high_seq), (70, 289_602));
    }

    #[test]
    fn restart_after_idle_keeps_the_own_cwr() {
        let mut h = back_off(own());
        h.sk.snd_nxt = 999;
        h.event(CaEvent::CwndRestart);
        assert_eq!(
            (h.cc.st.own.in_cwr, h.cc.st.own.cwr_high_seq),
            (true, 289_602)
        );
        assert_eq!(
            (h.cc.st.state, h.cc.st.rtt_seq, h.cc.st.backoff_cnt),
            (CDG_UNKNOWN, 999, 0)
        );
    }

    #[test]
    fn the_cwr_parameter_parses_and_prints_canonically() {
        use crate::Algorithm;
        let spec = |s: &str| {
            s.parse::<Algorithm>()
                .map(|a| a.spec())
                .map_err(|e| e.to_string())
        };
        assert_eq!(spec("cdg:cwr=kernel").unwrap(), "cdg");
        assert_eq!(
            spec("cdg:cwr=own:window=4").unwrap(),
            "cdg:window=4:cwr=own"
        );
        assert_eq!(
            spec("cdg:cwr=port").unwrap_err(),
            "`port` is not a valid value for `cwr` of cdg; expected kernel|own"
        );
    }
}
