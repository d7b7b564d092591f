//! Scripts of what the TCP core does between an algorithm's hooks, played
//! onto one algorithm for property tests.
//!
//! A [`Script`] is a starting connection ([`Start`]) and a list of
//! [`Event`]s: ACKs, changes of the flight's counters, fast retransmits,
//! ECN's CWR, the end of a reduction, timeouts, undos, idle restarts, CE
//! echoes and pacing changes. A [`Player`] turns each event into the hook
//! calls Linux 6.18 makes for it: an ACK in `tcp_ack()`'s order
//! (`in_ack_event`, `pkts_acked`, then `cong_control`, or `cong_avoid`
//! outside a reduction), a reduction through [`crate::tcp`]'s
//! `tcp_init_cwnd_reduction()`, `tcp_enter_cwr()` and
//! `tcp_end_cwnd_reduction()`, a timeout as `tcp_enter_loss()`. Every
//! call goes through a [`Tap`]: tests/properties.rs checks after each hook
//! what the kernel guarantees there; crates/trace/tests/replay.rs records
//! the calls and replays the trace.
//!
//! Starting states and event arguments come from a [`Domain`]. `Kernel`
//! draws only states the kernel can be in: 1 <= cwnd <= clamp and cwnd
//! below 2^31 (`tcp_snd_cwnd_set()` warns on a cwnd that is not a positive
//! `int`), ssthresh at least 1, no more SACKed and lost segments than are
//! out. `Any` draws every field from the whole of its type, but for a cwnd
//! or clamp of 0, where the kernel's congestion avoidance divides by zero:
//! there only the absence of panics (overflow included: tests build with
//! overflow checks) and exact replay can be asked, since the kernel's own
//! guarantees assume its invariants. Both mix edge values (0, 1, 2,
//! 2^31 - 1, 2^31, 2^32 - 1, `TCP_INFINITE_SSTHRESH`, ...) with ranges, so
//! that products overflow, counters wrap and windows reach their limits.
//! Values are decoded from raw random draws ([`Start::decode`],
//! [`Event::decode`]), so any source of numbers can drive them; with the
//! `proptest` feature, [`strategy`] generates scripts.

use alloc::vec::Vec;

use crate::ops::{AckSample, CaEvent, CongestionControl, Hook, RateSample, Tap, CA_ACK_ECE};
use crate::ops::{CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};
use crate::sock::{CaState, PacingStatus, Sock, TCP_INFINITE_SSTHRESH, TCP_INIT_CWND};
use crate::tcp::{tcp_cong_control_without_prr, tcp_set_ca_state};
use crate::tcp::{tcp_end_cwnd_reduction, tcp_enter_cwr, tcp_init_cwnd_reduction};

/// Every algorithm, and the variants that take other code paths: what
/// property tests iterate over (each spec gets its own cases).
pub const SPECS: &[&str] = &[
    "reno",
    "reno:hystart=hspp",
    "cubic",
    "cubic:hystart=off",
    "cubic:hystart=hspp",
    "cubic:friendly=eq4",
    "cubic:friendly=newreno",
    "cubic:friendly=off",
    "cubic:hystart_detect=1:hystart_low_window=2:hystart_ack_delta_us=0",
    "cubic:beta=512:bic_scale=100:fast_convergence=0:initial_ssthresh=7:hystart=off",
    "cubic:beta=1023:friendly=eq4",
    "cubic:beta=1",
    "bbr",
    "vegas",
    "vegas:alpha=0:beta=0:gamma=0",
    "htcp",
    "htcp:use_rtt_scaling=0:use_bandwidth_switch=0",
    "dctcp",
    "dctcp:shift_g=0:alpha_on_init=0",
    "dctcp:shift_g=10",
    "cdg",
    "cdg:use_tolerance=1:use_shadow=0",
    "cdg:window=1:hystart_detect=2:backoff_factor=1000",
    "cdg:window=256:use_ineff=0:backoff_beta=0",
    "cdg:cwr=own",
    "cdg:cwr=own:window=1:use_ineff=0:backoff_factor=1000:use_tolerance=1",
];

/// Which states a script may start from and drive into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// States the kernel can be in (see the module's documentation).
    Kernel,
    /// Every value of every field, but a cwnd or clamp of 0.
    Any,
}

