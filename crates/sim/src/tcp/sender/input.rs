//! ACK processing, as Linux's `tcp_ack()` (`net/ipv4/tcp_input.c`, 6.18)
//! does it, step by step in the kernel's order, the algorithm's hooks where
//! the kernel calls them:
//!
//! 1. `tcp_sacktag_write_queue()`: newly SACKed segments, and D-SACKs for
//!    undo;
//! 2. `tcp_clean_rtx_queue()`: the cumulatively ACKed segments leave the
//!    scoreboard, `tcp_ack_update_rtt()` takes the RTT samples, then
//!    `pkts_acked` (on every ACK that finds data outstanding);
//! 3. `tcp_in_ack_event()`: `in_ack_event`, after the queue is cleaned as
//!    6.18 does it, so that DCTCP sees this ACK's deliveries;
//! 4. `tcp_set_xmit_timer()` and `tcp_process_tlp_ack()`;
//! 5. `tcp_fastretrans_alert()` (`recovery.rs`) for the ACKs
//!    `tcp_ack_is_dubious()` lets through;
//! 6. `tcp_rate_gen()` and `tcp_cong_control()`: `cong_control`, or PRR
//!    while reducing, or `cong_avoid` when growth is allowed, then the
//!    pacing rate;
//! 7. the transmissions the ACK allows (`output.rs`).

use kleinrock_cc::ops::{CA_ACK_ECE, CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};
use kleinrock_cc::{AckSample, CaState, CongestionControl, Hook, RateSample};

use super::{
    Sender, CONG_CONTROL_FLAGS, FLAG_DATA_ACKED, FLAG_DATA_SACKED, FLAG_DSACKING_ACK, FLAG_ECE,
    FLAG_ORIG_SACK_ACKED, FLAG_SND_UNA_ADVANCED,
};
use crate::packet::{Packet, Wire, MAX_SACK_BLOCKS};
use crate::tcp::scoreboard::{EVER_RETRANS, RETRANS, SACKED};
use crate::time::{Time, US};

/// What the steps of one ACK pass on to each other: `tcp_ack()`'s locals
/// and its `struct tcp_sacktag_state`.
struct AckState {
    /// `snd_una` (segments), `delivered`, `tp->lost` and `packets_out`
    /// before the ACK.
    prior_una: u32,
    prior_delivered: u32,
    prior_lost: u32,
    prior_packets: u32,
    /// `FLAG_*`.
    flag: u32,
    /// The ACK echoes ECE on a connection that negotiated ECN.
    ece: bool,
    /// The delivery-rate sample the ACK builds (`sack_state.rate`).
    rs: RateSample,
    /// Transmit times of the first and last segments newly SACKed and
    /// never retransmitted, and of the first and last cumulatively ACKed
    /// ones never retransmitted nor SACKed before (`first_sackt`,
    /// `last_sackt`, `first_ackt`, `last_ackt`).
    sackt: Option<(u64, u64)>,
    ackt: Option<(u64, u64)>,
    /// Segments the cumulative ACK covered, SACKed ones included.
    pkts_acked: u32,
    /// One of them had been retransmitted: no RTO sample (Karn).
    any_retrans_acked: bool,
    /// The algorithm's RTT sample (`ca_rtt_us`), µs.
    ca_rtt: Option<u32>,
}

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

