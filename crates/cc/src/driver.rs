//! A deterministic ACK clock: one bulk flow over one bottleneck, advanced a
//! round trip at a time, calling an algorithm's hooks in the order Linux
//! does.
//!
//! This is a round model, not the packet-level simulator: each round sends a
//! window of segments, the bottleneck (a rate and a tail-drop buffer) and a
//! Bernoulli loss process decide which arrive, and their ACKs return spread
//! evenly over the round with one RTT sample each (the base RTT or the
//! queue's drain time, whichever is larger). Loss detection, recovery and
//! timeouts are the TCP core's simplest faithful outline:
//!
//! - a loss seen by three later segments (or, for a tail loss, the end of
//!   the round, standing in for the tail loss probe) enters Recovery: `ssthresh()`,
//!   `set_state(Recovery)`, no `cong_avoid` until the round ends, then cwnd
//!   = ssthresh (what PRR converges to) and `set_state(Open)`;
//! - a round that delivers fewer than three segments after a loss times out:
//!   `ssthresh()`, `cwnd_event(LOSS)`, cwnd = 1, `set_state(Loss)`, an RTO
//!   of `max(200 ms, srtt + 4 * rttvar)` of silence, then slow start.
//!
//! Tests use it to drive algorithms through realistic hook sequences (and
//! record them as traces); the CLI's `model` command uses it to show an
//! algorithm's behaviour in a second. The same seed gives the same run.
//!
//! The pacing rate and state changes are the TCP core's own
//! ([`crate::tcp`]); the start and end of a recovery are this model's
//! outline of them.

use crate::ops::{AckSample, CaEvent, CongestionControl, Hook, RateSample, Tap};
use crate::rand::SplitMix64;
use crate::sock::{CaState, Sock, TCP_INFINITE_SSTHRESH, USEC_PER_SEC};
use crate::tcp::{tcp_cong_control_without_prr, tcp_set_ca_state};
use alloc::vec::Vec;

/// Linux's minimum RTO (`TCP_RTO_MIN`), microseconds.
pub const TCP_RTO_MIN_US: u64 = 200_000;

/// The path and the flow's ACK policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    /// Base (propagation) round-trip time, microseconds.
    pub rtt_us: u32,
    /// Bottleneck rate, segments per second.
    pub rate_pps: u64,
    /// Bottleneck buffer, segments.
    pub buffer_pkts: u32,
    /// Random loss, parts per million per segment.
    pub loss_ppm: u32,
    /// Segments per ACK (2: delayed ACKs).
    pub ack_every: u32,
    /// Seed of the loss process.
    pub seed: u64,
}

impl Path {
    /// The bandwidth-delay product, segments.
    pub fn bdp_pkts(&self) -> u64 {
        self.rate_pps * self.rtt_us as u64 / USEC_PER_SEC
    }
}

/// What a run delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Rounds run.
    pub rounds: u64,
    /// Model time elapsed, µs.
    pub elapsed_us: u64,
    /// Segments that arrived.
    pub delivered_pkts: u64,
    /// Segments dropped by the buffer or the loss process.
    pub lost_pkts: u64,
    /// Fast recoveries entered.
    pub recoveries: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Sum of cwnd over rounds, for the mean.
    pub cwnd_sum: u64,
}

impl Totals {
    /// Goodput in bits per second for segments of `mss` bytes.
    pub fn goodput_bps(&self, mss: u32) -> u64 {
        if self.elapsed_us == 0 {
            return 0;
        }
        (self.delivered_pkts as u128 * mss as u128 * 8 * USEC_PER_SEC as u128
            / self.elapsed_us as u128) as u64
    }

    /// The mean cwnd over the rounds, segments.
    pub fn mean_cwnd(&self) -> u64 {
        self.cwnd_sum.checked_div(self.rounds).unwrap_or(0)
    }
}

