//! H-TCP: additive increase that grows with the time since the last loss.
//!
//! Shorten and Leith, "H-TCP: TCP for high-speed and long-distance
//! networks", PFLDnet 2004; a port of Linux 6.18 `net/ipv4/tcp_htcp.c`.
//!
//! For the first second after a congestion event H-TCP behaves like Reno;
//! after that its increase per RTT, alpha, grows quadratically with the
//! elapsed time Δ (alpha = 1 + 10 Δ + (Δ/2)^2, Δ in seconds past the first),
//! scaled by the RTT so that flows with different RTTs share fairly. The
//! decrease factor beta adapts to the queue: min RTT / max RTT, kept within
//! [0.5, 0.8], unless the achieved bandwidth changed by more than 20% since
//! the last event, when it falls back to 0.5 (so new flows get room).
//! alpha is then 2 (1 - beta) times the time factor, which keeps the
//! average window Reno-fair at low speeds.
//!
//! Times are in jiffies, fractions in 1/128 (`<< 7`), as in the kernel.

use crate::aimd::{reads, tcp_reno_undo_cwnd, tcp_slow_start, AIMD_READS};
use crate::ops::{AckSample, CaVisitor, CongestionControl};
use crate::params::{params, Token};
use crate::registry::Declared;
use crate::sock::{msecs_to_jiffies, usecs_to_jiffies, CaState, Field, Sock};
use crate::state::{private_state, PrivateState};

/// alpha of 1.0, in 1/128.
pub const ALPHA_BASE: u32 = 1 << 7;
/// The smallest beta, 0.5: Reno's decrease.
pub const BETA_MIN: u8 = 1 << 6;
/// The largest beta, 0.8 (102/128).
pub const BETA_MAX: u8 = 102;

params! {
    /// H-TCP's module parameters.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct HtcpParams {
        /// Scale alpha by the RTT (for RTT fairness).
        use_rtt_scaling: bool {
            default: true,
            help: "scale alpha by the RTT (default 1)",
            token: Token::Values(&[("0", "nrs")]),
        },
        /// Fall back to beta = 0.5 when the achieved bandwidth changes.
        use_bandwidth_switch: bool {
            default: true,
            help: "beta falls back to 0.5 when the bandwidth changes (default 1)",
            token: Token::Values(&[("0", "nbs")]),
        },
    }
}