/// The segments in flight, as the core counts them (`tcp_packets_in_flight()
/// = packets_out - (sacked_out + lost_out) + retrans_out`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flight {
    /// `packets_out`.
    pub packets_out: u32,
    /// `sacked_out`.
    pub sacked_out: u32,
    /// `lost_out`.
    pub lost_out: u32,
    /// `retrans_out`.
    pub retrans_out: u32,
}

/// The connection a script starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The jiffies clock's HZ.
    pub hz: u32,
    /// Both clocks, µs ([`Sock::set_clock`]).
    pub now_us: u64,
    /// `snd_cwnd`.
    pub cwnd: u32,
    /// `snd_ssthresh`.
    pub ssthresh: u32,
    /// `snd_cwnd_clamp`.
    pub clamp: u32,
    /// `snd_cwnd_cnt`.
    pub cwnd_cnt: u32,
    /// `prior_cwnd`.
    pub prior_cwnd: u32,
    /// What is in flight.
    pub flight: Flight,
    /// `delivered`, `delivered_ce` and `lost`: counters that wrap.
    pub delivered: u32,
    /// `delivered_ce`.
    pub delivered_ce: u32,
    /// `lost`.
    pub lost: u32,
    /// `snd_una`.
    pub seq: u32,
    /// `srtt_us` (µs << 3).
    pub srtt_us: u32,
    /// `mss_cache`, bytes.
    pub mss: u32,
    /// ECN negotiated (always, for an algorithm that needs it).
    pub ecn: bool,
}

/// What the core does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An ACK.
    Ack(Ack),
    /// SACKs, loss marks and retransmissions change the flight.
    Flight(Flight),
    /// Fast retransmit: `tcp_enter_recovery()`.
    Loss,
    /// An ECE: `tcp_enter_cwr()`.
    Cwr,
    /// The reduction (CWR or Recovery) ends: `tcp_end_cwnd_reduction()`
    /// and Open.
    Recovered,
    /// `dt_us` later, the retransmission timer: `tcp_enter_loss()`.
    Rto {
        /// Time since the previous event, µs.
        dt_us: u64,
    },
    /// The reduction was spurious: `tcp_undo_cwnd_reduction()` and Open.
    Undo,
    /// Idle for `dt_us`, then transmit again; `restart` when the idle time
    /// exceeded the RTO (`tcp_cwnd_restart()`).
    Idle {
        /// How long nothing was sent, µs.
        dt_us: u64,
        /// Did the idle time exceed the RTO?
        restart: bool,
    },
    /// A data segment arrived with (`ce`) or without a CE mark: the
    /// receiver's side, `__tcp_ecn_check_ce()`.
    Ce {
        /// Was the segment CE-marked?
        ce: bool,
    },
    /// `sk_pacing_rate` and `sk_pacing_status` change (HyStart reads them).
    Pacing {
        /// `sk_pacing_rate`, bytes per second.
        rate: u64,
        /// Is the socket paced?
        paced: bool,
    },
}

/// `dt_us` after the previous event, an ACK of `acked` segments with an
/// RTT sample (`rtt_us`, -1: none), echoing ECE if `ece` (its segments
/// count in `delivered_ce`); `cwnd_limited` is `tp->is_cwnd_limited`,
/// `losses` and `app_limited` go into the rate sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    /// Segments newly acknowledged.
    pub acked: u32,
    /// The RTT sample, µs (-1: none).
    pub rtt_us: i32,
    /// Time since the previous event, µs.
    pub dt_us: u64,
    /// Did the ACK echo ECE?
    pub ece: bool,
    /// `tp->is_cwnd_limited` after it.
    pub cwnd_limited: bool,
    /// Segments the rate sample counts lost.
    pub losses: i32,
    /// Is the rate sample application-limited?
    pub app_limited: bool,
}

/// A starting connection and the events that follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// The connection.
    pub start: Start,
    /// What happens to it, in order.
    pub events: Vec<Event>,
}

/// A tap that stops calling hooks once cwnd is 0: the kernel warns
/// (`tcp_snd_cwnd_set()`) and its next congestion avoidance divides by the
/// window (`tcp_cong_avoid_ai(tp, tcp_snd_cwnd(tp), acked)`), so nothing
/// after that is defined. Scripts from [`Domain::Any`] are played through
/// it (tests/properties.rs, the fuzz targets of crates/fuzz-targets).
#[derive(Default)]
pub struct UntilCwndZero {
    /// Has a hook left cwnd 0?
    pub stopped: bool,
}