impl Sender {
    /// `tcp_ack()`: one ACK, from its SACK blocks to the transmissions it
    /// allows.
    pub fn on_ack(&mut self, now: Time, ack: &Packet, out: &mut impl Wire) {
        if !self.started || ack.seq < self.sb.una || ack.seq > self.sb.nxt() {
            return; // before the connection, or old or impossible
        }
        self.refresh_clock(now);
        let now_us = now / US;
        let mut a = self.ack_state(ack);
        if ack.nsack > 0 {
            self.sacktag(now_us, ack, &mut a);
        } else {
            // No blocks: nothing to tag, and nothing cached for the next ACK.
            self.sack_cache_len = 0;
        }
        if a.ece {
            // tcp_count_delivered() for the segments SACKed; those the
            // cumulative ACK delivers count as they leave the queue.
            a.flag |= FLAG_ECE;
            self.sk.delivered_ce += self.sk.delivered - a.prior_delivered;
        }
        self.clean_rtx_queue(now_us, ack.seq, &mut a);
        let advanced = a.flag & FLAG_SND_UNA_ADVANCED != 0;
        self.call(Hook::InAckEvent(in_ack_flags(advanced, ack, a.ece)));
        let probe = self.set_xmit_timer(now, advanced);
        self.process_tlp_ack(ack.seq, ack.dsack, a.flag);
        let dubious = self.ack_is_dubious(ack, a.flag);
        // A duplicate: nothing ACKed, no window update, no D-SACK.
        let dupack = !advanced && a.flag & FLAG_DSACKING_ACK == 0;
        let frto_new = dubious && self.fastretrans_alert(now, a.ece, a.flag, dupack);
        let delivered = self.sk.delivered - a.prior_delivered;
        self.stats.delivered += delivered as u64;
        let lost = self.sb.lost.wrapping_sub(a.prior_lost);
        self.rate
            .generate(&mut self.sk, &mut a.rs, now_us, delivered, lost);
        if dubious {
            // Loss detection has moved the scoreboard's counts.
            self.expose();
        }
        self.cong_control(ack.seq, a.flag & CONG_CONTROL_FLAGS, delivered, &a.rs);
        self.check_done(now);
        if frto_new {
            self.frto_xmit(now, out);
        } else {
            self.write_xmit(now, out);
        }
        self.arm_deferred_probe(now, probe);
    }

    /// The connection as the ACK finds it, and nothing done yet.
    fn ack_state(&self, ack: &Packet) -> AckState {
        AckState {
            prior_una: self.sb.una,
            prior_delivered: self.sk.delivered,
            prior_lost: self.sb.lost,
            prior_packets: self.sb.packets_out(),
            flag: 0,
            ece: ack.ece && self.cfg.ecn,
            rs: RateSample {
                rtt_us: -1,
                prior_in_flight: self.sb.in_flight(),
                ..RateSample::default()
            },
            sackt: None,
            ackt: None,
            pkts_acked: 0,
            any_retrans_acked: false,
            ca_rtt: None,
        }
    }

    /// `tcp_clean_rtx_queue()`: the segments below `cum` leave the
    /// scoreboard, each one not SACKed before delivered (the rate sample,
    /// RACK, `delivered_ce` on an ECE ACK); then the RTT samples and, if
    /// the ACK found data outstanding, `pkts_acked`.
    fn clean_rtx_queue(&mut self, now_us: u64, cum: u32, a: &mut AckState) {
        if self.undo.frto {
            a.flag |= self.orig_acked(cum);
        }
        while self.sb.una < cum {
            let seq = self.sb.una;
            let s = self.sb.pop();
            a.pkts_acked += 1;
            if s.has(EVER_RETRANS) {
                a.any_retrans_acked = true;
            } else if !s.has(SACKED) {
                let first = a.ackt.map_or(s.tx_us, |(f, _)| f);
                a.ackt = Some((first, s.tx_us));
            }
            if !s.has(SACKED) {
                let ever = s.has(EVER_RETRANS);
                self.sk.delivered += 1;
                self.sk.delivered_ce += a.ece as u32;
                // The stamp is a copy: the segment has left the scoreboard,
                // and only a SACK's delivery (not this) clears a stamp.
                self.rate
                    .on_delivered(&mut a.rs, &mut s.stamp(), s.tx_us, seq + 1, ever, false);
                self.rack
                    .advance(now_us, s.tx_us, seq + 1, ever, self.sk.min_rtt_us);
            }
        }
        if cum > a.prior_una {
            a.flag |= FLAG_SND_UNA_ADVANCED | FLAG_DATA_ACKED;
            self.retransmits_in_row = 0;
        }
        self.ack_update_rtt(now_us, a);
        // The ACK's first hooks are next: show them the cleaned queue.
        self.expose();
        if a.prior_packets > 0 {
            let sample = AckSample {
                pkts_acked: a.pkts_acked,
                rtt_us: a.ca_rtt.map_or(-1, |r| r as i32),
                in_flight: self
                    .cfg
                    .mss
                    .wrapping_mul(self.sk.delivered.wrapping_sub(a.rs.prior_delivered)),
            };
            self.call(Hook::PktsAcked(sample));
        }
    }

