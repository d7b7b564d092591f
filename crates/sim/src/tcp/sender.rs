//! The TCP sender: Linux's `tcp_write_xmit()`, `tcp_ack()` and timers,
//! reduced to what congestion control sees, with the congestion-control
//! algorithm called through its hooks in the kernel's order.
//!
//! Per ACK (`tcp_ack()`): SACK tagging and RACK, cumulative ACK processing
//! with RTT samples and `pkts_acked`, `in_ack_event` (after the
//! retransmit queue is cleaned, as in Linux 6.18), loss-recovery state
//! changes (`ssthresh`, `set_state`), then cwnd: the algorithm's
//! `cong_control`, or PRR while reducing, or `cong_avoid` when growth is
//! allowed; then transmission. Timers share one slot as in Linux
//! (`icsk_pending`): RTO, tail loss probe, or RACK reorder timeout.
//!
//! Segments are fixed-size; sequence numbers count segments internally and
//! appear to the algorithm as bytes (`index * mss`), as in the kernel.

use kleinrock_cc::ops::{Tap, CA_ACK_ECE, CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};
use kleinrock_cc::sock::{after, usecs_to_jiffies, TCP_ECN_OK, TCP_ECN_QUEUE_CWR};
use kleinrock_cc::tcp::{
    tcp_ecn_queue_cwr, tcp_end_cwnd_reduction, tcp_init_cwnd_reduction, tcp_set_ca_state,
    tcp_update_pacing_rate,
};
use kleinrock_cc::{
    AckSample, Algorithm, CaEvent, CaState, CongestionControl, Hook, PacingStatus, RateSample, Sock,
};
use kleinrock_trace::Recorder;

use super::prr::Prr;
use super::rack::Rack;
use super::rate::RateSampler;
use super::rtt::{RttEstimator, RTO_MAX_US, RTO_MIN_US};
use super::scoreboard::{Scoreboard, Seg, EVER_RETRANS, LOST, RETRANS, SACKED};
use super::undo::Undo;
use crate::packet::{Ecn, Packet, Wire, HEADER_BYTES};
use crate::time::{Time, SEC, US};

/// `FLAG_*` bits passed to `cong_control`.
pub const FLAG_DATA_ACKED: u32 = 0x04;
pub const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
pub const FLAG_DATA_SACKED: u32 = 0x20;
pub const FLAG_ECE: u32 = 0x40;
/// Never-retransmitted data below `high_seq` was ACKed or SACKed.
const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
/// The ACK carried a D-SACK that was believed.
const FLAG_DSACKING_ACK: u32 = 0x800;
/// The flags this simulator passes to `cong_control`; the others only
/// steer loss recovery.
const CONG_CONTROL_FLAGS: u32 =
    FLAG_DATA_ACKED | FLAG_SND_UNA_ADVANCED | FLAG_DATA_SACKED | FLAG_ECE;

/// The parts of `block` outside every (disjoint, sorted) `cached` range,
/// written to `out`; returns how many.
fn uncovered(block: (u32, u32), cached: &[(u32, u32)], out: &mut [(u32, u32)]) -> usize {
    let (mut start, end) = block;
    let mut n = 0;
    for &(cs, ce) in cached {
        if ce <= start || cs >= end {
            continue;
        }
        if cs > start {
            out[n] = (start, cs);
            n += 1;
        }
        start = start.max(ce);
        if start >= end {
            return n;
        }
    }
    if start < end {
        out[n] = (start, end);
        n += 1;
    }
    n
}

/// `tcp_in_ack_event()`'s flags. An ACK with SACK blocks or ECE misses
/// header prediction and takes the slow path; any ACK that moves `snd_una`
/// updates the window (`tcp_may_update_window()`).
fn in_ack_flags(advanced: bool, ack: &Packet, ece: bool) -> u32 {
    let mut ev = if advanced { CA_ACK_WIN_UPDATE } else { 0 };
    if ack.nsack > 0 || ece {
        ev |= CA_ACK_SLOWPATH;
        if ece {
            ev |= CA_ACK_ECE;
        }
    }
    ev
}

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

/// The deadline of a loss probe that an ACK arms before its transmissions,
/// which may replace it; computed once they are done (see `on_ack`).
const DEADLINE_LATER: Time = Time::MAX;