impl<C: CongestionControl> Tap<C> for UntilCwndZero {
    fn call(&mut self, hook: &Hook, cc: &mut C, sk: &mut Sock) -> u32 {
        self.stopped |= sk.snd_cwnd == 0;
        if self.stopped {
            return 0;
        }
        hook.call(cc, sk)
    }
}

/// One algorithm on its connection, driven by events through a tap.
pub struct Player<C, T> {
    /// The algorithm.
    pub cc: C,
    /// Its connection.
    pub sk: Sock,
    /// What sees every hook call.
    pub tap: T,
    now_us: u64,
}

impl<C: CongestionControl, T: Tap<C>> Player<C, T> {
    /// `cc` on the connection `start` describes, then `init` (through the
    /// tap, like every later hook).
    pub fn new(cc: C, start: &Start, tap: T) -> Player<C, T> {
        let mut sk = Sock::new(start.hz);
        sk.set_clock(start.now_us);
        sk.snd_cwnd = start.cwnd;
        sk.snd_ssthresh = start.ssthresh;
        sk.snd_cwnd_clamp = start.clamp;
        sk.snd_cwnd_cnt = start.cwnd_cnt;
        sk.prior_cwnd = start.prior_cwnd;
        set_flight(&mut sk, start.flight);
        sk.delivered = start.delivered;
        sk.delivered_ce = start.delivered_ce;
        sk.lost = start.lost;
        sk.snd_una = start.seq;
        sk.snd_nxt = start.seq;
        sk.srtt_us = start.srtt_us;
        sk.mss_cache = start.mss;
        if start.ecn || cc.needs_ecn() {
            sk.ecn_flags = crate::sock::TCP_ECN_OK;
        }
        let mut p = Player {
            cc,
            sk,
            tap,
            now_us: start.now_us,
        };
        p.call(Hook::Init);
        p
    }

    fn call(&mut self, hook: Hook) -> u32 {
        self.tap.call(&hook, &mut self.cc, &mut self.sk)
    }

    fn set_state(&mut self, s: CaState) {
        tcp_set_ca_state(&mut self.tap, &mut self.cc, &mut self.sk, s);
    }

    /// Moves both clocks `dt_us` on (saturating: a script cannot outlast
    /// u64 microseconds).
    fn advance(&mut self, dt_us: u64) {
        self.now_us = self.now_us.saturating_add(dt_us);
        self.sk.set_clock(self.now_us);
    }

    /// Plays every event of `events`, calling `after` after each.
    pub fn play_all<E>(
        &mut self,
        events: &[Event],
        mut after: impl FnMut(&mut Self, &Event) -> Result<(), E>,
    ) -> Result<(), E> {
        for e in events {
            self.play(e);
            after(self, e)?;
        }
        Ok(())
    }

    /// Makes the hook calls the kernel makes for `e`.
    pub fn play(&mut self, e: &Event) {
        match *e {
            Event::Ack(a) => self.ack(a),
            Event::Flight(f) => set_flight(&mut self.sk, f),
            Event::Loss => self.enter_recovery(),
            Event::Cwr => {
                tcp_enter_cwr(&mut self.tap, &mut self.cc, &mut self.sk);
            }
            Event::Recovered => {
                if matches!(self.sk.icsk_ca_state, CaState::Cwr | CaState::Recovery) {
                    tcp_end_cwnd_reduction(&mut self.tap, &mut self.cc, &mut self.sk, true);
                    self.set_state(CaState::Open);
                }
            }
            Event::Rto { dt_us } => self.enter_loss(dt_us),
            Event::Undo => {
                // tcp_undo_cwnd_reduction(): the algorithm's window, unclamped.
                let cwnd = self.call(Hook::UndoCwnd);
                self.sk.snd_cwnd = cwnd;
                self.set_state(CaState::Open);
            }
            Event::Idle { dt_us, restart } => {
                self.sk.lsndtime = self.sk.jiffies;
                self.advance(dt_us);
                if restart {
                    // tcp_cwnd_restart(), with the window halved once.
                    self.call(Hook::CwndEvent(CaEvent::CwndRestart));
                    self.sk.snd_ssthresh = self.sk.current_ssthresh();
                    let cwnd = self.sk.snd_cwnd;
                    self.sk.snd_cwnd = (cwnd >> 1).max(cwnd.min(TCP_INIT_CWND));
                }
                self.call(Hook::CwndEvent(CaEvent::TxStart));
                self.sk.lsndtime = self.sk.jiffies;
            }
            Event::Ce { ce } => {
                let ev = if ce {
                    CaEvent::EcnIsCe
                } else {
                    CaEvent::EcnNoCe
                };
                self.call(Hook::CwndEvent(ev));
            }
            Event::Pacing { rate, paced } => {
                self.sk.pacing_rate = rate;
                self.sk.pacing_status = if paced {
                    PacingStatus::Needed
                } else {
                    PacingStatus::None
                };
            }
        }
    }

