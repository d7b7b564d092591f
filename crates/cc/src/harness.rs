//! A test harness: one algorithm and the connection it controls, driven
//! hook by hook the way the TCP core calls them (quiche's
//! `test_sender.rs`). Every test of this crate builds its connection and
//! its algorithm through it, so a fixture is set up one way everywhere:
//!
//! ```text
//! let mut h = Harness::new(Cubic::default(), Sock::new(1000).at(1_000_000).cwnd(70));
//! h.init().acked(2, 20_000).cong_avoid(0, 2);
//! assert_eq!(h.cc.state().cnt, 20);
//! ```
//!
//! The fields are public: a test reaches into the connection (`h.sk`) or
//! the algorithm (`h.cc`) for what a helper does not cover. Built for this
//! crate's unit tests and, with the `harness` feature, for its integration
//! tests and any crate that tests an algorithm of its own.

use crate::ops::{AckSample, CaEvent, CongestionControl, RateSample};
use crate::sock::{CaState, Sock, TCP_ECN_OK};

/// Chainable setup of a test connection: `Sock::new(hz).at(t).cwnd(n)`.
pub trait Setup: Sized {
    /// Both clocks at `now_us` ([`Sock::set_clock`]).
    fn at(self, now_us: u64) -> Self;
    /// `snd_cwnd`, segments.
    fn cwnd(self, cwnd: u32) -> Self;
    /// `snd_ssthresh`, segments.
    fn ssthresh(self, ssthresh: u32) -> Self;
    /// The application keeps cwnd full (`tp->is_cwnd_limited`).
    fn cwnd_limited(self) -> Self;
    /// ECN was negotiated (`TCP_ECN_OK`).
    fn ecn(self) -> Self;
}

impl Setup for Sock {
    fn at(mut self, now_us: u64) -> Sock {
        self.set_clock(now_us);
        self
    }
    fn cwnd(mut self, cwnd: u32) -> Sock {
        self.snd_cwnd = cwnd;
        self
    }
    fn ssthresh(mut self, ssthresh: u32) -> Sock {
        self.snd_ssthresh = ssthresh;
        self
    }
    fn cwnd_limited(mut self) -> Sock {
        self.is_cwnd_limited = true;
        self
    }
    fn ecn(mut self) -> Sock {
        self.ecn_flags |= TCP_ECN_OK;
        self
    }
}

/// `struct ack_sample`: `pkts_acked` segments acknowledged, an RTT sample
/// (-1: none) and `in_flight` as the kernel fills it.
pub fn sample(pkts_acked: u32, rtt_us: i32, in_flight: u32) -> AckSample {
    AckSample {
        pkts_acked,
        rtt_us,
        in_flight,
    }
}

/// One algorithm and its connection.
#[derive(Clone, Debug)]
pub struct Harness<C> {
    /// The algorithm under test.
    pub cc: C,
    /// Its connection.
    pub sk: Sock,
}

impl<C: CongestionControl> Harness<C> {
    /// `cc` on `sk`, not yet initialised (a test may set the connection up
    /// first, or call hooks before `init` as the kernel can).
    pub fn new(cc: C, sk: Sock) -> Harness<C> {
        Harness { cc, sk }
    }

    /// `init`, as when the algorithm is attached.
    pub fn init(&mut self) -> &mut Self {
        self.cc.init(&mut self.sk);
        self
    }

    /// Moves both clocks to `now_us`.
    pub fn at(&mut self, now_us: u64) -> &mut Self {
        self.sk.set_clock(now_us);
        self
    }

    /// `pkts_acked` with the ACK's sample.
    pub fn pkts_acked(&mut self, s: AckSample) -> &mut Self {
        self.cc.pkts_acked(&mut self.sk, &s);
        self
    }

    /// `pkts_acked` for an ACK of `pkts` segments with an RTT sample of
    /// `rtt_us` (-1: none) and `in_flight` left at 0.
    pub fn acked(&mut self, pkts: u32, rtt_us: i32) -> &mut Self {
        self.pkts_acked(sample(pkts, rtt_us, 0))
    }

