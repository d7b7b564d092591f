//! The TCP sender: Linux's sending half of TCP (`tcp_output.c`,
//! `tcp_input.c`, `tcp_timer.c`), reduced to what congestion control
//! sees, with the algorithm called through its hooks in the kernel's
//! order.
//!
//! One [`Sender`] per flow; its `impl` is split along the kernel's files:
//!
//! - this file: the connection's state, its start, and what the world
//!   asks of it (the next wakeup), and `expose()`, the one copy of
//!   the sender's own state into the [`Sock`] the algorithm reads;
//! - `input.rs`, `tcp_ack()`: SACK tagging, cleaning the retransmit queue
//!   with its RTT samples and `pkts_acked`, `in_ack_event`, then cwnd
//!   (`cong_control`, PRR, or `cong_avoid`);
//! - `recovery.rs`, `tcp_fastretrans_alert()` and what it calls: RACK's
//!   loss detection, Recovery, CWR, Loss, undo and F-RTO;
//! - `output.rs`, `tcp_write_xmit()`: transmissions, retransmissions,
//!   pacing, cwnd validation, restart after idle;
//! - `timer.rs`, `tcp_timer.c`: the one timer slot (`icsk_pending`) and
//!   what fires in it: RTO, tail loss probe, RACK reorder timeout.
//!
//! Segments are fixed-size; sequence numbers count segments internally and
//! appear to the algorithm as bytes (`index * mss`), as in the kernel.

mod input;
mod output;
mod recovery;
#[cfg(test)]
mod tests;
mod timer;

use timer::TimerKind;

use kleinrock_cc::ops::Tap;
use kleinrock_cc::sock::TCP_ECN_OK;
use kleinrock_cc::tcp::tcp_set_ca_state;
use kleinrock_cc::{Algorithm, CaState, CongestionControl, Hook, PacingStatus, Sock};
use kleinrock_trace::Recorder;

use super::prr::Prr;
use super::rack::Rack;
use super::rate::RateSampler;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::undo::Undo;
use crate::packet::Wire;
use crate::time::{Time, SEC, US};

/// `FLAG_*` bits of `tcp_ack()`; the first four are passed to
/// `cong_control`.
const FLAG_DATA_ACKED: u32 = 0x04;
const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
const FLAG_DATA_SACKED: u32 = 0x20;
const FLAG_ECE: u32 = 0x40;
/// Never-retransmitted data below `high_seq` was ACKed or SACKed.
const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
/// The ACK carried a D-SACK that was believed.
const FLAG_DSACKING_ACK: u32 = 0x800;
/// The flags this simulator passes to `cong_control`; the others only
/// steer loss recovery.
const CONG_CONTROL_FLAGS: u32 =
    FLAG_DATA_ACKED | FLAG_SND_UNA_ADVANCED | FLAG_DATA_SACKED | FLAG_ECE;

/// How a sender is set up.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Payload bytes per segment.
    pub mss: u32,
    pub init_cwnd: u32,
    pub hz: u32,
    /// Pace every flow at `sk_pacing_rate` (as the fq qdisc would), not only
    /// those whose algorithm asks for pacing.
    pub pace_all: bool,
    /// Send ECN-capable segments.
    pub ecn: bool,
    /// Stop after this many segments (a transfer); `None`: bulk.
    pub limit_segments: Option<u64>,
    /// Receive window, segments.
    pub rwnd_segments: u32,
    /// Restart slow start after an idle period longer than the RTO.
    pub slow_start_after_idle: bool,
    /// Seeds the algorithm's random draws (BBR's gain-cycle phase).
    pub seed: u64,
}

/// Counters for results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmits: u64,
    pub rtos: u64,
    pub tlps: u64,
    pub recoveries: u64,
    pub delivered: u64,
    /// Reductions undone (not in the results: for tests).
    pub undos: u64,
}

/// Where hook calls go: straight to the algorithm, or through a recorder.
enum HookTap {
    Plain,
    Record(Box<Recorder>),
}

impl Tap<Algorithm> for HookTap {
    /// Inlined, so that a plain call is the algorithm's hook itself (the
    /// `Hook` value folds away); recording stays out of line.
    #[inline(always)]
    fn call(&mut self, hook: &Hook, cc: &mut Algorithm, sk: &mut Sock) -> u32 {
        match self {
            HookTap::Plain => hook.call(cc, sk),
            HookTap::Record(r) => record(r, hook, cc, sk),
        }
    }
}

