//! The sender's timers, as `net/ipv4/tcp_timer.c` and the timer parts of
//! `tcp_output.c`/`tcp_input.c` (6.18) keep them: one slot
//! (`icsk_pending`) holding the retransmission timeout, the tail loss
//! probe (`tcp_schedule_loss_probe()`, `tcp_send_loss_probe()`) or RACK's
//! reorder timeout (`tcp_rack_reo_timeout()`), each re-armed as the kernel
//! does (`tcp_rearm_rto()`, `tcp_set_xmit_timer()`), in jiffies of the
//! scenario's HZ.

use kleinrock_cc::sock::usecs_to_jiffies;
use kleinrock_cc::CaState;

use super::Sender;
use crate::packet::Wire;
use crate::tcp::rtt::{RTO_MAX_US, RTO_MIN_US};
use crate::tcp::scoreboard::{LOST, RETRANS, SACKED};
use crate::time::{Time, SEC, US};

/// Which timer holds the single timer slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimerKind {
    Retransmit,
    LossProbe,
    ReorderTimeout,
}

/// The deadline of a loss probe that an ACK arms before its transmissions,
/// which may replace it; computed once they are done
/// ([`Sender::arm_deferred_probe`]).
const DEADLINE_LATER: Time = Time::MAX;

impl Sender {
    /// `j` jiffies of the scenario's HZ, in nanoseconds.
    pub(super) fn jiffies_ns(&self, j: u64) -> Time {
        match self.jiffy_ns {
            0 => j * SEC / self.cfg.hz as u64,
            ns => j * ns,
        }
    }

    /// Arms the slot: `kind` fires `after_ns` from `now`.
    pub(super) fn set_timer(&mut self, now: Time, after_ns: Time, kind: TimerKind) {
        self.timer = Some((now + after_ns, kind));
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

    /// `tcp_retransmit_timer()`: Loss (`tcp_enter_loss()`), the head
    /// retransmitted at once, the RTO backed off.
    fn on_rto(&mut self, now: Time, out: &mut impl Wire) {
        if self.sb.packets_out() == 0 {
            return;
        }
        self.stats.rtos += 1;
        self.enter_loss();
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

    /// `tcp_rack_reo_timeout()`: RACK looks again at the segments that
    /// were not yet overdue; a loss found in Open or Disorder starts
    /// Recovery.
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

    /// `tcp_rearm_rto()`.
    pub(super) fn rearm_rto(&mut self, now: Time) {
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
    pub(super) fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
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

    /// `tcp_set_xmit_timer()` for an ACK: when it moved `snd_una`, a loss
    /// probe if one may be sent, else the RTO, from now; nothing when
    /// nothing is outstanding.
    ///
    /// Until the ACK's transmissions are done only the timer's kind is
    /// read (`send_new`, `rearm_rto`), and new data sent under a probe
    /// re-arms the timer, so the probe's deadline is computed after them
    /// ([`Sender::arm_deferred_probe`]), if it is still the timer. Its
    /// inputs are as they are here: nothing in between changes srtt or the
    /// RTO, and the only change to packets_out (new data) replaces the
    /// probe. Returns the `packets_out` to compute it with.
    pub(super) fn set_xmit_timer(&mut self, now: Time, advanced: bool) -> Option<u32> {
        let probe = if !advanced {
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
        probe
    }

    /// The deadline of the loss probe [`Sender::set_xmit_timer`] left for
    /// after the ACK's transmissions, if they left the probe in place.
    pub(super) fn arm_deferred_probe(&mut self, now: Time, packets_out: Option<u32>) {
        if let (Some(packets_out), Some((DEADLINE_LATER, TimerKind::LossProbe))) =
            (packets_out, self.timer)
        {
            let at = self.loss_probe_deadline(now, true, packets_out);
            self.timer = Some((at, TimerKind::LossProbe));
        }
    }
}
