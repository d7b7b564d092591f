//! Transmission, as `net/ipv4/tcp_output.c` (6.18) does it for fixed-size
//! segments: retransmissions before new data, within cwnd and the
//! receive window and, when paced, at the pacing rate (`tcp_write_xmit()`,
//! `tcp_pacing_check()`); ECT and CWR on the segments (`tcp_ecn_send()`);
//! the idle restart and `CA_EVENT_TX_START` on sending from an empty pipe
//! (`tcp_cwnd_restart()`, `tcp_event_data_sent()`); whether the window was
//! used (`tcp_cwnd_validate()`); and the pacing rate
//! (`tcp_update_pacing_rate()`, from `kleinrock_cc::tcp`).

use kleinrock_cc::sock::{usecs_to_jiffies, TCP_ECN_QUEUE_CWR};
use kleinrock_cc::tcp::tcp_update_pacing_rate;
use kleinrock_cc::{CaEvent, CongestionControl, Hook};

use super::{Sender, TimerKind};
use crate::packet::{Ecn, Packet, Wire, HEADER_BYTES};
use crate::tcp::rate::RateSampler;
use crate::tcp::scoreboard::Seg;
use crate::time::{Time, SEC, US};

impl Sender {
    /// `tcp_xmit_retransmit_queue()` then `tcp_write_xmit()`:
    /// retransmissions first (unless F-RTO holds them), then new data,
    /// while the window (and the pacing clock) allows.
    pub(super) fn write_xmit(&mut self, now: Time, out: &mut impl Wire) {
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

    /// `tcp_update_skb_after_send()`: the pacing clock (`tcp_wstamp_ns`)
    /// moves one segment's time at the pacing rate past the later of
    /// itself and now, so an idle flow does not bank credit.
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
    pub(super) fn send_new(&mut self, now: Time, out: &mut impl Wire) -> bool {
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
    pub(super) fn retransmit(&mut self, now: Time, seq: u32, out: &mut impl Wire) {
        self.resend(now, seq, out);
        self.undo.on_retransmit(now / US);
    }

    /// `__tcp_retransmit_skb()`: sends `seq` again (a loss probe calls
    /// it directly).
    pub(super) fn resend(&mut self, now: Time, seq: u32, out: &mut impl Wire) {
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

    /// `tcp_update_pacing_rate()`, unless the algorithm paces itself.
    pub(super) fn update_pacing_rate(&mut self) {
        if !self.cc.has_cong_control() {
            tcp_update_pacing_rate(&mut self.sk);
        }
    }
}