    /// `tcp_ack()`: the ACK's counters, `in_ack_event`, `pkts_acked`, then
    /// `cong_control`, or `cong_avoid` outside a reduction.
    fn ack(&mut self, a: Ack) {
        let Ack {
            acked,
            rtt_us,
            dt_us,
            ece,
            cwnd_limited,
            losses,
            app_limited,
        } = a;
        let prior_us = self.now_us;
        self.advance(dt_us);
        let prior_in_flight = self.sk.packets_in_flight();
        let prior_delivered = self.sk.delivered;
        let sk = &mut self.sk;
        sk.snd_una = sk.snd_una.wrapping_add(acked.wrapping_mul(sk.mss_cache));
        sk.snd_nxt = sk
            .snd_una
            .wrapping_add(sk.snd_cwnd.wrapping_mul(sk.mss_cache));
        take_off(sk, acked);
        sk.is_cwnd_limited = cwnd_limited;
        sk.max_packets_out = sk.snd_cwnd;
        if rtt_us >= 0 {
            sk.srtt_us = (rtt_us as u32).max(1) << 3;
            sk.min_rtt_us = sk.min_rtt_us.min((rtt_us as u32).max(1));
        }
        sk.delivered = sk.delivered.wrapping_add(acked);
        sk.delivered_mstamp = sk.tcp_mstamp;
        let flags = if ece {
            sk.delivered_ce = sk.delivered_ce.wrapping_add(acked);
            CA_ACK_ECE | CA_ACK_SLOWPATH
        } else {
            CA_ACK_WIN_UPDATE
        };
        self.call(Hook::InAckEvent(flags));
        self.call(Hook::PktsAcked(AckSample {
            pkts_acked: acked,
            rtt_us,
            in_flight: prior_in_flight,
        }));
        let ack = self.sk.snd_una;
        let rs = |_: &Sock| RateSample {
            prior_delivered,
            prior_mstamp: prior_us,
            delivered: acked as i32,
            interval_us: dt_us.min(i64::MAX as u64) as i64,
            rtt_us: rtt_us as i64,
            acked_sacked: acked,
            prior_in_flight,
            losses,
            is_app_limited: app_limited,
            ..RateSample::default()
        };
        tcp_cong_control_without_prr(&mut self.tap, &mut self.cc, &mut self.sk, ack, acked, rs);
    }

    /// `tcp_enter_recovery()`: a new reduction from Open or Disorder; from
    /// CWR the one under way continues into Recovery.
    fn enter_recovery(&mut self) {
        match self.sk.icsk_ca_state {
            CaState::Recovery | CaState::Loss => return,
            CaState::Open | CaState::Disorder => {
                let (tap, cc) = (&mut self.tap, &mut self.cc);
                tcp_init_cwnd_reduction(&mut self.sk, |sk| tap.call(&Hook::Ssthresh, cc, sk));
            }
            CaState::Cwr => {}
        }
        self.set_state(CaState::Recovery);
    }

    /// `tcp_enter_loss()`: a new threshold only when no reduction is under
    /// way; every segment out and not SACKed is lost, so cwnd = in flight +
    /// 1 = 1.
    fn enter_loss(&mut self, dt_us: u64) {
        self.advance(dt_us);
        if self.sk.icsk_ca_state <= CaState::Disorder {
            self.sk.prior_cwnd = self.sk.snd_cwnd;
            self.sk.snd_ssthresh = self.call(Hook::Ssthresh);
            self.call(Hook::CwndEvent(CaEvent::Loss));
        }
        let sk = &mut self.sk;
        sk.lost_out = sk.packets_out.wrapping_sub(sk.sacked_out);
        sk.retrans_out = 0;
        sk.snd_cwnd = sk.packets_in_flight().wrapping_add(1);
        sk.snd_cwnd_cnt = 0;
        sk.snd_cwnd_stamp = sk.jiffies;
        self.set_state(CaState::Loss);
    }
}

