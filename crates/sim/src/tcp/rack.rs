//! RACK: time-based loss detection (RFC 8985), as Linux implements it in
//! `net/ipv4/tcp_recovery.c` with its default settings.
//!
//! A segment is lost when a segment sent after it has been delivered and
//! more than one RTT plus a reordering window has passed since it was sent.
//! The reordering window is min RTT / 4 (at most srtt) while no reordering
//! has been seen, except in recovery or once three segments are SACKed
//! (the DUPACK threshold), when it is zero.

use super::scoreboard::{Scoreboard, LOST, RETRANS};
use kleinrock_cc::sock::after;

/// `tp->rack`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rack {
    /// Send time of the most recently sent segment that was delivered, µs.
    pub mstamp: u64,
    /// Its end sequence (segment index + 1).
    pub end_seq: u32,
    /// RTT of that delivery, µs.
    pub rtt_us: u32,
    /// Has `mstamp` moved since the last loss scan?
    pub advanced: bool,
}

/// The DUPACK threshold (`tp->reordering` default).
pub const DUPTHRESH: u32 = 3;

fn sent_after(t1: u64, t2: u64, seq1: u32, seq2: u32) -> bool {
    t1 > t2 || (t1 == t2 && after(seq1, seq2))
}

impl Rack {
    /// `tcp_rack_advance()`: a segment sent at `tx_us` ending at `end_seq`
    /// was delivered at `now_us`.
    pub fn advance(
        &mut self,
        now_us: u64,
        tx_us: u64,
        end_seq: u32,
        retrans: bool,
        min_rtt_us: u32,
    ) {
        let rtt = now_us.saturating_sub(tx_us) as u32;
        // A retransmission ACKed faster than the minimum RTT was probably
        // the original's ACK: ambiguous, ignore it.
        if rtt < min_rtt_us && retrans {
            return;
        }
        self.advanced = true;
        self.rtt_us = rtt;
        if sent_after(tx_us, self.mstamp, end_seq, self.end_seq) {
            self.mstamp = tx_us;
            self.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd()`, µs.
    pub fn reo_wnd(in_recovery: bool, sacked_out: u32, min_rtt_us: u32, srtt_us: u32) -> u32 {
        if in_recovery || sacked_out >= DUPTHRESH {
            return 0;
        }
        (min_rtt_us >> 2).min(srtt_us >> 3)
    }

    /// `tcp_rack_detect_loss()`: marks lost segments; returns how long (µs)
    /// until the next one could be (0: none pending), and how many it marked.
    pub fn detect_loss(&self, sb: &mut Scoreboard, now_us: u64, reo_wnd: u32) -> (u32, u32) {
        let (mut timeout, mut marked) = (0u32, 0u32);
        sb.trim_tsorted();
        // In transmission order, as Linux walks `tsorted_sent_queue`: the
        // first segment not sent before the newest delivered one ends it.
        let mut pos = sb.tsorted_start();
        while let Some((at, seq, tx_us)) = sb.tsorted_next(pos) {
            pos = at.wrapping_add(1);
            let s = sb.get(seq);
            if s.has(LOST) && !s.has(RETRANS) {
                continue;
            }
            if !sent_after(self.mstamp, tx_us, self.end_seq, seq + 1) {
                break;
            }
            let elapsed = now_us.saturating_sub(tx_us) as i64;
            let remaining = self.rtt_us as i64 + reo_wnd as i64 - elapsed;
            if remaining <= 0 {
                marked += u32::from(sb.mark_lost(seq));
            } else {
                timeout = timeout.max(remaining as u32);
            }
        }
        (timeout, marked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::rate::TxStamp;
    use crate::tcp::scoreboard::Seg;

    fn board(n: u32) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for i in 0..n {
            sb.push(Seg::new(1000 + i as u64 * 10, TxStamp::default()));
        }
        sb
    }

    #[test]
    fn a_hole_below_three_sacks_is_lost_at_once() {
        let mut sb = board(10);
        let mut rack = Rack::default();
        for s in 1..4 {
            sb.mark_sacked(s);
            rack.advance(21_000, 1000 + s as u64 * 10, s + 1, false, 20_000);
        }
        let reo = Rack::reo_wnd(false, sb.sacked_out, 20_000, 20_000 << 3);
        assert_eq!(reo, 0);
        let (timeout, marked) = rack.detect_loss(&mut sb, 21_000, reo);
        assert_eq!((timeout, marked), (0, 1));
        assert!(sb.get(0).has(LOST));
        assert!(!sb.get(4).has(LOST));
    }

    #[test]
    fn one_sack_waits_a_quarter_rtt() {
        let mut sb = board(10);
        let mut rack = Rack::default();
        sb.mark_sacked(1);
        rack.advance(21_010, 1010, 2, false, 20_000);
        let reo = Rack::reo_wnd(false, sb.sacked_out, 20_000, 20_000 << 3);
        assert_eq!(reo, 5_000);
        // Segment 0 sent at 1000: lost at 1000 + 20010 + 5000.
        let (timeout, marked) = rack.detect_loss(&mut sb, 21_010, reo);
        assert_eq!((timeout, marked), (5_000 - 10, 0));
        let (_, marked) = rack.detect_loss(&mut sb, 26_010, reo);
        assert_eq!(marked, 1);
    }
}
