//! Proportional Rate Reduction (RFC 6937), as Linux's `tcp_cwnd_reduction()`
//! computes it: during recovery, send in proportion to what is delivered so
//! that inflight falls smoothly to ssthresh, then (slow start reduction
//! bound) rises back to it if losses took it below.

/// PRR's state for one reduction episode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// Segments delivered since the reduction started.
    pub delivered: u32,
    /// Segments sent since the reduction started.
    pub out: u32,
}

impl Prr {
    /// The new cwnd after an ACK that newly delivered `newly_acked_sacked`
    /// segments and newly marked `newly_lost`; `None` if the ACK delivered
    /// nothing (cwnd unchanged).
    pub fn cwnd(
        &mut self,
        ssthresh: u32,
        prior_cwnd: u32,
        in_flight: u32,
        newly_acked_sacked: u32,
        newly_lost: u32,
        una_advanced: bool,
    ) -> Option<u32> {
        if newly_acked_sacked == 0 || prior_cwnd == 0 {
            return None;
        }
        self.delivered += newly_acked_sacked;
        let delta = ssthresh as i64 - in_flight as i64;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend = ssthresh as u64 * self.delivered as u64 + prior_cwnd as u64 - 1;
            (dividend / prior_cwnd as u64) as i64 - self.out as i64
        } else {
            let mut s = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit upon entering recovery.
        sndcnt = sndcnt.max(if self.out == 0 { 1 } else { 0 });
        Some((in_flight as i64 + sndcnt).max(1) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_phase_sends_ssthresh_over_prior_cwnd_per_delivery() {
        // cwnd 20 -> ssthresh 10: about one segment per two delivered.
        let mut p = Prr::default();
        let mut sent = 0;
        let mut in_flight = 19; // one lost
        for _ in 0..10 {
            in_flight -= 1;
            let cwnd = p.cwnd(10, 20, in_flight, 1, 0, false).unwrap();
            let send = cwnd.saturating_sub(in_flight);
            p.out += send;
            sent += send;
            in_flight += send;
        }
        // ceil(10 * 10 / 20) = 5 sent for 10 delivered.
        assert_eq!(sent, 5);
    }

    #[test]
    fn first_ack_always_allows_the_fast_retransmit() {
        let mut p = Prr::default();
        assert_eq!(p.cwnd(10, 20, 19, 1, 1, false), Some(20));
        assert_eq!(p.cwnd(10, 20, 19, 0, 0, false), None);
    }

    #[test]
    fn below_ssthresh_grows_back_like_slow_start() {
        let mut p = Prr {
            out: 3,
            ..Default::default()
        };
        // inflight 4 < ssthresh 10: send delivered-out, at least newly
        // delivered, +1 on una advance: min(delta 6, max(5-3, 5) + 1) = 6.
        assert_eq!(p.cwnd(10, 20, 4, 5, 0, true), Some(10));
    }
}