/// `acked` segments leave the flight. When the counters were consistent
/// (SACKed and lost within those out, retransmitted within the lost) they
/// stay so, as the kernel's do; a state outside that stays outside.
fn take_off(sk: &mut Sock, acked: u32) {
    let consistent = sk
        .sacked_out
        .checked_add(sk.lost_out)
        .is_some_and(|left| left <= sk.packets_out)
        && sk.retrans_out <= sk.lost_out;
    sk.packets_out = sk.packets_out.saturating_sub(acked);
    if consistent {
        sk.sacked_out = sk.sacked_out.min(sk.packets_out);
        sk.lost_out = sk.lost_out.min(sk.packets_out - sk.sacked_out);
        sk.retrans_out = sk.retrans_out.min(sk.lost_out);
    }
}

fn set_flight(sk: &mut Sock, f: Flight) {
    sk.packets_out = f.packets_out;
    sk.sacked_out = f.sacked_out;
    sk.lost_out = f.lost_out;
    sk.retrans_out = f.retrans_out;
}

/// Where u32 arithmetic wraps, changes sign or meets the kernel's
/// sentinels (`u32::MAX / 2` is `TCP_INFINITE_SSTHRESH`, the largest
/// positive `int`).
pub const U32_EDGES: [u32; 11] = [
    0,
    1,
    2,
    3,
    4,
    TCP_INIT_CWND,
    0x7fff_fffe,
    TCP_INFINITE_SSTHRESH,
    0x8000_0000,
    0xffff_fffe,
    u32::MAX,
];

/// Microsecond spans where clocks kept in u32 µs (BBR's) wrap, and the
/// ends of the µs clock.
const U64_EDGES: [u64; 8] = [
    0,
    1,
    (1 << 31) - 1,
    (1 << 32) - 1,
    1 << 32,
    (1 << 32) + 1,
    u64::MAX / 2,
    u64::MAX,
];

/// A value in `lo..=hi` from one raw draw: its low two bits choose a small
/// value (`lo` and the next thousand), an edge within the range (of
/// `edges`, and the range's own ends), or anything in it; the rest of the
/// draw picks which. A draw of 0 gives `lo`, so shrinking a draw toward 0
/// shrinks the value toward the range's low end.
fn pick(raw: u64, lo: u64, hi: u64, edges: &[u64]) -> u64 {
    let span = (hi - lo).saturating_add(1);
    let v = raw >> 2;
    match raw & 3 {
        0 => lo + v % span.min(1001),
        1 => {
            let ends = [lo, lo.saturating_add(1), hi.saturating_sub(1), hi];
            let within = || {
                edges
                    .iter()
                    .copied()
                    .chain(ends)
                    .filter(|x| (lo..=hi).contains(x))
            };
            let n = within().count() as u64;
            within().nth((v % n) as usize).unwrap_or(lo)
        }
        _ => lo + v % span,
    }
}

/// [`pick`] for a u32 in `lo..=hi`, with [`U32_EDGES`].
fn pick32(raw: u64, lo: u32, hi: u32) -> u32 {
    const EDGES: [u64; 11] = {
        let mut e = [0u64; 11];
        let mut i = 0;
        while i < 11 {
            e[i] = U32_EDGES[i] as u64;
            i += 1;
        }
        e
    };
    pick(raw, lo as u64, hi as u64, &EDGES) as u32
}

/// A span of microseconds: none, a few ms, up to a 5 s RTO, or one where
/// a u32 µs clock wraps.
/// The most segments an ACK of [`Domain::Kernel`] covers per microsecond
/// since the previous event: 200, 2.4 Tbit/s of 1500-byte packets, beyond
/// any link, and below the 256 a microsecond BBR's bandwidth (segments per
/// µs in 8.24 fixed point, a u32) can hold at all.
const MAX_SEGMENTS_PER_US: u64 = 200;

/// The longest RTT sample of [`Domain::Kernel`]: 2 s, a geostationary hop
/// several times over. With [`MAX_SEGMENTS_PER_US`] a bandwidth-delay
/// product of at most 4 * 10^8 segments, below the domain's 2^31.
const MAX_KERNEL_RTT_US: i32 = 2_000_000;