    /// `cong_avoid`: `ack` is the new `snd_una`, `acked` the segments it
    /// delivered.
    pub fn cong_avoid(&mut self, ack: u32, acked: u32) -> &mut Self {
        self.cc.cong_avoid(&mut self.sk, ack, acked);
        self
    }

    /// `cong_control` with the rate sample `rs`.
    pub fn cong_control(&mut self, rs: &RateSample) -> &mut Self {
        self.cc.cong_control(&mut self.sk, 0, 0, rs);
        self
    }

    /// An ACK in steady delivery for model-based algorithms: `segs` more
    /// segments delivered over `interval_us`, an RTT sample of `rtt_us`,
    /// everything in flight before it (`snd_cwnd`), then `cong_control`.
    pub fn delivered(&mut self, segs: u32, interval_us: i64, rtt_us: i64) -> &mut Self {
        let prior = self.sk.delivered;
        self.sk.delivered += segs;
        self.sk.delivered_mstamp = self.sk.tcp_mstamp;
        let rs = RateSample {
            prior_delivered: prior,
            prior_mstamp: 1,
            delivered: segs as i32,
            interval_us,
            rtt_us,
            acked_sacked: segs,
            prior_in_flight: self.sk.snd_cwnd,
            ..RateSample::default()
        };
        self.cong_control(&rs)
    }

    /// `ssthresh`: the threshold the algorithm asks for (the core has not
    /// applied it yet).
    pub fn ssthresh(&mut self) -> u32 {
        self.cc.ssthresh(&mut self.sk)
    }

    /// `set_state`, then the state changes, as `tcp_set_ca_state()` does.
    pub fn set_state(&mut self, s: CaState) -> &mut Self {
        self.cc.set_state(&mut self.sk, s);
        self.sk.icsk_ca_state = s;
        self
    }

    /// `cwnd_event`.
    pub fn event(&mut self, ev: CaEvent) -> &mut Self {
        self.cc.cwnd_event(&mut self.sk, ev);
        self
    }

    /// `in_ack_event` with the `CA_ACK_*` flags.
    pub fn in_ack_event(&mut self, flags: u32) -> &mut Self {
        self.cc.in_ack_event(&mut self.sk, flags);
        self
    }

    /// `undo_cwnd`: the window the algorithm would restore.
    pub fn undo(&mut self) -> u32 {
        self.cc.undo_cwnd(&mut self.sk)
    }

    /// A fast retransmit as the core handles it: cwnd saved for undo, the
    /// algorithm's `ssthresh` applied, then Recovery. Returns the new
    /// ssthresh.
    pub fn loss(&mut self) -> u32 {
        self.sk.prior_cwnd = self.sk.snd_cwnd;
        self.sk.snd_ssthresh = self.ssthresh();
        self.set_state(CaState::Recovery);
        self.sk.snd_ssthresh
    }

    /// The private member `name` as a trace names it, if the algorithm has
    /// it.
    pub fn member(&self, name: &str) -> Option<i64> {
        let mut found = None;
        self.cc.visit_ca(&mut |n, v| {
            if n == name {
                found = Some(v);
            }
        });
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reno::Reno;
    use crate::sock::TCP_INFINITE_SSTHRESH;

    #[test]
    fn a_reno_flow_through_the_harness() {
        let sk = Sock::new(1000).at(2_000_000).cwnd(10).cwnd_limited().ecn();
        assert_eq!((sk.tcp_mstamp, sk.ecn_flags), (2_000_000, TCP_ECN_OK));
        let mut h = Harness::new(Reno::default(), sk);
        h.init().acked(2, 10_000).cong_avoid(0, 2);
        assert_eq!(h.sk.snd_cwnd, 12, "slow start: +2");
        assert_eq!(h.sk.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        assert_eq!(h.loss(), 6);
        assert_eq!(
            (h.sk.prior_cwnd, h.sk.icsk_ca_state),
            (12, CaState::Recovery)
        );
        h.sk.snd_cwnd = 6;
        assert_eq!(h.undo(), 12);
        assert_eq!(h.member("hspp_phase"), None, "reno has no private state");
    }
}
