//! Loss recovery, as `tcp_fastretrans_alert()` and the functions it calls
//! in `net/ipv4/tcp_input.c` (6.18) run it: RACK's loss detection
//! (`tcp_rack_mark_lost()`, the scan itself in `rack.rs`), the states
//! Disorder, CWR, Recovery and Loss, the start and end of a reduction
//! (from `kleinrock_cc::tcp`, with the core's own PRR and TLP state),
//! the tail loss probe's verdict (`tcp_process_tlp_ack()`), undo of
//! spurious reductions (`tcp_try_undo_*`, deciding with the books in
//! `undo.rs`), and F-RTO (RFC 5682, `tcp_process_loss()`).

use kleinrock_cc::ops::Tap;
use kleinrock_cc::sock::{after, usecs_to_jiffies, TCP_ECN_QUEUE_CWR};
use kleinrock_cc::tcp::{
    tcp_ecn_queue_cwr, tcp_end_cwnd_reduction, tcp_enter_cwr, tcp_init_cwnd_reduction,
};
use kleinrock_cc::{CaEvent, CaState, Hook};

use super::{Sender, TimerKind, FLAG_DATA_SACKED, FLAG_ORIG_SACK_ACKED, FLAG_SND_UNA_ADVANCED};
use crate::packet::Wire;
use crate::tcp::prr::Prr;
use crate::tcp::rack::Rack;
use crate::tcp::scoreboard::EVER_RETRANS;
use crate::time::{Time, US};