/// Which timer holds the single timer slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    Retransmit,
    LossProbe,
    ReorderTimeout,
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
    /// `high_seq` in segments.
    high_seq: u32,
    tlp_high_seq: Option<u32>,
    tlp_retrans: bool,
    /// Current RTO including backoff, µs.
    rto_us: u64,
    retransmits_in_row: u32,
    timer: Option<(Time, TimerKind)>,
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
    /// Called before the hooks of every event, after loss detection, and
    /// after an undo clears the loss marks. So the hooks that loss
    /// recovery calls while it detects (`ssthresh` and `set_state` of a
    /// recovery RACK starts) see the counts as the ACK found them, where
    /// Linux's would see the new marks (traces record them so).
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

    fn jiffies_ns(&self, j: u64) -> Time {
        match self.jiffy_ns {
            0 => j * SEC / self.cfg.hz as u64,
            ns => j * ns,
        }
    }

    fn set_timer(&mut self, now: Time, after_ns: Time, kind: TimerKind) {
        self.timer = Some((now + after_ns, kind));
    }

    // ---- transmission -------------------------------------------------

    /// `tcp_xmit_retransmit_queue()` then `tcp_write_xmit()`:
    /// retransmissions first (unless F-RTO holds them), then new data,
    /// while the window (and the pacing clock) allows.
    fn write_xmit(&mut self, now: Time, out: &mut impl Wire) {
        let mut sent = 0u32;
        let mut cwnd_limited = false;
        let mut rearm = false;
        self.drained = false;
        loop {
            if self.sb.in_flight() >= self.sk.snd_cwnd {
                cwnd_limited = true;
                break;
            }
            if self.paced() && now < self.sk.tcp_wstamp_ns {
                break;
            }
            // The hold is read only when something is lost.
            match self.sb.next_to_retransmit() {
                Some(s) if !self.hold_retransmits => self.retransmit(now, s, out),
                _ => {
                    if !self.has_new_data() || self.sb.packets_out() >= self.cfg.rwnd_segments {
                        self.drained = true;
                        break;
                    }
                    rearm |= self.send_new(now, out);
                }
            }
            sent += 1;
            if self.paced() {
                self.advance_pacing(now);
            }
        }
        if sent > 0 && self.in_cwnd_reduction() {
            self.prr.out += sent;
        }
        if sent > 0 || cwnd_limited {
            self.cwnd_validate(cwnd_limited);
        }
        // The loss probe replaces the RTO that new data re-armed, so the
        // RTO is computed only when no probe is scheduled. Nothing in the
        // loop reads or writes the timer, so it comes out as it would
        // have on the spot.
        if sent > 0 && !self.schedule_loss_probe(now, false) && rearm {
            self.rearm_rto(now);
        }
        if !cwnd_limited
            && !self.has_new_data()
            && sent == 0
            && self.sb.lost_out <= self.sb.retrans_out
        {
            RateSampler::mark_app_limited(&mut self.sk, self.sb.in_flight());
        }
    }

    fn advance_pacing(&mut self, now: Time) {
        let rate = self.sk.pacing_rate.max(1);
        let len = (self.cfg.mss + HEADER_BYTES) as u128;
        let gap = (len * SEC as u128 / rate as u128) as Time;
        self.sk.tcp_wstamp_ns = self.sk.tcp_wstamp_ns.max(now) + gap;
    }

    /// A data segment. `tcp_ecn_send()`: new data is ECT when ECN is on;
    /// retransmissions are not, unless the algorithm needs ECN (DCTCP
    /// must see every packet's mark).
    fn packet(&self, seq: u32, retransmit: bool) -> Packet {
        let mut p = Packet::data(self.flow, seq, self.cfg.mss + HEADER_BYTES);
        if self.cfg.ecn && (!retransmit || self.cc.needs_ecn()) {
            p.ecn = Ecn::Ect;
        }
        p
    }

    /// Sends the next new segment. Returns whether the RTO needs
    /// re-arming (`tcp_event_new_data_sent()`: the only flight, or a loss
    /// probe pending); the caller does it.
    #[must_use]
    fn send_new(&mut self, now: Time, out: &mut impl Wire) -> bool {
        let now_us = now / US;
        let prior_packets = self.sb.packets_out();
        if self.sb.in_flight() == 0 {
            self.restart_after_idle();
        }
        let stamp = self.rate.on_send(&mut self.sk, now_us, prior_packets);
        let seq = self.sb.nxt();
        self.sb.push(Seg::new(now_us, stamp));
        let mut p = self.packet(seq, false);
        // tcp_ecn_send(): a reduction queued CWR (the core's, or one an
        // algorithm made on its own, like CDG's cwr=own).
        if self.sk.ecn_flags & TCP_ECN_QUEUE_CWR != 0 {
            p.cwr = true;
            self.sk.ecn_flags &= !TCP_ECN_QUEUE_CWR;
        }
        out.send(p);
        self.stats.segments_sent += 1;
        self.sk.lsndtime = self.sk.jiffies;
        prior_packets == 0 || matches!(self.timer, Some((_, TimerKind::LossProbe)))
    }

    /// Sending from an empty pipe: `CA_EVENT_TX_START`, after restarting
    /// slow start if idle for longer than an RTO (`tcp_cwnd_restart()`:
    /// halve cwnd per RTO idle, not below the initial window).
    fn restart_after_idle(&mut self) {
        self.expose();
        let idle_j = self.sk.jiffies.wrapping_sub(self.sk.lsndtime) as i32;
        let rto_j = usecs_to_jiffies(self.rto_us as u32, self.cfg.hz) as i32;
        if self.cfg.slow_start_after_idle
            && self.stats.segments_sent > 0
            && !self.cc.has_cong_control()
            && idle_j > rto_j
        {
            self.call(Hook::CwndEvent(CaEvent::CwndRestart));
            self.sk.snd_ssthresh = self.sk.current_ssthresh();
            let restart = self.cfg.init_cwnd.min(self.sk.snd_cwnd);
            let mut delta = idle_j;
            let mut cwnd = self.sk.snd_cwnd;
            loop {
                delta -= rto_j;
                if delta <= 0 || cwnd <= restart {
                    break;
                }
                cwnd >>= 1;
            }
            self.sk.snd_cwnd = cwnd.max(restart);
            self.sk.snd_cwnd_stamp = self.sk.jiffies;
        }
        self.call(Hook::CwndEvent(CaEvent::TxStart));
    }

    /// `tcp_retransmit_skb()`: a retransmission of loss recovery, which
    /// undo must see D-SACKed (or the episode's first, for its stamp).
    fn retransmit(&mut self, now: Time, seq: u32, out: &mut impl Wire) {
        self.resend(now, seq, out);
        self.undo.on_retransmit(now / US);
    }

    /// `__tcp_retransmit_skb()`: sends `seq` again (a loss probe calls
    /// it directly).
    fn resend(&mut self, now: Time, seq: u32, out: &mut impl Wire) {
        let now_us = now / US;
        let stamp = self
            .rate
            .on_send(&mut self.sk, now_us, self.sb.packets_out());
        self.sb.mark_retransmitted(seq, now_us, stamp);
        out.send(self.packet(seq, true));
        self.stats.segments_sent += 1;
        self.stats.retransmits += 1;
    }

    /// `tcp_cwnd_validate()`: remember whether the last window was
    /// cwnd-limited, and the largest flight otherwise.
    fn cwnd_validate(&mut self, cwnd_limited: bool) {
        let sk = &mut self.sk;
        let nxt = self.sb.nxt();
        if self.sb.una >= self.cwnd_usage_seq
            || cwnd_limited
            || (!sk.is_cwnd_limited && self.sb.packets_out() > sk.max_packets_out)
        {
            sk.is_cwnd_limited = cwnd_limited;
            sk.max_packets_out = self.sb.packets_out();
            self.cwnd_usage_seq = nxt;
        }
        if sk.is_cwnd_limited() {
            sk.snd_cwnd_stamp = sk.jiffies;
        }
    }

    // ---- timers ---------------------------------------------------------

    /// `tcp_rearm_rto()`.
    fn rearm_rto(&mut self, now: Time) {
        if self.sb.packets_out() == 0 {
            if matches!(self.timer, Some((_, TimerKind::Retransmit))) {
                self.timer = None;
            }
            return;
        }
        let mut rto_us = self.rto_us;
        if matches!(
            self.timer,
            Some((_, TimerKind::ReorderTimeout | TimerKind::LossProbe))
        ) {
            // Keep the RTO anchored at the head's transmission.
            let head_tx = self.sb.get(self.sb.una).tx_us;
            let delta = (head_tx + self.rto_us) as i64 - (now / US) as i64;
            rto_us = delta.max(1) as u64;
        }
        let j = usecs_to_jiffies(rto_us.min(u32::MAX as u64) as u32, self.cfg.hz);
        self.set_timer(now, self.jiffies_ns(j), TimerKind::Retransmit);
    }

    /// `tcp_schedule_loss_probe()`: probe a possible tail loss after about
    /// two RTTs, when open and not waiting on a probe already.
    fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
        if !self.may_probe() {
            return false;
        }
        let at = self.loss_probe_deadline(now, advancing_rto, self.sb.packets_out());
        self.timer = Some((at, TimerKind::LossProbe));
        true
    }

    /// Would `tcp_schedule_loss_probe()` arm the probe?
    fn may_probe(&self) -> bool {
        self.sb.packets_out() > 0 && matches!(self.sk.icsk_ca_state, CaState::Open | CaState::Cwr)
    }

    /// When a loss probe scheduled at `now` with `packets_out` segments
    /// out fires.
    fn loss_probe_deadline(&self, now: Time, advancing_rto: bool, packets_out: u32) -> Time {
        let hz = self.cfg.hz;
        let mut timeout_j = if self.sk.srtt_us != 0 {
            let base = usecs_to_jiffies(self.sk.srtt_us >> 2, hz);
            if packets_out == 1 {
                base + usecs_to_jiffies(RTO_MIN_US, hz)
            } else {
                base + 2
            }
        } else {
            usecs_to_jiffies(1_000_000, hz)
        };
        let rto_delta_us = if advancing_rto {
            self.rto_us as i64
        } else {
            let head_tx = self.sb.get(self.sb.una).tx_us;
            (head_tx + self.rto_us) as i64 - (now / US) as i64
        };
        if rto_delta_us > 0 {
            timeout_j = timeout_j.min(usecs_to_jiffies(
                rto_delta_us.min(u32::MAX as i64) as u32,
                hz,
            ));
        }
        now + self.jiffies_ns(timeout_j)
    }

    /// Called when the world's timer event for this flow fires.
    pub fn on_timer(&mut self, now: Time, out: &mut impl Wire) {
        if let Some((at, kind)) = self.timer {
            if at <= now {
                self.timer = None;
                self.refresh_clock(now);
                self.expose();
                match kind {
                    TimerKind::Retransmit => self.on_rto(now, out),
                    TimerKind::LossProbe => self.on_loss_probe(now, out),
                    TimerKind::ReorderTimeout => self.on_reorder_timeout(now, out),
                }
                return;
            }
        }
        if self.paced() && now >= self.sk.tcp_wstamp_ns {
            self.refresh_clock(now);
            self.expose();
            self.write_xmit(now, out);
        }
    }

    /// `tcp_retransmit_timer()` and `tcp_enter_loss()`.
    fn on_rto(&mut self, now: Time, out: &mut impl Wire) {
        if self.sb.packets_out() == 0 {
            return;
        }
        self.stats.rtos += 1;
        let state = self.sk.icsk_ca_state;
        let reduce = state <= CaState::Disorder
            || !after(self.high_seq, self.sb.una)
            || (state == CaState::Loss && self.retransmits_in_row == 0);
        // Every segment not SACKed is presumed lost.
        for seq in self.sb.una..self.sb.nxt() {
            self.sb.mark_lost(seq);
        }
        self.expose();
        if reduce {
            self.undo.prior_ssthresh = self.sk.current_ssthresh();
            self.sk.prior_cwnd = self.sk.snd_cwnd;
            self.sk.snd_ssthresh = self.call(Hook::Ssthresh);
            self.call(Hook::CwndEvent(CaEvent::Loss));
            self.init_undo();
        }
        // F-RTO (RFC 5682 3.1 step 1) checks a timeout that starts an
        // episode, or recurs on the same snd_una (3.2).
        self.undo.frto = state < CaState::Recovery || self.retransmits_in_row > 0;
        self.sk.snd_cwnd = self.sb.in_flight() + 1;
        self.sk.snd_cwnd_cnt = 0;
        self.sk.snd_cwnd_stamp = self.sk.jiffies;
        self.set_state(CaState::Loss);
        self.set_high_seq();
        self.tlp_high_seq = None;
        tcp_ecn_queue_cwr(&mut self.sk);
        // Retransmit the head now, back off, re-arm.
        let head = self.sb.una;
        if self.sb.get(head).has(LOST) && !self.sb.get(head).has(SACKED) {
            self.retransmit(now, head, out);
        }
        self.retransmits_in_row += 1;
        self.rto_us = (self.rto_us * 2).min(RTO_MAX_US);
        let j = usecs_to_jiffies(self.rto_us as u32, self.cfg.hz);
        self.set_timer(now, self.jiffies_ns(j), TimerKind::Retransmit);
        self.write_xmit(now, out);
    }

    /// `tcp_send_loss_probe()`: new data if there is any, else the last
    /// segment again.
    fn on_loss_probe(&mut self, now: Time, out: &mut impl Wire) {
        if self.tlp_high_seq.is_none() && self.sb.packets_out() > 0 {
            self.tlp_retrans = false;
            let probed = if self.has_new_data() && self.sb.packets_out() < self.cfg.rwnd_segments {
                // The RTO is re-armed below, from no timer.
                let _ = self.send_new(now, out);
                true
            } else {
                let last = self.sb.nxt() - 1;
                let s = *self.sb.get(last);
                if !s.has(SACKED) && !s.has(RETRANS) {
                    self.resend(now, last, out);
                    self.tlp_retrans = true;
                    true
                } else {
                    false
                }
            };
            if probed {
                self.stats.tlps += 1;
                self.tlp_high_seq = Some(self.sb.nxt());
                self.timer = None;
            }
        }
        self.rearm_rto(now);
    }

    /// `tcp_rack_reo_timeout()`.
    fn on_reorder_timeout(&mut self, now: Time, out: &mut impl Wire) {
        let prior_lost = self.sb.lost_out;
        self.rack_mark_lost(now);
        if self.sb.lost_out > prior_lost
            && matches!(self.sk.icsk_ca_state, CaState::Open | CaState::Disorder)
        {
            self.enter_recovery(false);
        }
        self.write_xmit(now, out);
        if self.timer.is_none() {
            self.rearm_rto(now);
        }
    }

    /// `tcp_rack_mark_lost()`: scan if RACK advanced; arm the reorder timer
    /// for segments not yet overdue.
    fn rack_mark_lost(&mut self, now: Time) {
        if !self.rack.advanced {
            return;
        }
        self.rack.advanced = false;
        let in_recovery = self.sk.icsk_ca_state >= CaState::Recovery;
        let reo = Rack::reo_wnd(
            in_recovery,
            self.sb.sacked_out,
            self.sk.min_rtt_us,
            self.sk.srtt_us,
        );
        let (timeout_us, _) = self.rack.detect_loss(&mut self.sb, now / US, reo);
        if timeout_us > 0 {
            let j = usecs_to_jiffies(timeout_us, self.cfg.hz) + 2;
            self.set_timer(now, self.jiffies_ns(j), TimerKind::ReorderTimeout);
        }
    }

    // ---- ACK processing ---------------------------------------------------

    fn in_cwnd_reduction(&self) -> bool {
        matches!(self.sk.icsk_ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_init_cwnd_reduction()`, with the core's own pieces: the
    /// episode's end in segments, no probe outstanding, PRR from zero.
    fn init_cwnd_reduction(&mut self) {
        self.set_high_seq();
        self.tlp_high_seq = None;
        self.prr = Prr::default();
        let (tap, cc) = (&mut self.tap, &mut self.cc);
        tcp_init_cwnd_reduction(&mut self.sk, |sk| tap.call(&Hook::Ssthresh, cc, sk));
    }

    /// The algorithm entered CWR itself (`tcp_enter_cwr()` from CDG's
    /// `cong_avoid`): the socket fields are done; reset the core's own
    /// reduction state as `tcp_init_cwnd_reduction()` would have.
    fn adopt_cwr_from_hook(&mut self) {
        self.undo.forbid();
        self.set_high_seq();
        self.tlp_high_seq = None;
        self.prr = Prr::default();
    }

    /// `tcp_end_cwnd_reduction()`: undone if the marker is gone.
    fn end_cwnd_reduction(&mut self) {
        let undo_marked = self.undo.is_marked();
        tcp_end_cwnd_reduction(&mut self.tap, &mut self.cc, &mut self.sk, undo_marked);
    }

    /// `tcp_init_undo()`: a loss probe still in flight may be D-SACKed too.
    fn init_undo(&mut self) {
        let probe = self.tlp_high_seq.is_some() && self.tlp_retrans;
        self.undo.init(self.sb.una, self.sb.retrans_out, probe);
    }

    /// `tcp_any_retrans_done()`: a retransmission in flight, or the head
    /// ever retransmitted.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0
            || (self.sb.packets_out() > 0 && self.sb.get(self.sb.una).has(EVER_RETRANS))
    }

    /// `tcp_retrans_stamp_cleanup()`.
    fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.undo.clear_stamp();
        }
    }

    /// `tcp_enter_recovery()`: the fast retransmit starts the episode's
    /// clock; an ECE reduction is never undone.
    fn enter_recovery(&mut self, ece: bool) {
        self.retrans_stamp_cleanup();
        self.undo.prior_ssthresh = 0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            if !ece {
                self.undo.prior_ssthresh = self.sk.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.stats.recoveries += 1;
        self.set_state(CaState::Recovery);
    }

    /// `tcp_check_dsack()`, `tcp_dsack_seen()` and the D-SACK accounting
    /// of `tcp_sacktag_one()`: is the ACK's first block a D-SACK (below
    /// the cumulative ACK, or inside the next block), and which
    /// retransmissions does it show needless? Runs before the cumulative
    /// ACK is processed: `sb.una` is still `prior_snd_una`.
    #[cold]
    fn check_dsack(&mut self, ack: &Packet) -> bool {
        let blocks = ack.sack_blocks();
        let (start, end) = blocks[0];
        let inside_next = blocks
            .get(1)
            .is_some_and(|&(s1, e1)| start >= s1 && end <= e1);
        if !(start < ack.seq || inside_next) || end <= start {
            return false;
        }
        let max_window = self.cfg.rwnd_segments;
        if !self
            .undo
            .dsack_seen(end - start, max_window, self.stats.retransmits)
        {
            return false;
        }
        let prior_una = self.sb.una;
        if end <= prior_una {
            // Data already ACKed: count the whole block.
            self.undo.on_dsacked(end, end - start);
        } else if self
            .undo
            .dsack_block_valid(start, end, ack.seq, self.sb.nxt(), max_window)
        {
            for seq in start.max(prior_una)..end {
                if self.sb.get(seq).has(EVER_RETRANS) {
                    self.undo.on_dsacked(seq + 1, 1);
                }
            }
        }
        true
    }

    /// `tcp_sacktag_write_queue()`: marks newly SACKed segments, blocks in
    /// sequence order as Linux sorts them; a D-SACK is the first block
    /// only. Records the first and last transmit times of newly SACKed,
    /// never retransmitted segments in `sackt`.
    fn sacktag(
        &mut self,
        now_us: u64,
        ack: &Packet,
        rs: &mut RateSample,
        sackt: &mut Option<(u64, u64)>,
        flag: &mut u32,
    ) {
        if ack.dsack && self.check_dsack(ack) {
            *flag |= FLAG_DSACKING_ACK;
        }
        let mut blocks = [(0u32, 0u32); crate::packet::MAX_SACK_BLOCKS];
        let mut nblocks = 0;
        for (i, &b) in ack.sack_blocks().iter().enumerate() {
            if !(ack.dsack && i == 0) {
                blocks[nblocks] = b;
                nblocks += 1;
            }
        }
        blocks[..nblocks].sort_unstable();
        // Skip what the previous ACK's blocks already covered (Linux's
        // `recv_sack_cache`): a receiver repeats its blocks, growing them
        // at one edge, so each ACK walks only the newly SACKed segments.
        let mut pieces = [(0u32, 0u32); 4 * crate::packet::MAX_SACK_BLOCKS];
        let mut npieces = 0;
        for &b in &blocks[..nblocks] {
            npieces += uncovered(
                b,
                &self.sack_cache[..self.sack_cache_len],
                &mut pieces[npieces..],
            );
        }
        // The whole array: a copy of fixed size is a few moves, one of
        // `nblocks` a call to memcpy.
        self.sack_cache = blocks;
        self.sack_cache_len = nblocks;
        for &(start, end) in &pieces[..npieces] {
            for seq in start.max(self.sb.una)..end.min(self.sb.nxt()) {
                if self.sb.get(seq).has(SACKED) {
                    continue;
                }
                let s = *self.sb.get(seq);
                let retrans = s.has(EVER_RETRANS);
                self.sb.mark_sacked(seq);
                self.sk.delivered += 1;
                let mut stamp = s.stamp();
                self.rate
                    .on_delivered(rs, &mut stamp, s.tx_us, seq + 1, retrans, true);
                self.sb.get_mut(seq).set_stamp(stamp);
                self.rack.advance(
                    now_us,
                    s.tx_us,
                    seq + 1,
                    s.has(RETRANS) || retrans,
                    self.sk.min_rtt_us,
                );
                if !retrans {
                    let first = sackt.map_or(s.tx_us, |(f, _)| f);
                    *sackt = Some((first, s.tx_us));
                    if seq < self.high_seq {
                        *flag |= FLAG_ORIG_SACK_ACKED;
                    }
                }
                *flag |= FLAG_DATA_SACKED;
            }
        }
    }

    /// Processes one ACK.
    pub fn on_ack(&mut self, now: Time, ack: &Packet, out: &mut impl Wire) {
        if !self.started {
            return;
        }
        let now_us = now / US;
        let cum = ack.seq;
        if cum < self.sb.una || cum > self.sb.nxt() {
            return; // old or impossible
        }
        let prior_una = self.sb.una;
        let prior_delivered = self.sk.delivered;
        let prior_lost = self.sb.lost;
        let mut rs = RateSample {
            rtt_us: -1,
            prior_in_flight: self.sb.in_flight(),
            ..RateSample::default()
        };
        let mut flag = 0u32;
        let ece = ack.ece && self.cfg.ecn;
        let prior_packets = self.sb.packets_out();
        // Transmit times of the first and last segments newly SACKed and
        // never retransmitted, and of the first and last cumulatively
        // ACKed ones never retransmitted nor SACKed before
        // (`first_sackt`, `last_sackt`, `first_ackt`, `last_ackt`).
        let mut sackt: Option<(u64, u64)> = None;
        let mut ackt: Option<(u64, u64)> = None;

        if ack.nsack > 0 {
            self.sacktag(now_us, ack, &mut rs, &mut sackt, &mut flag);
        } else {
            // No blocks: nothing to tag, and nothing cached for the next ACK.
            self.sack_cache_len = 0;
        }
        if ece {
            flag |= FLAG_ECE;
            self.sk.delivered_ce += self.sk.delivered - prior_delivered;
        }

        // Cumulative ACK: tcp_clean_rtx_queue().
        let mut acked_pkts = 0u32;
        let mut any_retrans_acked = false;
        if self.undo.frto {
            flag |= self.orig_acked(cum);
        }
        while self.sb.una < cum {
            let seq = self.sb.una;
            let s = self.sb.pop();
            acked_pkts += 1;
            if s.has(EVER_RETRANS) {
                any_retrans_acked = true;
            } else if !s.has(SACKED) {
                let first = ackt.map_or(s.tx_us, |(f, _)| f);
                ackt = Some((first, s.tx_us));
            }
            if !s.has(SACKED) {
                let ever = s.has(EVER_RETRANS);
                self.sk.delivered += 1;
                self.sk.delivered_ce += ece as u32;
                // The stamp is a copy: the segment has left the scoreboard,
                // and only a SACK's delivery (not this) clears a stamp.
                self.rate
                    .on_delivered(&mut rs, &mut s.stamp(), s.tx_us, seq + 1, ever, false);
                self.rack
                    .advance(now_us, s.tx_us, seq + 1, ever, self.sk.min_rtt_us);
            }
        }
        if cum > prior_una {
            flag |= FLAG_SND_UNA_ADVANCED | FLAG_DATA_ACKED;
            self.retransmits_in_row = 0;
        }
        // tcp_ack_update_rtt(): the RTO's sample from the oldest segment
        // (Karn: none if a retransmission was ACKed), the algorithm's from
        // the newest; SACKed segments take precedence for the latter.
        let since = |t: u64| now_us.saturating_sub(t) as u32;
        let (mut seq_rtt, mut ca_rtt) = match ackt {
            Some((first, last)) if !any_retrans_acked => (Some(since(first)), Some(since(last))),
            _ => (None, None),
        };
        if let Some((first, last)) = sackt {
            seq_rtt = seq_rtt.or(Some(since(first)));
            ca_rtt = Some(since(last));
        }
        if let Some(m) = seq_rtt {
            let (una, nxt) = (self.bytes(self.sb.una), self.bytes(self.sb.nxt()));
            self.rtt.sample(&mut self.sk.srtt_us, m, una, nxt);
            self.rto_us = self.rtt.rto_us(self.sk.srtt_us);
            if let Some(c) = ca_rtt {
                self.sk.min_rtt_us = self.sk.min_rtt_us.min(c.max(1));
            }
        }
        if let Some(c) = ca_rtt {
            rs.rtt_us = c as i64;
            self.last_rtt_sample = Some(c);
        }
        let delivered = self.sk.delivered - prior_delivered;
        self.refresh_clock(now);
        self.expose();
        if prior_packets > 0 {
            let sample = AckSample {
                pkts_acked: acked_pkts,
                rtt_us: ca_rtt.map_or(-1, |r| r as i32),
                in_flight: self
                    .cfg
                    .mss
                    .wrapping_mul(self.sk.delivered.wrapping_sub(rs.prior_delivered)),
            };
            self.call(Hook::PktsAcked(sample));
        }
        self.call(Hook::InAckEvent(in_ack_flags(cum > prior_una, ack, ece)));
        // tcp_set_xmit_timer(): a TLP, else the RTO, from now. Until this
        // ACK's transmissions are done, only the timer's kind is read
        // (`send_new`, `rearm_rto`), and a transmission of new data under
        // a probe re-arms the timer, so the probe's deadline is computed
        // at the end, if it is still the timer. Its inputs are as they
        // are here: nothing in between changes srtt or the RTO, and the
        // only change to packets_out (new data) replaces the probe.
        let probe_from = if cum <= prior_una {
            None
        } else if self.may_probe() {
            self.timer = Some((DEADLINE_LATER, TimerKind::LossProbe));
            Some(self.sb.packets_out())
        } else {
            self.rearm_rto(now);
            None
        };
        if self.sb.packets_out() == 0 {
            self.timer = None;
        }

        self.process_tlp_ack(cum, ack.dsack, flag);
        // tcp_ack_is_dubious(): only a duplicate, an ACK with news of loss
        // or congestion (new SACKs, a D-SACK, ECE), or any ACK outside the
        // Open state goes through loss recovery.
        let dubious = cum == prior_una
            || flag & (FLAG_DATA_SACKED | FLAG_ECE) != 0
            || ack.dsack
            || self.sk.icsk_ca_state != CaState::Open;
        // A duplicate: nothing ACKed, no window update, no D-SACK.
        let dupack = cum == prior_una && flag & FLAG_DSACKING_ACK == 0;
        let frto_new = dubious && self.fastretrans_alert(now, ece, flag, dupack);

        self.stats.delivered += delivered as u64;
        let lost = self.sb.lost.wrapping_sub(prior_lost);
        self.rate
            .generate(&mut self.sk, &mut rs, now_us, delivered, lost);
        if dubious {
            self.expose();
        }
        self.cong_control(cum, flag & CONG_CONTROL_FLAGS, delivered, &rs);
        if self
            .cfg
            .limit_segments
            .is_some_and(|n| self.sb.una as u64 >= n)
            && self.done_at.is_none()
        {
            self.done_at = Some(now);
            self.timer = None;
        }
        if frto_new {
            self.frto_xmit(now, out);
        } else {
            self.write_xmit(now, out);
        }
        if let (Some(packets_out), Some((DEADLINE_LATER, TimerKind::LossProbe))) =
            (probe_from, self.timer)
        {
            let at = self.loss_probe_deadline(now, true, packets_out);
            self.timer = Some((at, TimerKind::LossProbe));
        }
    }

    /// `tcp_clean_rtx_queue()`'s FLAG_ORIG_SACK_ACKED: does the cumulative
    /// ACK up to `cum` cover a segment below `high_seq` that was never
    /// retransmitted nor SACKed? Only F-RTO reads it, so it is computed
    /// only then, before the segments leave the scoreboard.
    #[cold]
    fn orig_acked(&self, cum: u32) -> u32 {
        let orig = (self.sb.una..cum.min(self.high_seq))
            .any(|seq| self.sb.get(seq).flags & (EVER_RETRANS | SACKED) == 0);
        if orig {
            FLAG_ORIG_SACK_ACKED
        } else {
            0
        }
    }

    /// `tcp_xmit_recovery()` with `REXMIT_NEW` (F-RTO step 2.b): new
    /// data, and retransmissions only if none could go. Rare, so kept out
    /// of the ACK path.
    #[cold]
    #[inline(never)]
    fn frto_xmit(&mut self, now: Time, out: &mut impl Wire) {
        self.hold_retransmits = true;
        self.write_xmit(now, out);
        self.hold_retransmits = false;
        if self.sb.nxt() <= self.high_seq {
            self.undo.frto = false;
            self.write_xmit(now, out);
        }
    }

    /// `tcp_process_tlp_ack()`: a probe whose ACK shows it repaired a loss
    /// reduces cwnd once; one whose original arrived too (a D-SACK, or a
    /// pure duplicate ACK) does not.
    fn process_tlp_ack(&mut self, cum: u32, dsack: bool, flag: u32) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if cum < high {
            return;
        }
        if !self.tlp_retrans || dsack {
            // New data was probed, or both copies arrived (FLAG_DSACK_TLP).
            self.tlp_high_seq = None;
        } else if cum > high {
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
        } else if flag & (FLAG_SND_UNA_ADVANCED | FLAG_DATA_SACKED) == 0 {
            self.tlp_high_seq = None;
        }
    }

    /// `tcp_try_keep_open()`: back to Open, or Disorder while SACKed, lost
    /// or retransmitted segments are outstanding.
    fn try_keep_open(&mut self) {
        let state = if self.sb.sacked_out + self.sb.lost_out > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.sk.icsk_ca_state != state {
            self.set_state(state);
            self.set_high_seq();
        }
    }

    /// `tcp_fastretrans_alert()`, reduced to RACK-based detection.
    /// Returns true when F-RTO asks for new data instead of
    /// retransmissions (`REXMIT_NEW`).
    fn fastretrans_alert(&mut self, now: Time, ece: bool, flag: u32, dupack: bool) -> bool {
        if ece {
            // ECE proves the congestion: no undo restores cwnd.
            self.undo.prior_ssthresh = 0;
        }
        // State exits: high_seq fully ACKed.
        let entry = self.sk.icsk_ca_state;
        if entry == CaState::Open {
            self.undo.clear_stamp();
        } else if self.sb.una >= self.high_seq {
            match entry {
                CaState::Cwr if self.sb.una != self.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_state(CaState::Open);
                }
                CaState::Recovery => {
                    self.try_undo_recovery();
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        let mut frto_new = false;
        let in_recovery = self.sk.icsk_ca_state == CaState::Recovery;
        match self.sk.icsk_ca_state {
            CaState::Recovery => {
                if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_partial() {
                    return false;
                }
                if self.try_undo_dsack() {
                    self.try_to_open(ece);
                }
            }
            CaState::Loss => frto_new = self.process_loss(flag, dupack),
            CaState::Open | CaState::Disorder => {
                self.try_undo_dsack();
            }
            CaState::Cwr => {}
        }
        // (After an undo in Recovery, tcp_try_to_open() has seen the ECE.)
        if ece && !in_recovery && matches!(self.sk.icsk_ca_state, CaState::Open | CaState::Disorder)
        {
            // One reduction per window of ECN echoes.
            self.enter_cwr();
        }
        self.rack_mark_lost(now);
        match self.sk.icsk_ca_state {
            // Recovery undone: a new episode only if loss is evident.
            CaState::Open | CaState::Disorder | CaState::Cwr
                if in_recovery && self.sb.lost_out > 0 =>
            {
                self.enter_recovery(ece)
            }
            _ if in_recovery => {}
            CaState::Open | CaState::Disorder => {
                if self.sb.lost_out > 0 {
                    self.enter_recovery(ece);
                } else {
                    self.retrans_stamp_cleanup();
                    let want = if self.sb.sacked_out > 0 || self.sb.retrans_out > 0 {
                        CaState::Disorder
                    } else {
                        CaState::Open
                    };
                    if want != self.sk.icsk_ca_state {
                        self.set_state(want);
                    }
                }
            }
            CaState::Cwr if self.sb.lost_out > 0 => self.enter_recovery(ece),
            _ => {}
        }
        frto_new
    }

    /// `tcp_enter_cwr()`: a reduction that is never undone.
    fn enter_cwr(&mut self) {
        self.undo.forbid();
        if self.sk.icsk_ca_state < CaState::Cwr {
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
        }
    }

    /// `tcp_try_to_open()`, after an undo in Recovery.
    fn try_to_open(&mut self, ece: bool) {
        self.retrans_stamp_cleanup();
        if ece {
            self.enter_cwr();
        }
        if self.sk.icsk_ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    /// `tcp_undo_cwnd_reduction()`: the algorithm restores cwnd
    /// (`undo_cwnd`) and ssthresh returns to what it was, unless ECN
    /// forbade it; after an RTO or a partial undo the segments marked
    /// lost are in flight after all.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            self.sb.unmark_lost();
            self.expose();
        }
        if self.undo.prior_ssthresh != 0 {
            self.sk.snd_cwnd = self.call(Hook::UndoCwnd);
            if self.undo.prior_ssthresh > self.sk.snd_ssthresh {
                self.sk.snd_ssthresh = self.undo.prior_ssthresh;
                // tcp_ecn_withdraw_cwr()
                self.sk.ecn_flags &= !TCP_ECN_QUEUE_CWR;
            }
        }
        self.sk.snd_cwnd_stamp = self.sk.jiffies;
        self.undo.undone();
        // Have RACK look at the segments again.
        self.rack.advanced = true;
        self.stats.undos += 1;
    }

    /// `tcp_try_undo_recovery()`: at the end of Recovery or Loss, undo if
    /// every retransmission was needless; back to Open either way.
    /// (`tp->rack.reo_wnd_persist` is not kept: RACK's window does not
    /// adapt here.)
    fn try_undo_recovery(&mut self) {
        if self.undo.may_undo() {
            self.undo_cwnd_reduction(false);
        }
        self.set_state(CaState::Open);
    }

    /// `tcp_try_undo_dsack()`: D-SACKs covered every retransmission.
    fn try_undo_dsack(&mut self) -> bool {
        if self.undo.all_dsacked() {
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial()`: a partial ACK in Recovery before any
    /// retransmission was sent: the hole was filled by a delayed segment.
    /// True while retransmissions are still out: stop processing the ACK
    /// (clock out new data, mark nothing more lost).
    fn try_undo_partial(&mut self) -> bool {
        if self.undo.is_marked() && self.undo.packet_delayed() {
            if self.sb.retrans_out > 0 {
                return true;
            }
            self.retrans_stamp_cleanup();
            self.undo_cwnd_reduction(true);
            self.try_keep_open();
        }
        false
    }

    /// `tcp_try_undo_loss()`: undo an RTO's reduction, on a partial ACK
    /// if `tcp_may_undo()`, or because F-RTO found it spurious.
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if frto_undo || self.undo.may_undo() {
            self.undo_cwnd_reduction(true);
            self.retransmits_in_row = 0;
            self.set_state(CaState::Open);
            return true;
        }
        false
    }

    /// `tcp_process_loss()` with F-RTO (RFC 5682 3.1, SACK-enhanced):
    /// after an RTO's retransmission is ACKed, send new data; if the next
    /// ACK covers data never retransmitted, the timeout was spurious.
    /// Returns true to send new data instead of retransmissions.
    fn process_loss(&mut self, flag: u32, dupack: bool) -> bool {
        let new = self.frto_process_loss(flag, dupack);
        if self.sk.icsk_ca_state != CaState::Loss {
            // The kernel leaves tp->frto set, to be read only in Loss;
            // cleared here, it says "in Loss and checking" by itself.
            self.undo.frto = false;
        }
        new
    }

    fn frto_process_loss(&mut self, flag: u32, dupack: bool) -> bool {
        let recovered = self.sb.una >= self.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return false;
        }
        if self.undo.frto {
            // Step 3.b: not everything was lost.
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                return false;
            }
            if self.sb.nxt() > self.high_seq {
                // Step 3.a: the new data was SACKed or dup-ACKed, the
                // loss was real.
                if flag & FLAG_DATA_SACKED != 0 || dupack {
                    self.undo.frto = false;
                }
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 && !recovered {
                self.set_high_seq();
                // Step 2.b: new data if the window allows, else fall back
                // to conventional recovery.
                if self.has_new_data() && self.sb.packets_out() < self.cfg.rwnd_segments {
                    return true;
                }
                self.undo.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery();
        }
        false
    }

    /// `tcp_cong_control()`.
    fn cong_control(&mut self, cum: u32, flag: u32, delivered: u32, rs: &RateSample) {
        let ack = self.bytes(cum);
        if self.cc.has_cong_control() {
            self.call(Hook::CongControl { ack, flag, rs: *rs });
        } else if self.in_cwnd_reduction() {
            let in_flight = self.sb.in_flight();
            let lost = rs.losses.max(0) as u32;
            if let Some(c) = self.prr.cwnd(
                self.sk.snd_ssthresh,
                self.sk.prior_cwnd,
                in_flight,
                delivered,
                lost,
                flag & FLAG_SND_UNA_ADVANCED != 0,
            ) {
                self.sk.snd_cwnd = c;
            }
        } else if flag & FLAG_DATA_ACKED != 0 {
            // tcp_may_raise_cwnd(): only on in-order delivery (this
            // simulator never raises tp->reordering above the default), and
            // even when the ACK newly delivered nothing (it covered data
            // SACKed before): cong_avoid(ack, 0) still runs.
            let prior_state = self.sk.icsk_ca_state;
            self.call(Hook::CongAvoid {
                ack,
                acked: delivered,
            });
            if prior_state < CaState::Cwr && self.sk.icsk_ca_state == CaState::Cwr {
                self.adopt_cwr_from_hook();
            }
        }
        self.update_pacing_rate();
    }

    /// `tcp_update_pacing_rate()`, unless the algorithm paces itself.
    fn update_pacing_rate(&mut self) {
        if !self.cc.has_cong_control() {
            tcp_update_pacing_rate(&mut self.sk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;
    use kleinrock_cc::sock::TCP_INFINITE_SSTHRESH;
    use std::path::{Path, PathBuf};

    fn pieces(block: (u32, u32), cached: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let mut out = [(0, 0); 8];
        let n = uncovered(block, cached, &mut out);
        out[..n].to_vec()
    }

    #[test]
    fn the_sack_cache_leaves_only_new_ranges() {
        assert_eq!(pieces((5, 10), &[]), [(5, 10)]);
        // A block grown at its right edge: only the growth is new.
        assert_eq!(pieces((5, 11), &[(5, 10)]), [(10, 11)]);
        assert_eq!(pieces((5, 10), &[(5, 10)]), []);
        // Grown at both edges, and a block merging two cached ones.
        assert_eq!(pieces((3, 12), &[(5, 10)]), [(3, 5), (10, 12)]);
        assert_eq!(
            pieces((0, 20), &[(2, 4), (8, 9)]),
            [(0, 2), (4, 8), (9, 20)]
        );
        // Disjoint cache entries change nothing.
        assert_eq!(pieces((5, 10), &[(0, 5), (10, 12)]), [(5, 10)]);
    }

    fn reno(trace: Option<&Path>) -> Sender {
        let cc: Algorithm = "reno".parse().unwrap();
        let recorder = trace.map(|p| Recorder::create(p, &cc).unwrap());
        let cfg = SenderConfig {
            mss: 1000,
            init_cwnd: 10,
            hz: 1000,
            pace_all: false,
            ecn: false,
            limit_segments: None,
            rwnd_segments: 1 << 20,
            slow_start_after_idle: false,
            seed: 1,
        };
        Sender::new(0, cc, cfg, recorder)
    }

    fn ack(cum: u32, blocks: &[(u32, u32)], dsack: bool) -> Packet {
        let mut p = Packet::ack(0, cum, HEADER_BYTES);
        p.sack[..blocks.len()].copy_from_slice(blocks);
        p.nsack = blocks.len() as u8;
        p.dsack = dsack;
        p
    }

    fn seqs(out: &[Packet]) -> Vec<u32> {
        out.iter().map(|p| p.seq).collect()
    }

    fn trace_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("kleinrock-undo-{name}-{}.csv", std::process::id()))
    }

    /// The hooks a recorded sender called, in order.
    fn hooks(s: &mut Sender, path: &Path) -> Vec<String> {
        s.take_recorder().unwrap().finish().unwrap();
        let mut r = kleinrock_trace::read::TraceReader::open(path).unwrap();
        let hook = r.column("hook").unwrap();
        let mut names = Vec::new();
        while r.next_row().unwrap().is_some() {
            names.push(r.text(hook).to_string());
        }
        std::fs::remove_file(path).ok();
        names
    }

    /// Ten segments out at 0; at 40 ms segments 0-1 are ACKed (cwnd 12,
    /// segments 10-13 sent); then nothing until the loss probe (new
    /// segment 14) and the RTO, which retransmits segment 2 with cwnd 1.
    fn until_rto(s: &mut Sender) -> Time {
        let mut out = Vec::new();
        s.start(0, &mut out);
        assert_eq!(seqs(&out), (0..10).collect::<Vec<_>>());
        out.clear();
        s.on_ack(40 * MS, &ack(2, &[], false), &mut out);
        assert_eq!((s.sk.snd_cwnd, seqs(&out)), (12, vec![10, 11, 12, 13]));
        loop {
            out.clear();
            let t = s.next_wakeup().unwrap();
            s.on_timer(t, &mut out);
            if s.stats.rtos == 1 {
                assert_eq!((s.stats.tlps, seqs(&out)), (1, vec![2]));
                assert_eq!((s.sk.snd_cwnd, s.sk.snd_ssthresh), (1, 6));
                assert_eq!(s.sk.icsk_ca_state, CaState::Loss);
                return t;
            }
        }
    }

    #[test]
    fn f_rto_undoes_a_timeout_whose_originals_were_only_delayed() {
        let path = trace_path("frto");
        let mut s = reno(Some(&path));
        let rto = until_rto(&mut s);
        // The originals of 2 and 3 arrive: the ACK covers segment 3,
        // never retransmitted (RFC 5682 3.1 step 3.b).
        let mut out = Vec::new();
        s.on_ack(rto + 5 * MS, &ack(4, &[], false), &mut out);
        assert_eq!(s.stats.undos, 1);
        assert_eq!(s.sk.icsk_ca_state, CaState::Open);
        assert_eq!((s.sb.lost_out, s.retransmits_in_row), (0, 0));
        // tcp_reno_undo_cwnd(): max(cwnd 1, prior_cwnd 12); ssthresh back
        // to tcp_current_ssthresh() before the RTO, still infinite in
        // slow start; then slow start adds the two segments ACKed.
        assert_eq!(
            (s.sk.snd_cwnd, s.sk.snd_ssthresh),
            (14, TCP_INFINITE_SSTHRESH)
        );
        // Nothing more is retransmitted: new data fills the window
        // (11 in flight, 14 allowed).
        assert_eq!(seqs(&out), vec![15, 16, 17]);
        let h = hooks(&mut s, &path);
        let at = h.iter().position(|n| n == "undo_cwnd").unwrap();
        assert_eq!(
            h[at - 2..],
            [
                "pkts_acked",
                "in_ack_event",
                "undo_cwnd",
                "set_state",
                "cong_avoid"
            ]
        );
        assert_eq!(h.iter().filter(|n| *n == "undo_cwnd").count(), 1);
    }

    #[test]
    fn f_rto_sends_new_data_then_keeps_a_real_loss() {
        let mut s = reno(None);
        let rto = until_rto(&mut s);
        // Only the retransmission of 2 arrives (step 2.b): new data, not
        // retransmissions, with the slow-start cwnd of 2.
        let mut out = Vec::new();
        s.on_ack(rto + 40 * MS, &ack(3, &[], false), &mut out);
        assert_eq!((s.sk.snd_cwnd, seqs(&out)), (2, vec![15, 16]));
        assert!(s.undo.frto);
        // The new data is SACKed over the hole at 3: the loss was real
        // (step 3.a); recovery goes on with retransmissions.
        out.clear();
        s.on_ack(rto + 80 * MS, &ack(3, &[(15, 16)], false), &mut out);
        assert!(!s.undo.frto);
        assert_eq!(s.sk.icsk_ca_state, CaState::Loss);
        assert_eq!((s.stats.undos, s.sk.snd_ssthresh), (0, 6));
        assert_eq!(seqs(&out), vec![3]);
        // Its ACK: una advances, but a retransmission is what arrived.
        out.clear();
        s.on_ack(rto + 120 * MS, &ack(4, &[(15, 16)], false), &mut out);
        assert_eq!((s.stats.undos, s.sk.icsk_ca_state), (0, CaState::Loss));
    }

    /// Ten segments out at 0; at 40 ms 1-3 are SACKed: RACK marks 0
    /// lost, Recovery (ssthresh 5, prior cwnd 10) retransmits it and
    /// PRR sends new segment 10.
    fn into_recovery(s: &mut Sender) {
        let mut out = Vec::new();
        s.start(0, &mut out);
        out.clear();
        s.on_ack(40 * MS, &ack(0, &[(1, 4)], false), &mut out);
        assert_eq!(s.sk.icsk_ca_state, CaState::Recovery);
        assert_eq!((s.sk.snd_ssthresh, s.sk.prior_cwnd), (5, 10));
        assert_eq!((s.sk.snd_cwnd, seqs(&out)), (8, vec![0, 10]));
    }

    #[test]
    fn a_recovery_whose_retransmission_is_d_sacked_is_undone() {
        let path = trace_path("dsack");
        let mut s = reno(Some(&path));
        into_recovery(&mut s);
        // The original of 0 arrived after all: the ACK of 0-9 reports the
        // retransmission as a duplicate.
        let mut out = Vec::new();
        s.on_ack(60 * MS, &ack(10, &[(0, 1)], true), &mut out);
        assert_eq!(s.stats.undos, 1);
        assert_eq!(s.sk.icsk_ca_state, CaState::Open);
        // cwnd max(PRR's 8, prior 10), ssthresh infinite again; then slow
        // start over the 7 segments newly delivered.
        assert_eq!(
            (s.sk.snd_cwnd, s.sk.snd_ssthresh),
            (17, TCP_INFINITE_SSTHRESH)
        );
        let h = hooks(&mut s, &path);
        let at = h.iter().position(|n| n == "undo_cwnd").unwrap();
        // tcp_try_undo_recovery() then tcp_end_cwnd_reduction(), which
        // leaves the undone cwnd alone.
        assert_eq!(
            h[at..],
            ["undo_cwnd", "set_state", "cwnd_event", "cong_avoid"]
        );
    }

    #[test]
    fn without_the_d_sack_the_recovery_ends_at_ssthresh() {
        let mut s = reno(None);
        into_recovery(&mut s);
        let mut out = Vec::new();
        s.on_ack(60 * MS, &ack(10, &[], false), &mut out);
        assert_eq!((s.stats.undos, s.sk.icsk_ca_state), (0, CaState::Open));
        // cwnd = ssthresh 5, then congestion avoidance: 7 ACKed over a
        // window of 5 adds one.
        assert_eq!((s.sk.snd_cwnd, s.sk.snd_ssthresh), (6, 5));
        // A D-SACK arriving after the episode still undoes it
        // (tcp_try_undo_dsack() in Open): cwnd back to prior_cwnd.
        s.on_ack(70 * MS, &ack(10, &[(0, 1)], true), &mut out);
        assert_eq!(s.stats.undos, 1);
        assert_eq!(
            (s.sk.snd_cwnd, s.sk.snd_ssthresh),
            (10, TCP_INFINITE_SSTHRESH)
        );
        // Only one D-SACK per retransmission is believed: nothing more.
        s.on_ack(80 * MS, &ack(10, &[(0, 1)], true), &mut out);
        assert_eq!(s.stats.undos, 1);
    }

    #[test]
    fn a_d_sack_of_data_never_retransmitted_in_the_episode_does_not_count() {
        let mut s = reno(None);
        into_recovery(&mut s);
        let mut out = Vec::new();
        // A D-SACK of segment 5 (never retransmitted) is not one of the
        // episode's retransmissions; the recovery ends at ssthresh.
        s.on_ack(60 * MS, &ack(10, &[(5, 6)], true), &mut out);
        assert_eq!((s.stats.undos, s.sk.snd_ssthresh), (0, 5));
    }

    #[test]
    fn ece_forbids_restoring_cwnd() {
        let mut s = reno(None);
        into_recovery(&mut s);
        let mut out = Vec::new();
        let mut a = ack(10, &[(0, 1)], true);
        a.ece = true;
        s.cfg.ecn = true;
        s.on_ack(60 * MS, &a, &mut out);
        // Undone (the marker is gone) but with prior_ssthresh 0: no
        // undo_cwnd, cwnd stays at PRR's 8 and ssthresh is not restored;
        // then the ECE itself starts a CWR from there (ssthresh 8 / 2).
        assert_eq!(s.stats.undos, 1);
        assert_eq!(s.sk.icsk_ca_state, CaState::Cwr);
        assert_eq!((s.sk.prior_cwnd, s.sk.snd_ssthresh), (8, 4));
    }
}
