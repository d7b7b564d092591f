//! TCP Vegas: congestion avoidance by the queue it measures.
//!
//! Brakmo and Peterson, "TCP Vegas: End to End Congestion Avoidance on a
//! Global Internet", IEEE JSAC 13(8), 1995; a port of Linux 6.18
//! `net/ipv4/tcp_vegas.c`.
//!
//! Once per round trip Vegas compares the window it has with the window the
//! path would need at its base RTT:
//!
//! ```text
//!     diff = cwnd * (rtt - base_rtt) / base_rtt     (packets queued)
//! ```
//!
//! where `rtt` is the smallest sample of the last round (filtering delayed
//! ACKs) and `base_rtt` the smallest ever. Below `alpha` packets queued it
//! adds a segment, above `beta` it removes one, between it holds: a flow
//! that keeps 2-4 packets in the bottleneck queue. In slow start, more than
//! `gamma` queued ends slow start at the rate actually achieved. Losses
//! are Reno's business (`ssthresh`, `undo_cwnd`), and Vegas restarts its
//! measurements after any of them, after idle, and at the start.

use alloc::format;
use alloc::string::String;

use crate::aimd::{
    reads, tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd, tcp_slow_start, AIMD_READS,
};
use crate::ops::{AckSample, CaEvent, CaVisitor, CongestionControl};
use crate::params::{params, Token};
use crate::registry::Declared;
use crate::sock::{after, CaState, Field, Sock};
use crate::state::{private_state, PrivateState};

params! {
    /// Vegas' module parameters.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct VegasParams {
        /// Fewest packets to keep queued (default 2).
        alpha: u32 {
            default: 2,
            range: 0..=1000000,
            help: "lower bound of packets in the bottleneck queue (default 2)",
            token: Token::Prefix("a"),
        },
        /// Most packets to keep queued (default 4).
        beta: u32 {
            default: 4,
            range: 0..=1000000,
            help: "upper bound of packets in the bottleneck queue (default 4)",
            token: Token::Prefix("b"),
        },
        /// Slow start ends above this many queued (default 1).
        gamma: u32 {
            default: 1,
            range: 0..=1000000,
            help: "packets queued that end slow start (default 1)",
            token: Token::Prefix("g"),
        },
    }
}

