//! The delivery-rate sampler of Linux `net/ipv4/tcp_rate.c` (Cheng, Cardwell
//! et al., draft-cheng-iccrg-delivery-rate-estimation): every segment records
//! the connection's delivered count and times when sent; every ACK turns the
//! most recently sent segment it (S)ACKs into a sample of delivered
//! segments over the longer of the send and ACK intervals, flagged when the
//! application, not the network, limited it.

use kleinrock_cc::sock::after;
use kleinrock_cc::RateSample;

/// What a segment remembers of the connection when it was sent
/// (`tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStamp {
    pub first_tx_mstamp: u64,
    /// 0 once the segment has been SACKed (so it is not sampled twice).
    pub delivered_mstamp: u64,
    pub delivered: u32,
    pub is_app_limited: bool,
}

/// The connection's sampler state (the `tcp_sock` fields it uses).
#[derive(Clone, Debug, Default)]
pub struct RateSampler {
    pub delivered: u32,
    pub delivered_mstamp: u64,
    pub first_tx_mstamp: u64,
    /// Non-zero: `delivered` count when the application-limited bubble
    /// ends.
    pub app_limited: u32,
    pub rate_delivered: u32,
    pub rate_interval_us: u64,
    pub rate_app_limited: bool,
}

/// `tcp_skb_sent_after()`.
fn sent_after(t1: u64, t2: u64, seq1: u32, seq2: u32) -> bool {
    t1 > t2 || (t1 == t2 && after(seq1, seq2))
}

impl RateSampler {
    /// `tcp_rate_skb_sent()`: stamp a segment sent at `now_us` with
    /// `packets_out` already in flight.
    pub fn on_send(&mut self, now_us: u64, packets_out: u32) -> TxStamp {
        if packets_out == 0 {
            self.first_tx_mstamp = now_us;
            self.delivered_mstamp = now_us;
        }
        TxStamp {
            first_tx_mstamp: self.first_tx_mstamp,
            delivered_mstamp: self.delivered_mstamp,
            delivered: self.delivered,
            is_app_limited: self.app_limited != 0,
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
        rs: &mut RateSample,
        now_us: u64,
        delivered: u32,
        lost: u32,
        min_rtt_us: u32,
    ) {
        if self.app_limited != 0 && after(self.delivered, self.app_limited) {
            self.app_limited = 0;
        }
        if delivered != 0 {
            self.delivered_mstamp = now_us;
        }
        rs.acked_sacked = delivered;
        rs.losses = lost as i32;
        if rs.prior_mstamp == 0 {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = self.delivered.wrapping_sub(rs.prior_delivered) as i32;
        let snd_us = rs.interval_us.max(0) as u64;
        let ack_us = now_us.saturating_sub(rs.prior_mstamp);
        rs.interval_us = snd_us.max(ack_us) as i64;
        rs.snd_interval_us = snd_us as u32;
        rs.rcv_interval_us = ack_us as u32;
        if rs.interval_us < min_rtt_us as i64 {
            rs.interval_us = -1;
            return;
        }
        if !rs.is_app_limited
            || rs.delivered as u64 * self.rate_interval_us
                >= self.rate_delivered as u64 * rs.interval_us as u64
        {
            self.rate_delivered = rs.delivered as u32;
            self.rate_interval_us = rs.interval_us as u64;
            self.rate_app_limited = rs.is_app_limited;
        }
    }

    /// `tcp_rate_check_app_limited()`: called when the application has
    /// nothing more to send while cwnd would allow it.
    pub fn mark_app_limited(&mut self, in_flight: u32) {
        let mark = self.delivered.wrapping_add(in_flight);
        self.app_limited = if mark == 0 { 1 } else { mark };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_pipe_samples_the_bottleneck_rate() {
        // One segment sent every 100 us, each ACKed 10 ms later: the sample
        // should read 1 segment per 100 us.
        let mut s = RateSampler::default();
        let mut stamps = Vec::new();
        let mut inflight = 0;
        let mut last = RateSample::default();
        for i in 0..1000u64 {
            let now = i * 100;
            stamps.push((now, s.on_send(now, inflight)));
            inflight += 1;
            // ACKs for segments sent 10 ms ago.
            if now >= 10_000 {
                let k = (i - 100) as usize;
                let (tx_us, mut st) = stamps[k];
                let mut rs = RateSample::default();
                s.delivered += 1;
                s.on_delivered(&mut rs, &mut st, tx_us, (k as u32 + 1) * 1448, false, false);
                s.generate(&mut rs, now, 1, 0, 10_000);
                inflight -= 1;
                last = rs;
            }
        }
        assert!(last.delivered > 0 && last.interval_us > 0);
        let per_seg = last.interval_us as f64 / last.delivered as f64;
        assert!((per_seg - 100.0).abs() < 1.0, "{per_seg} us per segment");
        assert!(!last.is_app_limited);
    }

    #[test]
    fn app_limited_bubble_marks_samples_until_delivered() {
        let mut s = RateSampler {
            delivered: 50,
            ..Default::default()
        };
        s.mark_app_limited(10);
        assert_eq!(s.app_limited, 60);
        let st = s.on_send(0, 0);
        assert!(st.is_app_limited);
        s.delivered = 61;
        let mut rs = RateSample::default();
        s.generate(&mut rs, 1, 0, 0, 0);
        assert_eq!(s.app_limited, 0);
    }
}