fn pick_dt(raw: u64) -> u64 {
    match raw & 3 {
        0 => 0,
        1 => pick(raw >> 2, 0, 50_000, &[]),
        2 => pick(raw >> 2, 0, 5_000_000, &[]),
        _ => pick(raw >> 2, (1 << 32) - 10, (1 << 32) + 10_000_000, &U64_EDGES),
    }
}

/// One of `values`, the first for a draw of 0.
fn one_of<T: Copy>(raw: u64, values: &[T]) -> T {
    values[(raw % values.len() as u64) as usize]
}

impl Flight {
    /// A flight from four draws: in the kernel's domain no more SACKed and
    /// lost segments than are out, and no more retransmitted than lost.
    pub fn decode(domain: Domain, raw: [u64; 4]) -> Flight {
        match domain {
            Domain::Any => Flight {
                packets_out: pick32(raw[0], 0, u32::MAX),
                sacked_out: pick32(raw[1], 0, u32::MAX),
                lost_out: pick32(raw[2], 0, u32::MAX),
                retrans_out: pick32(raw[3], 0, u32::MAX),
            },
            Domain::Kernel => {
                let packets_out = pick32(raw[0], 0, TCP_INFINITE_SSTHRESH);
                let sacked_out = pick32(raw[1], 0, packets_out);
                let lost_out = pick32(raw[2], 0, packets_out - sacked_out);
                Flight {
                    packets_out,
                    sacked_out,
                    lost_out,
                    retrans_out: pick32(raw[3], 0, lost_out),
                }
            }
        }
    }
}

impl Start {
    /// Draws for [`Start::decode`].
    pub const DRAWS: usize = 18;

    /// A starting connection from raw draws (see [`Domain`]).
    pub fn decode(domain: Domain, raw: [u64; Start::DRAWS]) -> Start {
        let any = |i: usize| pick32(raw[i], 0, u32::MAX);
        let kernel = domain == Domain::Kernel;
        // Neither cwnd 0 nor a clamp of 0 (which slow start turns into a
        // cwnd of 0) is a state of the kernel's, in either domain:
        // tcp_snd_cwnd_set() warns, and congestion avoidance divides by
        // cwnd.
        let clamp = pick32(raw[0], 1, u32::MAX);
        let (cwnd, ssthresh, prior_cwnd, mss) = if kernel {
            (
                pick32(raw[1], 1, clamp.min(TCP_INFINITE_SSTHRESH)),
                pick32(raw[2], 1, TCP_INFINITE_SSTHRESH),
                // A saved window, and an MSS the kernel would negotiate.
                pick32(raw[3], 0, TCP_INFINITE_SSTHRESH),
                one_of(raw[4], &[1448, 88, 536, 9000, 65_495]),
            )
        } else {
            (pick32(raw[1], 1, u32::MAX), any(2), any(3), any(4))
        };
        Start {
            hz: one_of(raw[5], &[100, 250, 300, 1000, 10_000]),
            // Anywhere, including 10 ms before the jiffies clock wraps (it
            // starts 300 s before) and at the end of the µs clock.
            now_us: pick(raw[6], 0, u64::MAX, &[299_990_000, u64::MAX / 2]),
            cwnd,
            ssthresh,
            clamp,
            cwnd_cnt: any(7),
            prior_cwnd,
            flight: Flight::decode(domain, [raw[8], raw[9], raw[10], raw[11]]),
            delivered: any(12),
            delivered_ce: any(13),
            lost: any(14),
            seq: any(15),
            srtt_us: any(16),
            mss,
            ecn: raw[17] & 1 != 0,
        }
    }
}

impl Event {
    /// Draws for [`Event::decode`], besides the kind.
    pub const DRAWS: usize = 4;