/// Drives one algorithm `C` over a [`Path`], every hook call passing through
/// the tap `T`.
pub struct Driver<C: CongestionControl, T: Tap<C>> {
    /// The connection the algorithm reads and writes.
    pub sk: Sock,
    /// The algorithm.
    pub cc: C,
    /// What sees every hook call.
    pub tap: T,
    path: Path,
    rng: SplitMix64,
    now_us: u64,
    rttvar_us: u64,
    totals: Totals,
    /// Where the current round began: `delivered` and time (µs), the
    /// rate sample's interval for algorithms with `cong_control`.
    round_delivered: u32,
    round_start_us: u64,
}

impl<C: CongestionControl, T: Tap<C>> Driver<C, T> {
    /// A connection at time zero on a `hz` jiffies clock, its algorithm
    /// initialised.
    pub fn new(cc: C, path: Path, hz: u32, tap: T) -> Self {
        let mut d = Driver {
            sk: Sock::new(hz),
            cc,
            tap,
            rng: SplitMix64::new(path.seed),
            path,
            now_us: 0,
            rttvar_us: 0,
            totals: Totals::default(),
            round_delivered: 0,
            round_start_us: 0,
        };
        d.sk.set_clock(0);
        d.call(Hook::Init);
        d
    }

    /// What the run has delivered so far.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Model time, µs.
    pub fn now_us(&self) -> u64 {
        self.now_us
    }

    /// The path the rounds run over.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Changes the path from the next round on (e.g. to stop random loss).
    pub fn set_path(&mut self, path: Path) {
        self.path = path;
    }

    fn call(&mut self, hook: Hook) -> u32 {
        self.tap.call(&hook, &mut self.cc, &mut self.sk)
    }

    /// Runs rounds until `duration_us` of model time has passed.
    pub fn run_for(&mut self, duration_us: u64) -> Totals {
        let end = self.now_us + duration_us;
        while self.now_us < end {
            self.run_round();
        }
        self.totals
    }

    /// Sends one window and processes its ACKs.
    pub fn run_round(&mut self) {
        let mss = self.sk.mss_cache;
        let n = self.sk.snd_cwnd.max(1);
        let round_start = self.now_us;
        self.sk.set_clock(round_start);
        self.round_delivered = self.sk.delivered;
        self.round_start_us = round_start;
        // A bulk flow refills the pipe as ACKs return, so it transmits from
        // an empty pipe (CA_EVENT_TX_START) only once, at the start.
        if self.totals.rounds == 0 {
            self.call(Hook::CwndEvent(CaEvent::TxStart));
        }
        self.send(n, mss);

        let lost = self.drop_pattern(n);
        let delivered = n - lost.iter().filter(|&&l| l).count() as u32;
        let drain_us = n as u64 * USEC_PER_SEC / self.path.rate_pps.max(1);
        let duration = (self.path.rtt_us as u64).max(drain_us).max(1);
        let sample = duration.min(i32::MAX as u64) as u32;

        if delivered < 3 && delivered < n {
            return self.time_out(round_start, duration, n, delivered);
        }
        let first_loss = lost.iter().position(|&l| l);
        let step = self.path.ack_every.max(1) as usize;
        let mut seen_after_loss = 0u32;
        let mut i = 0usize;
        while i < n as usize {
            let group = &lost[i..(i + step).min(n as usize)];
            i += group.len();
            let acked = group.iter().filter(|&&l| !l).count() as u32;
            if let Some(f) = first_loss {
                if i > f {
                    seen_after_loss += acked;
                }
            }
            if acked == 0 {
                continue;
            }
            let at = round_start + duration * i as u64 / n as u64;
            self.sk.set_clock(at);
            let detect = seen_after_loss >= 3 && self.sk.icsk_ca_state == CaState::Open;
            self.ack(acked, sample, mss, detect);
        }
        // A tail loss has no three later segments to reveal it; Linux's
        // tail loss probe would, about one RTT later: count it in this round.
        if first_loss.is_some() && self.sk.icsk_ca_state == CaState::Open {
            self.enter_recovery();
        }
        if self.sk.icsk_ca_state != CaState::Open {
            self.finish_recovery();
        }
        self.end_round(n, delivered, round_start + duration);
    }