impl Sender {
    /// `tcp_rack_mark_lost()`: scan if RACK advanced; arm the reorder timer
    /// for segments not yet overdue.
    pub(super) fn rack_mark_lost(&mut self, now: Time) {
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

    /// `tcp_fastretrans_alert()`, reduced to RACK's loss detection: leave
    /// a state whose episode is over, take the ACK in the state it finds
    /// (undo, F-RTO), reduce once per window of ECN echoes, detect losses,
    /// and enter Recovery when they show. Returns true when F-RTO asks for
    /// new data instead of retransmissions (`REXMIT_NEW`).
    pub(super) fn fastretrans_alert(
        &mut self,
        now: Time,
        ece: bool,
        flag: u32,
        dupack: bool,
    ) -> bool {
        if ece {
            // ECE proves the congestion: no undo restores cwnd.
            self.undo.prior_ssthresh = 0;
        }
        self.check_state_exit();
        let in_recovery = self.sk.icsk_ca_state == CaState::Recovery;
        let mut frto_new = false;
        match self.sk.icsk_ca_state {
            CaState::Recovery => {
                if self.try_undo_in_recovery(ece, flag) {
                    return false;
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
            self.enter_cwr();
        }
        self.rack_mark_lost(now);
        self.recover_or_settle(in_recovery, ece);
        frto_new
    }

    /// The state exits of `tcp_fastretrans_alert()`: CWR and Recovery end
    /// once `high_seq` is ACKed (CWR only once something above it is, so
    /// that the CWR bit has reached the receiver); Recovery may be undone
    /// as it ends. In Open no retransmission is outstanding.
    fn check_state_exit(&mut self) {
        let state = self.sk.icsk_ca_state;
        if state == CaState::Open {
            self.undo.clear_stamp();
        } else if self.sb.una >= self.high_seq {
            match state {
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
    }

    /// An ACK in Recovery: a partial ACK before any retransmission undoes
    /// (`tcp_try_undo_partial()`), as D-SACKs of every retransmission do
    /// (`tcp_try_undo_dsack()`). True to stop processing the ACK: the
    /// partial undo left retransmissions out.
    fn try_undo_in_recovery(&mut self, ece: bool, flag: u32) -> bool {
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_partial() {
            return true;
        }
        if self.try_undo_dsack() {
            self.try_to_open(ece);
        }
        false
    }

    /// After loss detection: a loss starts Recovery (RACK's
    /// `tcp_time_to_recover()`), in a state that may (Open, Disorder, CWR),
    /// a new episode too where this ACK undid the last one; otherwise Open
    /// and Disorder follow the scoreboard.
    fn recover_or_settle(&mut self, in_recovery: bool, ece: bool) {
        let state = self.sk.icsk_ca_state;
        if self.sb.lost_out > 0 && matches!(state, CaState::Open | CaState::Disorder | CaState::Cwr)
        {
            self.enter_recovery(ece);
        } else if !in_recovery && matches!(state, CaState::Open | CaState::Disorder) {
            self.retrans_stamp_cleanup();
            let want = if self.sb.sacked_out > 0 || self.sb.retrans_out > 0 {
                CaState::Disorder
            } else {
                CaState::Open
            };
            if want != state {
                self.set_state(want);
            }
        }
    }

    /// `tcp_process_tlp_ack()`: a probe whose ACK shows it repaired a loss
    /// reduces cwnd once; one whose original arrived too (a D-SACK, or a
    /// pure duplicate ACK) does not.
    pub(super) fn process_tlp_ack(&mut self, cum: u32, dsack: bool, flag: u32) {
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

    /// `tcp_in_cwnd_reduction()`: CWR or Recovery, where PRR sets cwnd.
    pub(super) fn in_cwnd_reduction(&self) -> bool {
        matches!(self.sk.icsk_ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_init_cwnd_reduction()`, the socket's part from
    /// `kleinrock_cc::tcp`.
    fn init_cwnd_reduction(&mut self) {
        self.reset_reduction();
        let (tap, cc) = (&mut self.tap, &mut self.cc);
        tcp_init_cwnd_reduction(&mut self.sk, |sk| tap.call(&Hook::Ssthresh, cc, sk));
    }

    /// The core's own part of `tcp_init_cwnd_reduction()`: the episode's
    /// end in segments, no probe outstanding, PRR from zero.
    fn reset_reduction(&mut self) {
        self.set_high_seq();
        self.tlp_high_seq = None;
        self.prr = Prr::default();
    }

    /// The algorithm entered CWR itself (`tcp_enter_cwr()` from CDG's
    /// `cong_avoid`): the socket fields are done; the core's own state is
    /// reset as `tcp_init_cwnd_reduction()` would have, and nothing undoes
    /// the reduction.
    pub(super) fn adopt_cwr_from_hook(&mut self) {
        self.undo.forbid();
        self.reset_reduction();
    }

    /// `tcp_end_cwnd_reduction()`: undone if the marker is gone.
    fn end_cwnd_reduction(&mut self) {
        let undo_marked = self.undo.is_marked();
        tcp_end_cwnd_reduction(&mut self.tap, &mut self.cc, &mut self.sk, undo_marked);
    }

    /// `tcp_enter_cwr()`: a reduction that is never undone, once per
    /// window (of ECN echoes, here).
    fn enter_cwr(&mut self) {
        self.undo.forbid();
        if tcp_enter_cwr(&mut self.tap, &mut self.cc, &mut self.sk) {
            self.reset_reduction();
        }
    }

    /// `tcp_enter_recovery()`: the fast retransmit starts the episode's
    /// clock; an ECE reduction is never undone.
    pub(super) fn enter_recovery(&mut self, ece: bool) {
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

    /// `tcp_enter_loss()`, on an RTO: every segment not SACKed is presumed
    /// lost (`tcp_timeout_mark_lost()`); ssthresh is reduced unless this
    /// window's reduction was made already (a timeout in Recovery, or a
    /// repeated one that retransmitted nothing since); cwnd is what is in
    /// flight plus one; F-RTO is armed.
    pub(super) fn enter_loss(&mut self) {
        let state = self.sk.icsk_ca_state;
        let reduce = state <= CaState::Disorder
            || !after(self.high_seq, self.sb.una)
            || (state == CaState::Loss && self.retransmits_in_row == 0);
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

    /// The Loss state's ACK, F-RTO's steps 2 and 3 first: undo on a
    /// partial ACK, or when F-RTO finds the timeout spurious; new data
    /// once the retransmission is ACKed; back to Open when `high_seq` is.
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

    /// `tcp_xmit_recovery()` with `REXMIT_NEW` (F-RTO step 2.b): new
    /// data, and retransmissions only if none could go. Rare, so kept out
    /// of the ACK path.
    #[cold]
    #[inline(never)]
    pub(super) fn frto_xmit(&mut self, now: Time, out: &mut impl Wire) {
        self.hold_retransmits = true;
        self.write_xmit(now, out);
        self.hold_retransmits = false;
        if self.sb.nxt() <= self.high_seq {
            self.undo.frto = false;
            self.write_xmit(now, out);
        }
    }
}
