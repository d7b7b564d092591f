//! The delivery-rate sampler of Linux `net/ipv4/tcp_rate.c` (Cheng, Cardwell
//! et al., draft-cheng-iccrg-delivery-rate-estimation): every segment records
//! the connection's delivered count and times when sent; every ACK turns the
//! most recently sent segment it (S)ACKs into a sample of delivered
//! segments over the longer of the send and ACK intervals, flagged when the
//! application, not the network, limited it.
//!
//! The connection's counters the kernel keeps in `tcp_sock` and the
//! algorithm reads (`delivered`, `delivered_mstamp`, `app_limited`,
//! `rate_app_limited`) live in [`Sock`], where the sampler reads and
//! writes them; the sampler keeps only what no algorithm sees.
//!
//! It is the TCP core's, not an algorithm's: the simulator's sender and the
//! quinn adapter (crates/quinn) both stamp what they send with it and turn
//! ACKs into the [`RateSample`] that `cong_control` reads.

use crate::ops::RateSample;
use crate::sock::{after, Sock};

/// What a segment remembers of the connection when it was sent
/// (`tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStamp {
    /// When the flight this segment joined began (`first_tx_mstamp` at send).
    pub first_tx_mstamp: u64,
    /// 0 once the segment has been SACKed (so it is not sampled twice).
    pub delivered_mstamp: u64,
    /// `delivered` when the segment was sent.
    pub delivered: u32,
    /// Was the connection application-limited when it was sent?
    pub is_app_limited: bool,
}

/// The sampler's own state: the `tcp_sock` fields of `tcp_rate.c` that
/// [`Sock`] does not carry. (`sk.app_limited`, non-zero, is the
/// `delivered` count at which the application-limited bubble ends.)
#[derive(Clone, Debug, Default)]
pub struct RateSampler {
    /// When the most recently (S)ACKed segment was sent
    /// (`tp->first_tx_mstamp`).
    pub first_tx_mstamp: u64,
    /// The latest sample that was not application-limited, or that beat
    /// the one before it (`tcp_rate_gen()`'s `rate_delivered`): its
    /// segments delivered...
    pub rate_delivered: u32,
    /// ...and its interval, µs (`rate_interval_us`).
    pub rate_interval_us: u64,
}

/// `tcp_skb_sent_after()`.
fn sent_after(t1: u64, t2: u64, seq1: u32, seq2: u32) -> bool {
    t1 > t2 || (t1 == t2 && after(seq1, seq2))
}

impl RateSampler {
    /// `tcp_rate_skb_sent()`: stamp a segment sent at `now_us` with
    /// `packets_out` already in flight.
    pub fn on_send(&mut self, sk: &mut Sock, now_us: u64, packets_out: u32) -> TxStamp {
        if packets_out == 0 {
            self.first_tx_mstamp = now_us;
            sk.delivered_mstamp = now_us;
        }
        TxStamp {
            first_tx_mstamp: self.first_tx_mstamp,
            delivered_mstamp: sk.delivered_mstamp,
            delivered: sk.delivered,
            is_app_limited: sk.app_limited != 0,
        }
    }

    /// `tcp_rate_skb_delivered()`: a segment (sent at `tx_us`, ending at
    /// `end_seq`) was (S)ACKed. `sacked` clears its stamp.
    #[inline]
    pub fn on_delivered(
        &mut self,
        rs: &mut RateSample,
        tx: &mut TxStamp,
        tx_us: u64,
        end_seq: u32,
        is_retrans: bool,
        sacked: bool,
    ) {
        if tx.delivered_mstamp == 0 {
            return;
        }
        if rs.prior_delivered == 0
            || sent_after(tx_us, self.first_tx_mstamp, end_seq, rs.last_end_seq)
        {
            rs.prior_delivered = tx.delivered;
            rs.prior_mstamp = tx.delivered_mstamp;
            rs.is_app_limited = tx.is_app_limited;
            rs.is_retrans = is_retrans;
            rs.last_end_seq = end_seq;
            self.first_tx_mstamp = tx_us;
            rs.interval_us = tx_us.saturating_sub(tx.first_tx_mstamp) as i64;
        }
        if sacked {
            tx.delivered_mstamp = 0;
        }
    }