#[cold]
#[inline(never)]
fn record(r: &mut Recorder, hook: &Hook, cc: &mut Algorithm, sk: &mut Sock) -> u32 {
    r.call(hook, cc, sk)
}

/// One flow's sending TCP: the connection as the algorithm sees it (`sk`),
/// the algorithm, and the mechanisms of [`crate::tcp`] that the sender
/// drives between the algorithm's hooks.
pub struct Sender {
    pub flow: u32,
    pub sk: Sock,
    pub cc: Algorithm,
    cfg: SenderConfig,
    tap: HookTap,
    pub sb: Scoreboard,
    pub rtt: RttEstimator,
    pub rate: RateSampler,
    rack: Rack,
    prr: Prr,
    undo: Undo,
    /// F-RTO is sending new data only (`REXMIT_NEW`).
    hold_retransmits: bool,
    /// `high_seq` in segments (`sk.high_seq` in bytes).
    high_seq: u32,
    /// `tp->tlp_high_seq`: `snd_nxt` when a loss probe went out, until its
    /// ACK is judged.
    tlp_high_seq: Option<u32>,
    /// That probe was a retransmission (`tp->tlp_retrans`).
    tlp_retrans: bool,
    /// Current RTO including backoff, µs.
    rto_us: u64,
    /// RTOs since `snd_una` last moved (`icsk_retransmits`).
    retransmits_in_row: u32,
    /// The one timer slot: its deadline and what fires (`icsk_pending`).
    timer: Option<(Time, TimerKind)>,
    /// `tp->cwnd_usage_seq`: the window's use is judged anew once
    /// `snd_una` passes it (`tcp_cwnd_validate()`).
    cwnd_usage_seq: u32,
    /// Nanoseconds per jiffy when HZ divides a second, else 0.
    jiffy_ns: Time,
    /// The last ACK's SACK blocks, sorted (`recv_sack_cache`).
    sack_cache: [(u32, u32); crate::packet::MAX_SACK_BLOCKS],
    sack_cache_len: usize,
    /// Has every segment of a transfer been ACKed?
    pub done_at: Option<Time>,
    stopped: bool,
    /// The last transmission attempt found nothing it could send (no new
    /// data, nothing waiting for retransmission, or the receive window
    /// full): no pacing wakeup until an ACK, a timer or the application
    /// changes that, each of which tries again.
    drained: bool,
    started: bool,
    pub stats: SenderStats,
    /// The RTT sample of the last ACK (for the flow's RTT distribution).
    pub last_rtt_sample: Option<u32>,
}