    /// Books a round of `n` segments and moves the clock to its end.
    fn end_round(&mut self, n: u32, delivered: u32, end_us: u64) {
        let t = &mut self.totals;
        t.rounds += 1;
        t.cwnd_sum += n as u64;
        t.delivered_pkts += delivered as u64;
        t.lost_pkts += (n - delivered) as u64;
        t.elapsed_us = end_us;
        self.now_us = end_us;
    }

    fn send(&mut self, n: u32, mss: u32) {
        let sk = &mut self.sk;
        sk.packets_out = n;
        sk.max_packets_out = n;
        sk.is_cwnd_limited = true;
        sk.snd_nxt = sk.snd_una.wrapping_add(n.wrapping_mul(mss));
        sk.lsndtime = sk.jiffies;
    }

    /// Which of `n` segments are lost: tail drop beyond BDP + buffer, then
    /// Bernoulli loss on the rest.
    fn drop_pattern(&mut self, n: u32) -> Vec<bool> {
        let capacity = self.path.bdp_pkts() + self.path.buffer_pkts as u64;
        (0..n as u64)
            .map(|i| i >= capacity.max(1) || self.rng.chance_ppm(self.path.loss_ppm))
            .collect()
    }

    /// One ACK for `acked` segments, in the order of Linux's `tcp_ack()`:
    /// in_ack_event, pkts_acked, then either the loss response or growth.
    fn ack(&mut self, acked: u32, rtt_us: u32, mss: u32, detect_loss: bool) {
        let prior_in_flight = self.sk.packets_in_flight();
        {
            let sk = &mut self.sk;
            sk.snd_una = sk.snd_una.wrapping_add(acked.wrapping_mul(mss));
            sk.packets_out = sk.packets_out.saturating_sub(acked);
            sk.delivered = sk.delivered.wrapping_add(acked);
            sk.delivered_mstamp = sk.tcp_mstamp;
        }
        self.update_rtt(rtt_us);
        self.call(Hook::InAckEvent(0));
        self.call(Hook::PktsAcked(AckSample {
            pkts_acked: acked,
            rtt_us: rtt_us as i32,
            in_flight: prior_in_flight,
        }));
        if detect_loss {
            self.enter_recovery();
        }
        let ack = self.sk.snd_una;
        let (round_delivered, round_start_us) = (self.round_delivered, self.round_start_us);
        // The round so far as the rate sample: what tcp_rate.c would
        // measure from the round's first segment.
        let rs = |sk: &Sock| RateSample {
            prior_delivered: round_delivered,
            prior_mstamp: round_start_us.max(1),
            delivered: sk.delivered.wrapping_sub(round_delivered) as i32,
            interval_us: sk
                .tcp_mstamp
                .saturating_sub(round_start_us)
                .max(rtt_us as u64) as i64,
            rtt_us: rtt_us as i64,
            acked_sacked: acked,
            prior_in_flight,
            losses: i32::from(detect_loss),
            ..RateSample::default()
        };
        tcp_cong_control_without_prr(&mut self.tap, &mut self.cc, &mut self.sk, ack, acked, rs);
    }

    /// RFC 6298 smoothing as `tcp_rtt_estimator()` keeps it (srtt << 3).
    fn update_rtt(&mut self, m: u32) {
        let sk = &mut self.sk;
        let m = m.max(1);
        if sk.srtt_us == 0 {
            sk.srtt_us = m << 3;
            self.rttvar_us = m as u64 / 2;
        } else {
            let srtt = (sk.srtt_us >> 3) as i64;
            let err = (m as i64 - srtt).unsigned_abs();
            self.rttvar_us = (3 * self.rttvar_us + err) / 4;
            sk.srtt_us = sk.srtt_us - (sk.srtt_us >> 3) + m;
        }
        sk.min_rtt_us = sk.min_rtt_us.min(m);
    }