    /// An event from a kind (ACKs the most frequent, as on a connection)
    /// and raw draws for its arguments (see [`Domain`]).
    pub fn decode(domain: Domain, kind: u8, raw: [u64; Event::DRAWS]) -> Event {
        let kernel = domain == Domain::Kernel;
        match kind % 22 {
            0..=11 => {
                let dt_us = pick_dt(raw[2]);
                // The kernel's paths are physical: an ACK covers at most
                // MAX_SEGMENTS_PER_US of its interval, and an RTT sample is
                // at most MAX_KERNEL_RTT_US, so that no bandwidth-delay
                // product reaches the 2^31 segments the domain's windows
                // stay below (beyond it BBR's u32 BDP wraps, in the kernel
                // as here, to any window, 0 included).
                let acked = if kernel {
                    let most = dt_us.saturating_mul(MAX_SEGMENTS_PER_US).clamp(1, 1 << 20);
                    pick32(raw[0], 1, most as u32)
                } else {
                    pick32(raw[0], 0, u32::MAX)
                };
                let rtt_us = match raw[1] & 3 {
                    0 => -1,
                    1 if kernel => one_of(raw[1] >> 2, &[0, 1, 2, 125, MAX_KERNEL_RTT_US]),
                    1 => one_of(raw[1] >> 2, &[0, 1, 2, 125, i32::MAX]),
                    _ => pick(raw[1] >> 2, 1, MAX_KERNEL_RTT_US as u64, &[]) as i32,
                };
                let losses = match (raw[3] >> 2) & 3 {
                    0 => 0,
                    1 | 2 => pick(raw[3] >> 4, 1, 9, &[]) as i32,
                    _ if kernel => 0,
                    _ => pick32(raw[3] >> 4, 0, u32::MAX) as i32,
                };
                Event::Ack(Ack {
                    acked,
                    rtt_us,
                    dt_us,
                    // One ACK in six echoes ECE.
                    ece: kind % 22 >= 10,
                    cwnd_limited: raw[3] & 1 != 0,
                    losses,
                    app_limited: raw[3] & 2 != 0,
                })
            }
            12 => Event::Flight(Flight::decode(domain, raw)),
            13 => Event::Loss,
            14 => Event::Cwr,
            15 | 16 => Event::Recovered,
            17 => Event::Rto {
                dt_us: pick_dt(raw[0]),
            },
            18 => Event::Undo,
            19 => Event::Idle {
                dt_us: match raw[0] & 1 {
                    0 => pick_dt(raw[0] >> 1),
                    _ => pick(raw[0] >> 1, 0, 100_000_000, &[]),
                },
                restart: raw[1] & 1 != 0,
            },
            20 => Event::Ce {
                ce: raw[0] & 1 != 0,
            },
            _ => Event::Pacing {
                rate: pick(raw[0], 0, u64::MAX, &[10_000_000_000]),
                paced: raw[1] & 1 != 0,
            },
        }
    }
}

/// Scripts as proptest strategies: raw draws, decoded. Shrinking works on
/// the draws (toward 0: ACKs, small values, the ranges' low ends), and
/// generating a script costs little more than its random numbers.
#[cfg(feature = "proptest")]
pub mod strategy {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

    /// Starting connections drawn over `domain`.
    pub fn start(domain: Domain) -> impl Strategy<Value = Start> {
        any::<[u64; Start::DRAWS]>().prop_map(move |raw| Start::decode(domain, raw))
    }

    /// Events drawn over `domain`.
    pub fn event(domain: Domain) -> impl Strategy<Value = Event> {
        (any::<u8>(), any::<[u64; Event::DRAWS]>())
            .prop_map(move |(kind, raw)| Event::decode(domain, kind, raw))
    }

    /// A script of 1 to `max_events - 1` events.
    pub fn script(domain: Domain, max_events: usize) -> impl Strategy<Value = Script> {
        (
            start(domain),
            proptest::collection::vec(event(domain), 1..max_events),
        )
            .prop_map(|(start, events)| Script { start, events })
    }

    /// Runs `property` over `cases` values of `strategy` for every spec of
    /// [`SPECS`], each spec with cases of its own (`PROPTEST_CASES` sets
    /// another number, for a longer soak), and panics naming the spec of a
    /// failure. Failures are saved beside `source_file` (pass `file!()`).
    pub fn for_every_spec<S: Strategy>(
        source_file: &'static str,
        cases: u32,
        strategy: S,
        property: impl Fn(&str, S::Value) -> Result<(), TestCaseError>,
    ) {
        for spec in SPECS {
            let mut runner = TestRunner::new(Config {
                cases: std::env::var("PROPTEST_CASES").map_or(cases, |_| Config::default().cases),
                source_file: Some(source_file),
                failure_persistence: Some(alloc::boxed::Box::new(
                    FileFailurePersistence::WithSource("proptest-regressions"),
                )),
                // Scripts are long: shrinking one to a few events takes
                // more than the default 4,096 steps (only a failure pays).
                max_shrink_iters: 100_000,
                ..Config::default()
            });
            if let Err(e) = runner.run(&strategy, |v| property(spec, v)) {
                panic!("{spec}: {e}");
            }
        }
    }
}