private_state! {
    /// `struct vegas`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[allow(non_snake_case)]
    pub struct VegasState {
        /// Right edge of the window when the current round began.
        pub beg_snd_nxt: u32,
        /// `snd_una` when the current round began.
        pub beg_snd_una: u32,
        /// cwnd when the current round began.
        pub beg_snd_cwnd: u32,
        /// Is Vegas's delay-based control on (off during reductions)?
        pub doing_vegas_now: u8,
        /// RTT samples this round (a u16 in the kernel).
        pub cntRTT: u16,
        /// Smallest RTT this round, µs.
        pub minRTT: u32,
        /// Smallest RTT ever, µs.
        pub baseRTT: u32,
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
/// TCP Vegas (Brakmo and Peterson), as `tcp_vegas.c`.
pub struct Vegas {
    params: VegasParams,
    st: VegasState,
}

impl Vegas {
    /// Vegas with parameters `params`.
    pub fn new(params: VegasParams) -> Vegas {
        Vegas {
            params,
            st: VegasState::default(),
        }
    }

    /// The private state, as a trace names its members.
    pub fn state(&self) -> &VegasState {
        &self.st
    }

    /// `vegas_enable()`: measure from the next window on.
    fn enable(&mut self, sk: &Sock) {
        self.st.doing_vegas_now = 1;
        self.st.beg_snd_nxt = sk.snd_nxt;
        self.st.cntRTT = 0;
        self.st.minRTT = 0x7fff_ffff;
    }

    /// `tcp_vegas_init()`.
    fn restart(&mut self, sk: &Sock) {
        self.st.baseRTT = 0x7fff_ffff;
        self.enable(sk);
    }

    /// The once-per-round adjustment, with enough samples.
    fn adjust(&mut self, sk: &mut Sock, acked: u32) {
        let rtt = self.st.minRTT;
        let base = self.st.baseRTT;
        let target_cwnd = (sk.snd_cwnd as u64 * base as u64) / rtt as u64;
        let diff = sk.snd_cwnd.wrapping_mul(rtt.wrapping_sub(base)) / base;
        if diff > self.params.gamma && sk.in_slow_start() {
            // Too fast: leave slow start at the achieved rate, plus one for
            // the truncation.
            sk.snd_cwnd = sk.snd_cwnd.min((target_cwnd as u32).wrapping_add(1));
            sk.snd_ssthresh = sk.snd_ssthresh.min(sk.snd_cwnd);
        } else if sk.in_slow_start() {
            tcp_slow_start(sk, acked);
        } else if diff > self.params.beta {
            sk.snd_cwnd = sk.snd_cwnd.wrapping_sub(1);
            sk.snd_ssthresh = sk.snd_ssthresh.min(sk.snd_cwnd);
        } else if diff < self.params.alpha {
            sk.snd_cwnd = sk.snd_cwnd.wrapping_add(1);
        }
        if sk.snd_cwnd < 2 {
            sk.snd_cwnd = 2;
        } else if sk.snd_cwnd > sk.snd_cwnd_clamp {
            sk.snd_cwnd = sk.snd_cwnd_clamp;
        }
        sk.snd_ssthresh = sk.current_ssthresh();
    }
}

const VEGAS_READS: &[Field] = reads!(AIMD_READS, &[Field::snd_nxt, Field::icsk_ca_state]);

impl Declared for Vegas {
    const NAME: &'static str = "vegas";
    const SUMMARY: &'static str =
        "Linux Vegas: keep alpha..beta packets queued, measured once per RTT";
    type Params = VegasParams;

    fn with_params(params: VegasParams) -> Vegas {
        Vegas::new(params)
    }

    fn params(&self) -> &VegasParams {
        &self.params
    }

    /// `tcp_vegas.c` takes any alpha, beta and gamma, but a round below
    /// alpha packets queued adds a segment and one above beta removes one:
    /// with alpha above beta no queue satisfies both, and the window moves
    /// every round, around beta, instead of holding (alpha = beta holds at
    /// exactly that queue).
    fn check(p: &VegasParams) -> Result<(), String> {
        if p.alpha > p.beta {
            return Err(format!(
                "vegas's alpha={} is above its beta={}: Vegas grows the window below alpha \
                 packets queued and shrinks it above beta, so it would never hold still \
                 (the kernel takes this and oscillates); give alpha <= beta",
                p.alpha, p.beta
            ));
        }
        Ok(())
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn init(&mut self, sk: &mut Sock) {
        self.restart(sk);
    }

    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        tcp_reno_ssthresh(sk)
    }

    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        tcp_reno_undo_cwnd(sk)
    }

    /// `tcp_vegas_pkts_acked()`: min-filter this round's RTT and the base.
    fn pkts_acked(&mut self, _sk: &mut Sock, sample: &AckSample) {
        if sample.rtt_us < 0 {
            return;
        }
        // Never a zero RTT or base RTT.
        let vrtt = (sample.rtt_us as u32).wrapping_add(1);
        if vrtt < self.st.baseRTT {
            self.st.baseRTT = vrtt;
        }
        self.st.minRTT = self.st.minRTT.min(vrtt);
        self.st.cntRTT = self.st.cntRTT.wrapping_add(1);
    }

    /// `tcp_vegas_state()`: measure only while Open.
    fn set_state(&mut self, sk: &mut Sock, new_state: CaState) {
        if new_state == CaState::Open {
            self.enable(sk);
        } else {
            self.st.doing_vegas_now = 0;
        }
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.restart(sk);
        }
    }

    /// `tcp_vegas_cong_avoid()`.
    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        if self.st.doing_vegas_now == 0 {
            return tcp_reno_cong_avoid(sk, ack, acked);
        }
        if after(ack, self.st.beg_snd_nxt) {
            self.st.beg_snd_nxt = sk.snd_nxt;
            // Two samples per round mean one ACK per round: delayed ACKs
            // only. Three give at least one undelayed sample.
            if self.st.cntRTT <= 2 {
                tcp_reno_cong_avoid(sk, ack, acked);
            } else {
                self.adjust(sk, acked);
            }
            self.st.cntRTT = 0;
            self.st.minRTT = 0x7fff_ffff;
        } else if sk.in_slow_start() {
            tcp_slow_start(sk, acked);
        }
    }

    fn visit_ca(&self, visit: CaVisitor<'_>) {
        self.st.visit(visit)
    }

    fn set_ca(&mut self, name: &str, cell: i64) -> bool {
        self.st.set(name, cell)
    }

    fn reads(&self) -> &'static [Field] {
        VEGAS_READS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Harness, Setup};

    /// Vegas on a cwnd-limited connection.
    fn vegas(cwnd: u32, ssthresh: u32) -> Harness<Vegas> {
        let sk = Sock::new(1000).cwnd(cwnd).ssthresh(ssthresh).cwnd_limited();
        Harness::new(Vegas::default(), sk)
    }

    /// A round: one-segment ACKs with these RTTs, then one past its end.
    fn round(h: &mut Harness<Vegas>, rtts: &[i32], next_ack: u32) {
        for &r in rtts {
            h.acked(1, r);
        }
        h.cong_avoid(next_ack, 1);
    }

    #[test]
    fn holds_between_alpha_and_beta_packets_queued() {
        let mut h = vegas(20, 10);
        h.init();
        h.sk.snd_nxt = 1000;
        h.init();
        // Base RTT 10 ms (samples +1 us): 10001.
        round(&mut h, &[10_000, 10_000, 10_000], 1001);
        // diff = 20 * 0 / 10001 = 0 < alpha: +1.
        assert_eq!(h.sk.snd_cwnd, 21);
        // Round at 11.5 ms: diff = 21 * 1500 / 10001 = 3: hold.
        h.sk.snd_nxt = 2000;
        round(&mut h, &[11_500, 11_600, 11_550], 2001);
        assert_eq!(h.sk.snd_cwnd, 21);
        // Round at 13 ms: diff = 21 * 3000 / 10001 = 6 > beta: -1.
        h.sk.snd_nxt = 3000;
        round(&mut h, &[13_000, 13_100, 13_050], 3001);
        assert_eq!(h.sk.snd_cwnd, 20);
        // ssthresh follows: min(ssthresh, cwnd) then current_ssthresh (3/4).
        assert_eq!(h.sk.snd_ssthresh, 15);
    }

    #[test]
    fn too_few_samples_means_reno_and_slow_start_exits_at_the_actual_rate() {
        let mut h = vegas(40, u32::MAX >> 1);
        h.sk.snd_nxt = 100;
        h.init();
        // Two samples: Reno slow start (+1 for one ACKed).
        round(&mut h, &[10_000, 20_000], 101);
        assert_eq!(h.sk.snd_cwnd, 41);
        // Three samples at twice the base RTT: diff = 41 > gamma in slow
        // start: cwnd = min(41, 41 * 10001 / 20001 + 1) = 21.
        h.sk.snd_nxt = 200;
        round(&mut h, &[20_000, 20_000, 20_000], 201);
        assert_eq!(h.sk.snd_cwnd, 21);
        assert_eq!(h.sk.snd_ssthresh, 21);
    }
}