    /// The round model's `tcp_enter_recovery()`: remember cwnd, ask for
    /// ssthresh, switch state. An outline, not
    /// [`crate::tcp::tcp_init_cwnd_reduction`]: `snd_cwnd_cnt` carries
    /// over and `ssthresh` sees the previous `high_seq` (the kernel clears
    /// the one and moves the other first); `kleinrock model`'s outputs
    /// are recorded with this outline.
    fn enter_recovery(&mut self) {
        self.sk.prior_cwnd = self.sk.snd_cwnd;
        self.sk.snd_ssthresh = self.call(Hook::Ssthresh);
        self.sk.high_seq = self.sk.snd_nxt;
        self.set_state(CaState::Recovery);
        self.totals.recoveries += 1;
    }

    /// End of recovery: cwnd = ssthresh, as `tcp_end_cwnd_reduction()`
    /// leaves a Recovery that was not undone, but without its
    /// `CA_EVENT_COMPLETE_CWR` (see [`Driver::enter_recovery`]).
    fn finish_recovery(&mut self) {
        if self.sk.icsk_ca_state == CaState::Recovery
            && self.sk.snd_ssthresh < TCP_INFINITE_SSTHRESH
            && !self.cc.has_cong_control()
        {
            self.sk.snd_cwnd = self.sk.snd_ssthresh;
            self.sk.snd_cwnd_stamp = self.sk.jiffies;
        }
        self.set_state(CaState::Open);
    }

    fn set_state(&mut self, s: CaState) {
        tcp_set_ca_state(&mut self.tap, &mut self.cc, &mut self.sk, s);
    }

    /// `tcp_enter_loss()` after an RTO, then the silent RTO itself.
    fn time_out(&mut self, round_start: u64, duration: u64, n: u32, delivered: u32) {
        let rto = ((self.sk.srtt_us >> 3) as u64 + 4 * self.rttvar_us).max(TCP_RTO_MIN_US);
        let fire = round_start + duration.max(rto);
        self.sk.set_clock(fire);
        self.sk.prior_cwnd = self.sk.snd_cwnd;
        self.sk.snd_ssthresh = self.call(Hook::Ssthresh);
        self.call(Hook::CwndEvent(CaEvent::Loss));
        self.sk.snd_cwnd = 1;
        self.sk.snd_cwnd_cnt = 0;
        self.sk.packets_out = 0;
        self.sk.snd_una = self.sk.snd_nxt;
        self.set_state(CaState::Loss);
        self.totals.timeouts += 1;
        self.end_round(n, delivered, fire);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::NoTap;
    use crate::Algorithm;

    fn path(loss_ppm: u32) -> Path {
        Path {
            rtt_us: 10_000,
            rate_pps: 10_000,
            buffer_pkts: 100,
            loss_ppm,
            ack_every: 1,
            seed: 7,
        }
    }

    #[test]
    fn lossless_reno_fills_the_pipe_then_saws() {
        let cc: Algorithm = "reno".parse().unwrap();
        let mut d = Driver::new(cc, path(0), 1000, NoTap);
        let t = d.run_for(20 * USEC_PER_SEC);
        // BDP 100 + 100 buffer: losses come only from the buffer overflowing.
        assert!(t.recoveries > 0);
        assert_eq!(t.timeouts, 0);
        let util = t.delivered_pkts * USEC_PER_SEC / t.elapsed_us;
        assert!(
            util > 9_000,
            "reno keeps a 2xBDP-buffered link busy: {util} pps"
        );
    }

    #[test]
    fn same_seed_same_run_other_seed_other_run() {
        let run = |seed| {
            let cc: Algorithm = "cubic".parse().unwrap();
            let mut d = Driver::new(
                cc,
                Path {
                    seed,
                    ..path(20_000)
                },
                250,
                NoTap,
            );
            d.run_for(5 * USEC_PER_SEC)
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn heavy_loss_times_out() {
        let cc: Algorithm = "reno".parse().unwrap();
        let mut d = Driver::new(cc, path(500_000), 1000, NoTap);
        let t = d.run_for(10 * USEC_PER_SEC);
        assert!(t.timeouts > 0);
        // The last timeout came at cwnd 1: tcp_reno_ssthresh() gives
        // max(1 >> 1, 2).
        assert_eq!((d.sk.prior_cwnd, d.sk.snd_ssthresh), (1, 2));
    }
}