    /// `tcp_rate_gen()`: finish the ACK's sample. `delivered` and `lost`
    /// are the segments newly delivered and newly marked lost by this ACK.
    pub fn generate(
        &mut self,
        sk: &mut Sock,
        rs: &mut RateSample,
        now_us: u64,
        delivered: u32,
        lost: u32,
    ) {
        if sk.app_limited != 0 && after(sk.delivered, sk.app_limited) {
            sk.app_limited = 0;
        }
        if delivered != 0 {
            sk.delivered_mstamp = now_us;
        }
        rs.acked_sacked = delivered;
        rs.losses = lost as i32;
        if rs.prior_mstamp == 0 {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = sk.delivered.wrapping_sub(rs.prior_delivered) as i32;
        let snd_us = rs.interval_us.max(0) as u64;
        let ack_us = now_us.saturating_sub(rs.prior_mstamp);
        rs.interval_us = snd_us.max(ack_us) as i64;
        rs.snd_interval_us = snd_us as u32;
        rs.rcv_interval_us = ack_us as u32;
        if rs.interval_us < sk.min_rtt_us as i64 {
            rs.interval_us = -1;
            return;
        }
        if !rs.is_app_limited
            || rs.delivered as u64 * self.rate_interval_us
                >= self.rate_delivered as u64 * rs.interval_us as u64
        {
            self.rate_delivered = rs.delivered as u32;
            self.rate_interval_us = rs.interval_us as u64;
            sk.rate_app_limited = rs.is_app_limited;
        }
    }

    /// `tcp_rate_check_app_limited()`: called when the application has
    /// nothing more to send while cwnd would allow it.
    pub fn mark_app_limited(sk: &mut Sock, in_flight: u32) {
        let mark = sk.delivered.wrapping_add(in_flight);
        sk.app_limited = if mark == 0 { 1 } else { mark };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn steady_pipe_samples_the_bottleneck_rate() {
        // One segment sent every 100 us, each ACKed 10 ms later: the sample
        // should read 1 segment per 100 us.
        let mut s = RateSampler::default();
        let mut sk = Sock {
            min_rtt_us: 10_000,
            ..Sock::default()
        };
        let mut stamps = Vec::new();
        let mut inflight = 0;
        let mut last = RateSample::default();
        for i in 0..1000u64 {
            let now = i * 100;
            stamps.push((now, s.on_send(&mut sk, now, inflight)));
            inflight += 1;
            // ACKs for segments sent 10 ms ago.
            if now >= 10_000 {
                let k = (i - 100) as usize;
                let (tx_us, mut st) = stamps[k];
                let mut rs = RateSample::default();
                sk.delivered += 1;
                s.on_delivered(&mut rs, &mut st, tx_us, (k as u32 + 1) * 1448, false, false);
                s.generate(&mut sk, &mut rs, now, 1, 0);
                inflight -= 1;
                last = rs;
            }
        }
        // The last sample reaches back to the delivery state its segment
        // left with, 10 ms and 100 deliveries earlier: 101 segments over
        // 10.1 ms of sending and of ACKs, exactly 100 us each.
        assert_eq!(
            (last.delivered, last.snd_interval_us, last.rcv_interval_us),
            (101, 10_100, 10_100)
        );
        assert_eq!(last.interval_us, 10_100);
        assert!(!last.is_app_limited);
    }

    #[test]
    fn app_limited_bubble_marks_samples_until_delivered() {
        let mut s = RateSampler::default();
        let mut sk = Sock {
            delivered: 50,
            min_rtt_us: 0,
            ..Sock::default()
        };
        RateSampler::mark_app_limited(&mut sk, 10);
        assert_eq!(sk.app_limited, 60);
        let st = s.on_send(&mut sk, 0, 0);
        assert!(st.is_app_limited);
        sk.delivered = 61;
        let mut rs = RateSample::default();
        s.generate(&mut sk, &mut rs, 1, 0, 0);
        assert_eq!(sk.app_limited, 0);
    }
}
