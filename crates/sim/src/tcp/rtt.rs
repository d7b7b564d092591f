//! RTT estimation and the retransmission timeout, as Linux computes them
//! (`tcp_rtt_estimator()`, `__tcp_set_rto()`): RFC 6298 smoothing with the
//! mean deviation tracked per window, and `rttvar` never below the 200 ms
//! minimum RTO, so RTO = srtt + max(4 * mdev, 200 ms), doubled per backoff,
//! at most 120 s.
//!
//! The smoothed RTT is the socket's (`Sock::srtt_us`, which algorithms
//! read); the estimator keeps the deviations, which they do not.

use kleinrock_cc::sock::after;

/// `TCP_RTO_MIN`: 200 ms.
pub const RTO_MIN_US: u32 = 200_000;
/// `TCP_RTO_MAX`: 120 s.
pub const RTO_MAX_US: u64 = 120_000_000;
/// `TCP_TIMEOUT_INIT`: 1 s before any RTT sample.
pub const RTO_INIT_US: u64 = 1_000_000;

#[derive(Clone, Debug, Default)]
pub struct RttEstimator {
    /// Mean deviation, µs << 2.
    pub mdev_us: u32,
    /// Maximal mdev over the last window.
    pub mdev_max_us: u32,
    /// The deviation the RTO uses, at least `RTO_MIN_US`.
    pub rttvar_us: u32,
    /// `snd_nxt` when the current mdev window started.
    pub rtt_seq: u32,
}

impl RttEstimator {
    /// Feeds one RTT measurement (µs) into `srtt_us` (µs << 3, 0 before
    /// the first); `snd_una`/`snd_nxt` delimit the per-window mdev
    /// tracking.
    pub fn sample(&mut self, srtt_us: &mut u32, mrtt_us: u32, snd_una: u32, snd_nxt: u32) {
        let mut m = mrtt_us.max(1) as i64;
        let mut srtt = *srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3;
            srtt += m;
            if m < 0 {
                m = -m;
                m -= (self.mdev_us >> 2) as i64;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= (self.mdev_us >> 2) as i64;
            }
            self.mdev_us = (self.mdev_us as i64 + m) as u32;
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            if after(snd_una, self.rtt_seq) {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = RTO_MIN_US;
            }
        } else {
            srtt = m << 3;
            self.mdev_us = (m << 1) as u32;
            self.rttvar_us = self.mdev_us.max(RTO_MIN_US);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        *srtt_us = (srtt as u32).max(1);
    }

    /// The base RTO (no backoff) for the smoothed RTT `srtt_us`, µs.
    pub fn rto_us(&self, srtt_us: u32) -> u64 {
        if srtt_us == 0 {
            return RTO_INIT_US;
        }
        (((srtt_us >> 3) + self.rttvar_us) as u64).min(RTO_MAX_US)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_gives_three_rtts_but_at_least_srtt_plus_200ms() {
        let mut e = RttEstimator::default();
        let mut srtt = 0;
        assert_eq!(e.rto_us(srtt), 1_000_000);
        e.sample(&mut srtt, 40_000, 0, 100);
        assert_eq!(srtt, 40_000 << 3);
        // mdev = 2 * 40 ms = 80 ms < 200 ms: rttvar is 200 ms.
        assert_eq!(e.rto_us(srtt), 240_000);
        e.sample(&mut srtt, 400_000, 0, 100);
        // srtt = 40 + (400 - 40)/8 = 85 ms; mdev 80 + (360 - 20) = 420 ms.
        assert_eq!(srtt >> 3, 85_000);
        assert_eq!(e.rttvar_us, 420_000);
        assert_eq!(e.rto_us(srtt), 505_000);
    }

    #[test]
    fn steady_rtt_decays_rttvar_to_the_minimum() {
        let mut e = RttEstimator::default();
        let mut srtt = 0;
        e.sample(&mut srtt, 10_000, 0, 10);
        for i in 1..200u32 {
            e.sample(&mut srtt, 10_000, i * 10, i * 10 + 10);
        }
        assert_eq!(srtt >> 3, 10_000);
        assert_eq!(e.rto_us(srtt), 210_000);
    }
}