private_state! {
    /// `struct htcp`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[allow(non_snake_case)]
    pub struct HtcpState {
        /// Additive increase per RTT, 1/128.
        pub alpha: u32,
        /// Multiplicative decrease, 1/128.
        pub beta: u8,
        /// Adaptive beta only after a first congestion event.
        pub modeswitch: u8,
        /// Segments the last ACK acknowledged (for the throughput estimate).
        pub pkts_acked: u16,
        /// Segments acknowledged since `lasttime`.
        pub packetcount: u32,
        /// The smallest RTT seen, jiffies.
        pub minRTT: u32,
        /// The largest RTT seen, jiffies.
        pub maxRTT: u32,
        /// jiffies at the end of the last congestion event.
        pub last_cong: u32,
        /// `last_cong` before the last reduction, for undo.
        pub undo_last_cong: u32,
        /// `maxRTT` before the last reduction, for undo.
        pub undo_maxRTT: u32,
        /// `old_maxB` before the last reduction, for undo.
        pub undo_old_maxB: u32,
        /// Achieved throughput, packets per second.
        pub minB: u32,
        /// The largest throughput seen.
        pub maxB: u32,
        /// `maxB` at the last congestion event.
        pub old_maxB: u32,
        /// The current throughput estimate.
        pub Bi: u32,
        /// When the throughput measurement began, jiffies.
        pub lasttime: u32,
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
/// H-TCP (Leith and Shorten), as `tcp_htcp.c`.
pub struct Htcp {
    params: HtcpParams,
    st: HtcpState,
}

/// `between(seq1, seq2, seq3)`: seq2 <= seq1 <= seq3 in wrapping order.
fn between(s1: u32, s2: u32, s3: u32) -> bool {
    s3.wrapping_sub(s2) >= s1.wrapping_sub(s2)
}

impl Htcp {
    /// H-TCP with parameters `params`.
    pub fn new(params: HtcpParams) -> Htcp {
        Htcp {
            params,
            st: HtcpState::default(),
        }
    }

    /// The private state, as a trace names its members.
    pub fn state(&self) -> &HtcpState {
        &self.st
    }

    fn cong_time(&self, sk: &Sock) -> u32 {
        sk.jiffies.wrapping_sub(self.st.last_cong)
    }

    /// `htcp_reset()`: a congestion event; remember what undo restores.
    fn reset(&mut self, sk: &Sock) {
        let s = &mut self.st;
        s.undo_last_cong = s.last_cong;
        s.undo_maxRTT = s.maxRTT;
        s.undo_old_maxB = s.old_maxB;
        s.last_cong = sk.jiffies;
    }

    /// `measure_rtt()`, in jiffies.
    fn measure_rtt(&mut self, sk: &Sock, srtt: u32) {
        let s = &mut self.st;
        if s.minRTT > srtt || s.minRTT == 0 {
            s.minRTT = srtt;
        }
        if sk.icsk_ca_state == CaState::Open {
            if s.maxRTT < s.minRTT {
                s.maxRTT = s.minRTT;
            }
            if s.maxRTT < srtt && srtt <= s.maxRTT.wrapping_add(msecs_to_jiffies(20, sk.hz)) {
                s.maxRTT = srtt;
            }
        }
    }

    /// `htcp_beta_update()`.
    fn beta_update(&mut self, sk: &Sock, min_rtt: u32, max_rtt: u32) {
        let s = &mut self.st;
        if self.params.use_bandwidth_switch {
            let (max_b, old_max_b) = (s.maxB, s.old_maxB);
            s.old_maxB = s.maxB;
            if !between(
                5u32.wrapping_mul(max_b),
                4u32.wrapping_mul(old_max_b),
                6u32.wrapping_mul(old_max_b),
            ) {
                s.beta = BETA_MIN;
                s.modeswitch = 0;
                return;
            }
        }
        if s.modeswitch != 0 && min_rtt > msecs_to_jiffies(10, sk.hz) && max_rtt != 0 {
            // The kernel stores into a u8 before clamping.
            s.beta = ((min_rtt << 7) / max_rtt) as u8;
            s.beta = s.beta.clamp(BETA_MIN, BETA_MAX);
        } else {
            s.beta = BETA_MIN;
            s.modeswitch = 1;
        }
    }

    /// `htcp_alpha_update()`.
    fn alpha_update(&mut self, sk: &Sock) {
        let hz = sk.hz;
        let min_rtt = self.st.minRTT;
        let mut factor: u32 = 1;
        let mut diff = self.cong_time(sk);
        if diff > hz {
            diff -= hz;
            let half = diff / 2;
            factor = 1u32.wrapping_add(
                10u32
                    .wrapping_mul(diff)
                    .wrapping_add(half.wrapping_mul(half) / hz)
                    / hz,
            );
        }
        if self.params.use_rtt_scaling && min_rtt != 0 {
            let scale = ((hz << 3) / 10u32.wrapping_mul(min_rtt)).clamp(1 << 2, 10 << 3);
            factor = (factor << 3) / scale;
            if factor == 0 {
                factor = 1;
            }
        }
        let s = &mut self.st;
        s.alpha = 2u32
            .wrapping_mul(factor)
            .wrapping_mul((1 << 7) - s.beta as u32);
        if s.alpha == 0 {
            s.alpha = ALPHA_BASE;
        }
    }

    /// `htcp_param_update()`.
    fn param_update(&mut self, sk: &Sock) {
        let (min_rtt, max_rtt) = (self.st.minRTT, self.st.maxRTT);
        self.beta_update(sk, min_rtt, max_rtt);
        self.alpha_update(sk);
        // A slowly fading memory of maxRTT, for routing changes.
        if min_rtt > 0 && max_rtt > min_rtt {
            self.st.maxRTT = min_rtt + ((max_rtt - min_rtt).wrapping_mul(95)) / 100;
        }
    }
}

const HTCP_READS: &[Field] = reads!(AIMD_READS, &[Field::icsk_ca_state, Field::jiffies]);

impl Declared for Htcp {
    const NAME: &'static str = "htcp";
    const SUMMARY: &'static str =
        "Linux H-TCP: increase grows with time since loss, adaptive backoff";
    type Params = HtcpParams;

    fn with_params(params: HtcpParams) -> Htcp {
        Htcp::new(params)
    }

    fn params(&self) -> &HtcpParams {
        &self.params
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn init(&mut self, sk: &mut Sock) {
        self.st = HtcpState {
            alpha: ALPHA_BASE,
            beta: BETA_MIN,
            pkts_acked: 1,
            last_cong: sk.jiffies,
            ..HtcpState::default()
        };
    }

    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        self.param_update(sk);
        (sk.snd_cwnd.wrapping_mul(self.st.beta as u32) >> 7).max(2)
    }

    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        let s = &mut self.st;
        if s.undo_last_cong != 0 {
            s.last_cong = s.undo_last_cong;
            s.maxRTT = s.undo_maxRTT;
            s.old_maxB = s.undo_old_maxB;
            s.undo_last_cong = 0;
        }
        tcp_reno_undo_cwnd(sk)
    }

    fn set_state(&mut self, sk: &mut Sock, new_state: CaState) {
        match new_state {
            CaState::Open => {
                if self.st.undo_last_cong != 0 {
                    self.st.last_cong = sk.jiffies;
                    self.st.undo_last_cong = 0;
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(sk),
            CaState::Disorder => {}
        }
    }

    /// `measure_achieved_throughput()`.
    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        let now = sk.jiffies;
        if sk.icsk_ca_state == CaState::Open {
            self.st.pkts_acked = sample.pkts_acked as u16;
        }
        if sample.rtt_us > 0 {
            let j = usecs_to_jiffies(sample.rtt_us as u32, sk.hz) as u32;
            self.measure_rtt(sk, j);
        }
        if !self.params.use_bandwidth_switch {
            return;
        }
        if !matches!(sk.icsk_ca_state, CaState::Open | CaState::Disorder) {
            self.st.packetcount = 0;
            self.st.lasttime = now;
            return;
        }
        self.st.packetcount = self.st.packetcount.wrapping_add(sample.pkts_acked);
        let alpha_pkts = match self.st.alpha >> 7 {
            0 => 1,
            a => a,
        };
        let s = self.st;
        if s.packetcount >= sk.snd_cwnd.wrapping_sub(alpha_pkts)
            && now.wrapping_sub(s.lasttime) >= s.minRTT
            && s.minRTT > 0
        {
            let cur_bi = s.packetcount.wrapping_mul(sk.hz) / now.wrapping_sub(s.lasttime);
            let ccount = self.cong_time(sk) / s.minRTT;
            let st = &mut self.st;
            if ccount <= 3 {
                // Just after a backoff: start the estimate afresh.
                st.minB = cur_bi;
                st.maxB = cur_bi;
                st.Bi = cur_bi;
            } else {
                st.Bi = (3u32.wrapping_mul(st.Bi).wrapping_add(cur_bi)) / 4;
                if st.Bi > st.maxB {
                    st.maxB = st.Bi;
                }
                if st.minB > st.maxB {
                    st.minB = st.maxB;
                }
            }
            st.packetcount = 0;
            st.lasttime = now;
        }
    }

    /// `htcp_cong_avoid()`: cwnd += alpha / cwnd per ACK.
    fn cong_avoid(&mut self, sk: &mut Sock, _ack: u32, acked: u32) {
        if !sk.is_cwnd_limited() {
            return;
        }
        if sk.in_slow_start() {
            tcp_slow_start(sk, acked);
            return;
        }
        if (sk.snd_cwnd_cnt.wrapping_mul(self.st.alpha)) >> 7 >= sk.snd_cwnd {
            if sk.snd_cwnd < sk.snd_cwnd_clamp {
                sk.snd_cwnd += 1;
            }
            sk.snd_cwnd_cnt = 0;
            self.alpha_update(sk);
        } else {
            sk.snd_cwnd_cnt = sk.snd_cwnd_cnt.wrapping_add(self.st.pkts_acked as u32);
        }
        self.st.pkts_acked = 1;
    }

    fn visit_ca(&self, visit: CaVisitor<'_>) {
        self.st.visit(visit)
    }

    fn set_ca(&mut self, name: &str, cell: i64) -> bool {
        self.st.set(name, cell)
    }

    fn reads(&self) -> &'static [Field] {
        HTCP_READS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Harness, Setup};

    #[test]
    fn alpha_grows_quadratically_after_the_first_second() {
        let mut h = Htcp::new(HtcpParams {
            use_rtt_scaling: false,
            use_bandwidth_switch: true,
        });
        let sk = Sock::new(1000).at(10_000_000);
        h.init(&mut sk.clone());
        // Less than HZ since the event: factor 1, alpha = 2 * 1 * (128 - 64).
        h.alpha_update(&Sock::new(1000).at(10_999_000));
        assert_eq!(h.state().alpha, 128);
        // 3 s: diff = 2000 jiffies past the first second:
        // factor = 1 + (10 * 2000 + 1000 * 1000 / 1000) / 1000 = 22.
        h.alpha_update(&Sock::new(1000).at(13_000_000));
        assert_eq!(h.state().alpha, 2 * 22 * 64);
    }

    #[test]
    fn rtt_scaling_divides_alpha_by_the_rtt_in_tenths_of_a_second() {
        let mut h = Htcp::default();
        h.init(&mut Sock::new(1000).at(0));
        // minRTT 200 jiffies (200 ms at HZ=1000): scale = 8000 / 2000 = 4
        // (0.5 after << 3): factor 1 -> 8 / 4 = 2: alpha 2 * 2 * 64.
        h.st.minRTT = 200;
        h.alpha_update(&Sock::new(1000).at(500_000));
        assert_eq!(h.state().alpha, 256);
        // 10 ms: scale 80 (capped at 10): factor 8 / 80 = 0 -> 1.
        h.st.minRTT = 10;
        h.alpha_update(&Sock::new(1000).at(500_000));
        assert_eq!(h.state().alpha, 128);
    }

    #[test]
    fn beta_is_min_over_max_rtt_within_half_and_point_eight() {
        let mut h = Htcp::new(HtcpParams {
            use_rtt_scaling: true,
            use_bandwidth_switch: false,
        });
        let sk = Sock::new(1000).at(0);
        h.init(&mut sk.clone());
        // The first event only switches modes on: beta 0.5.
        h.beta_update(&sk, 40, 60);
        assert_eq!((h.state().beta, h.state().modeswitch), (64, 1));
        // Then 40/60 = 0.667: 5120 / 60 = 85.
        h.beta_update(&sk, 40, 60);
        assert_eq!(h.state().beta, 85);
        // 40/41 would be 124: capped at 102.
        h.beta_update(&sk, 40, 41);
        assert_eq!(h.state().beta, BETA_MAX);
        // min RTT of 10 ms or less: always 0.5.
        h.beta_update(&sk, 10, 60);
        assert_eq!(h.state().beta, BETA_MIN);
    }

    #[test]
    fn a_bandwidth_change_resets_beta_to_half() {
        let mut h = Htcp::default();
        let sk = Sock::new(1000).at(0);
        h.init(&mut sk.clone());
        h.st.modeswitch = 1;
        h.st.maxB = 1000;
        h.st.old_maxB = 1000;
        h.beta_update(&sk, 40, 50);
        assert_eq!(h.state().beta, 102);
        // 30% more bandwidth than at the last event: 5 * 1300 > 6 * 1000.
        h.st.maxB = 1300;
        h.beta_update(&sk, 40, 50);
        assert_eq!((h.state().beta, h.state().modeswitch), (BETA_MIN, 0));
    }

    #[test]
    fn ssthresh_applies_beta() {
        let mut h = Harness::new(Htcp::default(), Sock::new(1000));
        h.init();
        h.sk.snd_cwnd = 100;
        // First event: beta 0.5.
        assert_eq!(h.ssthresh(), 50);
    }
}