impl Sender {
    pub fn new(flow: u32, cc: Algorithm, cfg: SenderConfig, recorder: Option<Recorder>) -> Sender {
        let mut sk = Sock::new(cfg.hz);
        sk.mss_cache = cfg.mss;
        sk.snd_cwnd = cfg.init_cwnd;
        let mut cc = cc;
        cc.set_random_seed(cfg.seed ^ (flow as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        Sender {
            flow,
            sk,
            cc,
            tap: match recorder {
                Some(r) => HookTap::Record(Box::new(r)),
                None => HookTap::Plain,
            },
            sb: Scoreboard::default(),
            rtt: RttEstimator::default(),
            rate: RateSampler::default(),
            rack: Rack::default(),
            prr: Prr::default(),
            undo: Undo::default(),
            hold_retransmits: false,
            high_seq: 0,
            tlp_high_seq: None,
            tlp_retrans: false,
            rto_us: super::rtt::RTO_INIT_US,
            retransmits_in_row: 0,
            timer: None,
            cwnd_usage_seq: 0,
            jiffy_ns: if SEC % cfg.hz as u64 == 0 {
                SEC / cfg.hz as u64
            } else {
                0
            },
            sack_cache: [(0, 0); crate::packet::MAX_SACK_BLOCKS],
            sack_cache_len: 0,
            done_at: None,
            stopped: false,
            drained: false,
            started: false,
            cfg,
            stats: SenderStats::default(),
            last_rtt_sample: None,
        }
    }

    /// The recorder, if this sender records its hook calls.
    pub fn take_recorder(&mut self) -> Option<Recorder> {
        match std::mem::replace(&mut self.tap, HookTap::Plain) {
            HookTap::Record(r) => Some(*r),
            HookTap::Plain => None,
        }
    }

    /// Calls one of the algorithm's hooks.
    #[inline(always)]
    fn call(&mut self, hook: Hook) -> u32 {
        self.tap.call(&hook, &mut self.cc, &mut self.sk)
    }

    fn bytes(&self, seg: u32) -> u32 {
        seg.wrapping_mul(self.cfg.mss)
    }

    /// `tcp_mstamp_refresh()`: the socket's clocks (µs, jiffies, ns) read
    /// `now`, the time of the event being handled.
    fn refresh_clock(&mut self, now: Time) {
        let sk = &mut self.sk;
        if sk.tcp_mstamp != now / US || now == 0 {
            sk.set_clock(now / US);
        }
        sk.tcp_clock_cache = now;
    }

    /// Shows the algorithm the scoreboard: the one copy of the sender's
    /// state into [`Sock`]. Everything else an algorithm reads the sender
    /// keeps in `sk` itself (cwnd, srtt, the rate sampler's counters,
    /// `delivered_ce`, the pacing clock); the scoreboard counts segments
    /// by index, and the socket sees them as bytes and counts.
    ///
    /// Called before the first hook of every event, after loss detection,
    /// and after an undo clears the loss marks; in between, the socket
    /// keeps the counts it was last shown. So the `ssthresh` and
    /// `set_state` hooks of a Recovery that RACK starts see the counts as
    /// the ACK found them, without RACK's new marks, where Linux's hooks
    /// would see the marks (recorded traces show them so).
    fn expose(&mut self) {
        let (una, nxt) = (self.bytes(self.sb.una), self.bytes(self.sb.nxt()));
        let sk = &mut self.sk;
        sk.packets_out = self.sb.packets_out();
        sk.snd_una = una;
        sk.snd_nxt = nxt;
        sk.sacked_out = self.sb.sacked_out;
        sk.lost_out = self.sb.lost_out;
        sk.retrans_out = self.sb.retrans_out;
        sk.lost = self.sb.lost;
    }

    /// `high_seq` moves to `snd_nxt`, in segments and in the socket.
    fn set_high_seq(&mut self) {
        self.high_seq = self.sb.nxt();
        self.sk.high_seq = self.bytes(self.high_seq);
    }

    fn set_state(&mut self, s: CaState) {
        tcp_set_ca_state(&mut self.tap, &mut self.cc, &mut self.sk, s);
    }

    fn paced(&self) -> bool {
        self.cfg.pace_all || self.sk.pacing_status != PacingStatus::None
    }

    /// Starts the connection (after the handshake): init, then send.
    pub fn start(&mut self, now: Time, out: &mut impl Wire) {
        self.started = true;
        self.refresh_clock(now);
        self.expose();
        // ECN is negotiated in the handshake, before init sees the socket.
        if self.cfg.ecn {
            self.sk.ecn_flags |= TCP_ECN_OK;
        }
        self.call(Hook::Init);
        if self.cfg.pace_all && self.sk.pacing_status == PacingStatus::None {
            self.sk.pacing_status = PacingStatus::Fq;
        }
        self.update_pacing_rate();
        self.write_xmit(now, out);
    }

    /// The application offers `segments` more to send (a response).
    pub fn offer(&mut self, now: Time, segments: u64, out: &mut impl Wire) {
        self.cfg.limit_segments = Some(self.cfg.limit_segments.unwrap_or(0) + segments);
        self.done_at = None;
        self.refresh_clock(now);
        self.expose();
        self.write_xmit(now, out);
    }

    /// Stops offering new data (a bulk flow's stop time).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    fn has_new_data(&self) -> bool {
        !self.stopped
            && self
                .cfg
                .limit_segments
                .is_none_or(|n| (self.sb.nxt() as u64) < n)
    }

    /// The earliest time this sender needs to be woken: its timer, or the
    /// pacing release of a segment it could send.
    pub fn next_wakeup(&self) -> Option<Time> {
        let t = self.timer.map(|(t, _)| t);
        let next_send = self.sk.tcp_wstamp_ns;
        let pace = (next_send > 0 && self.can_send_something()).then_some(next_send);
        match (t, pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn can_send_something(&self) -> bool {
        let room = self.sb.in_flight() < self.sk.snd_cwnd;
        room && !self.drained && (self.has_new_data() || self.sb.has_lost())
    }
}