    /// `tcp_ack_update_rtt()`: the RTO's sample from the oldest segment
    /// (Karn: none if a retransmission was ACKed), the algorithm's from
    /// the newest; SACKed segments take precedence for the latter. The
    /// minimum RTT and the RTO follow.
    fn ack_update_rtt(&mut self, now_us: u64, a: &mut AckState) {
        let since = |t: u64| now_us.saturating_sub(t) as u32;
        let (mut seq_rtt, mut ca_rtt) = match a.ackt {
            Some((first, last)) if !a.any_retrans_acked => (Some(since(first)), Some(since(last))),
            _ => (None, None),
        };
        if let Some((first, last)) = a.sackt {
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
            a.rs.rtt_us = c as i64;
            self.last_rtt_sample = Some(c);
        }
        a.ca_rtt = ca_rtt;
    }

    /// `tcp_ack_is_dubious()`: only a duplicate, an ACK with news of loss
    /// or congestion (new SACKs, a D-SACK, ECE), or any ACK outside the
    /// Open state goes through loss recovery.
    fn ack_is_dubious(&self, ack: &Packet, flag: u32) -> bool {
        flag & FLAG_SND_UNA_ADVANCED == 0
            || flag & (FLAG_DATA_SACKED | FLAG_ECE) != 0
            || ack.dsack
            || self.sk.icsk_ca_state != CaState::Open
    }

    /// A transfer is complete once its last segment is ACKed; its timers
    /// stop.
    fn check_done(&mut self, now: Time) {
        if self
            .cfg
            .limit_segments
            .is_some_and(|n| self.sb.una as u64 >= n)
            && self.done_at.is_none()
        {
            self.done_at = Some(now);
            self.timer = None;
        }
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
    /// only, and counts for undo.
    fn sacktag(&mut self, now_us: u64, ack: &Packet, a: &mut AckState) {
        if ack.dsack && self.check_dsack(ack) {
            a.flag |= FLAG_DSACKING_ACK;
        }
        let (pieces, npieces) = self.new_sack_ranges(ack);
        for &(start, end) in &pieces[..npieces] {
            for seq in start.max(self.sb.una)..end.min(self.sb.nxt()) {
                if !self.sb.get(seq).has(SACKED) {
                    self.sacktag_one(now_us, seq, a);
                }
            }
        }
    }

    /// The ranges the ACK's SACK blocks cover that the previous ACK's did
    /// not (Linux's `recv_sack_cache`): a receiver repeats its blocks,
    /// growing them at one edge, so each ACK walks only the newly SACKed
    /// segments. The ACK's blocks become the cache.
    fn new_sack_ranges(&mut self, ack: &Packet) -> ([(u32, u32); 4 * MAX_SACK_BLOCKS], usize) {
        let mut blocks = [(0u32, 0u32); MAX_SACK_BLOCKS];
        let mut nblocks = 0;
        for (i, &b) in ack.sack_blocks().iter().enumerate() {
            if !(ack.dsack && i == 0) {
                blocks[nblocks] = b;
                nblocks += 1;
            }
        }
        blocks[..nblocks].sort_unstable();
        let mut pieces = [(0u32, 0u32); 4 * MAX_SACK_BLOCKS];
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
        (pieces, npieces)
    }

    /// `tcp_sacktag_one()`: segment `seq` is newly SACKed, so delivered
    /// (the rate sample, RACK) and, if never retransmitted, a time for the
    /// algorithm's RTT sample.
    fn sacktag_one(&mut self, now_us: u64, seq: u32, a: &mut AckState) {
        let s = *self.sb.get(seq);
        let retrans = s.has(EVER_RETRANS);
        self.sb.mark_sacked(seq);
        self.sk.delivered += 1;
        let mut stamp = s.stamp();
        self.rate
            .on_delivered(&mut a.rs, &mut stamp, s.tx_us, seq + 1, retrans, true);
        self.sb.get_mut(seq).set_stamp(stamp);
        self.rack.advance(
            now_us,
            s.tx_us,
            seq + 1,
            s.has(RETRANS) || retrans,
            self.sk.min_rtt_us,
        );
        if !retrans {
            let first = a.sackt.map_or(s.tx_us, |(f, _)| f);
            a.sackt = Some((first, s.tx_us));
            if seq < self.high_seq {
                a.flag |= FLAG_ORIG_SACK_ACKED;
            }
        }
        a.flag |= FLAG_DATA_SACKED;
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
