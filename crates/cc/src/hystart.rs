//! HyStart: leave slow start before the queue overflows (Linux flavour).
//!
//! Ha and Rhee, "Taming the Elephants: New TCP Slow Start" (Computer
//! Networks, 2011), as `net/ipv4/tcp_cubic.c` implements it in Linux 6.18.
//! Two detectors run on the RTT samples of each round (one window of data,
//! ending when `snd_una` passes the `snd_nxt` recorded at its start):
//!
//! - **ACK train**: ACKs arriving back to back (closer than
//!   `hystart_ack_delta_us`) for longer than half the minimum RTT mean the
//!   window already spans the path's capacity.
//! - **Delay increase**: the minimum RTT of the round's first eight samples
//!   exceeding the path's minimum by an eighth (clamped to 4-16 ms) means a
//!   queue is building.
//!
//! Either sets ssthresh to the current cwnd, ending slow start without loss.
//! Seed 000 (gVisor #10287) measured what this buys on a 140 ms path: a
//! 30 MB transfer at ~70 Mbit/s instead of ~41.
//!
//! The state lives inside CUBIC's private area in the kernel (`struct
//! bictcp`), under the member names used here, so traces name them alike.

use crate::params::param_enum;
use crate::sock::{after, Sock, USEC_PER_MSEC, USEC_PER_SEC};
use crate::state::private_state;

/// `HYSTART_ACK_TRAIN`: detection by ACK train length.
pub const HYSTART_ACK_TRAIN: u8 = 0x1;
/// `HYSTART_DELAY`: detection by RTT increase.
pub const HYSTART_DELAY: u8 = 0x2;

/// Samples per round before the delay detector judges (`HYSTART_MIN_SAMPLES`).
pub const HYSTART_MIN_SAMPLES: u8 = 8;
/// Smallest RTT increase that counts, microseconds: below 4 ms the noise of
/// delayed ACKs and scheduling would end slow start too early.
pub const HYSTART_DELAY_MIN: u32 = 4000;
/// Largest RTT increase required, microseconds: on long paths an eighth of
/// the RTT would let the queue grow too far before exiting.
pub const HYSTART_DELAY_MAX: u32 = 16000;

/// `HYSTART_DELAY_THRESH(x)`: clamp an eighth of the base RTT to 4-16 ms.
pub fn delay_thresh(x: u32) -> u32 {
    x.clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
}

/// The tunables (CUBIC's module parameters of the same names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HystartConfig {
    /// Bitmask of [`HYSTART_ACK_TRAIN`] and [`HYSTART_DELAY`].
    pub detect: u8,
    /// cwnd (segments) below which HyStart does not judge (default 16).
    pub low_window: u32,
    /// ACKs closer than this (microseconds) form a train (default 2000).
    pub ack_delta_us: u32,
}

impl HystartConfig {
    /// The kernel's defaults, which CUBIC's parameters start from.
    pub const DEFAULT: HystartConfig = HystartConfig {
        detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
        low_window: 16,
        ack_delta_us: 2000,
    };
}

impl Default for HystartConfig {
    fn default() -> Self {
        HystartConfig::DEFAULT
    }
}

param_enum! {
    /// Which slow-start exit runs (the `hystart` parameter of CUBIC and
    /// reno); the numbers are the ports' `SS_EXIT_*` (hystart_pp.bpf.h).
    pub enum SlowStartExit {
        /// Linux HyStart (`hystart=1`, CUBIC's default).
        #[default]
        Linux = 1 => "on",
        /// Plain slow start, exit on loss only (`hystart=0`).
        Off = 0 => "off",
        /// HyStart++, RFC 9406.
        HystartPP = 2 => "hspp",
    }
}

private_state! {
    /// Per-connection HyStart state; the members of `struct bictcp` it owns.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Hystart {
        /// RTT samples taken this round.
        pub sample_cnt: u8,
        /// Has slow start's exit point been found (0 or 1)?
        pub found: u8,
        /// Start of the round, microseconds (truncated `tcp_mstamp`).
        pub round_start: u32,
        /// `snd_nxt` at the start of the round: the round ends when it is ACKed.
        pub end_seq: u32,
        /// Time of the last ACK of the current train, microseconds.
        pub last_ack: u32,
        /// Minimum RTT of the round so far, microseconds.
        pub curr_rtt: u32,
    }
}

/// `bictcp_clock_us()`: the microsecond clock, truncated to 32 bits.
#[inline]
fn clock_us(sk: &Sock) -> u32 {
    sk.tcp_mstamp as u32
}

/// `hystart_ack_delay()`: a cushion for TSO/GRO aggregation, the time to send
/// four maximum-size GSO packets at the pacing rate, at most 1 ms. Without
/// it, short-RTT flows whose TSO packets grow during slow start would see an
/// ACK train too early and leave with too small an ssthresh.
pub fn ack_delay(sk: &Sock) -> u32 {
    let rate = sk.pacing_rate;
    if rate == 0 {
        return 0;
    }
    let cushion = (sk.gso_max_size as u64)
        .wrapping_mul(4)
        .wrapping_mul(USEC_PER_SEC)
        / rate;
    USEC_PER_MSEC.min(cushion) as u32
}

impl Hystart {
    /// `bictcp_hystart_reset()`: start a new round now.
    pub fn start_round(&mut self, sk: &Sock) {
        self.round_start = clock_us(sk);
        self.last_ack = self.round_start;
        self.end_seq = sk.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `hystart_update()`: feed one RTT sample (`delay`, microseconds) taken
    /// in slow start; on detection set ssthresh to cwnd.
    pub fn update(&mut self, cfg: &HystartConfig, sk: &mut Sock, delay_min: u32, delay: u32) {
        if after(sk.snd_una, self.end_seq) {
            self.start_round(sk);
        }
        if sk.snd_cwnd < cfg.low_window {
            return;
        }
        if cfg.detect & HYSTART_ACK_TRAIN != 0 {
            self.check_ack_train(cfg, sk, delay_min);
        }
        if cfg.detect & HYSTART_DELAY != 0 {
            self.check_delay(sk, delay_min, delay);
        }
    }

    fn check_ack_train(&mut self, cfg: &HystartConfig, sk: &mut Sock, delay_min: u32) {
        let now = clock_us(sk);
        if (now.wrapping_sub(self.last_ack) as i32) > cfg.ack_delta_us as i32 {
            return;
        }
        self.last_ack = now;
        let mut threshold = delay_min.wrapping_add(ack_delay(sk));
        // Unpaced, the train spans the window once it lasts half the minimum
        // RTT; paced, slow start may have spread it over up to the full RTT.
        if !sk.is_paced() {
            threshold >>= 1;
        }
        // The kernel compares an s32 with the u32 threshold, which C makes an
        // unsigned comparison: keep it unsigned.
        if now.wrapping_sub(self.round_start) > threshold {
            self.found = 1;
            sk.snd_ssthresh = sk.snd_cwnd;
        }
    }

    fn check_delay(&mut self, sk: &mut Sock, delay_min: u32, delay: u32) {
        if self.curr_rtt > delay {
            self.curr_rtt = delay;
        }
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
            return;
        }
        if self.curr_rtt > delay_min.wrapping_add(delay_thresh(delay_min >> 3)) {
            self.found = 1;
            sk.snd_ssthresh = sk.snd_cwnd;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Setup;

    #[test]
    fn delay_threshold_is_an_eighth_clamped_to_4_and_16_ms() {
        assert_eq!(delay_thresh(10_000 >> 3), 4000);
        assert_eq!(delay_thresh(80_000 >> 3), 10_000);
        assert_eq!(delay_thresh(140_000 >> 3), 16_000);
    }

    #[test]
    fn ack_delay_is_four_gso_packets_at_pacing_rate_capped_at_1ms() {
        let mut sk = Sock::new(1000);
        assert_eq!(ack_delay(&sk), 0);
        // 65536 * 4 bytes at 1 GB/s = 262 us.
        sk.pacing_rate = 1_000_000_000;
        assert_eq!(ack_delay(&sk), 262);
        sk.pacing_rate = 10_000_000;
        assert_eq!(ack_delay(&sk), 1000);
    }

    #[test]
    fn ack_train_longer_than_half_min_rtt_exits() {
        let cfg = HystartConfig::default();
        let mut h = Hystart::default();
        let delay_min = 10_000; // 10 ms path, no pacing rate: threshold 5 ms.
        let mut sk = Sock::new(1000).at(1_000_000).cwnd(32);
        sk.snd_nxt = 1000;
        h.start_round(&sk);
        // ACKs every 1 ms (a train): the 5th is 5 ms in (not > 5 ms)...
        for i in 1..=5 {
            sk.set_clock(1_000_000 + i * 1000);
            h.update(&cfg, &mut sk, delay_min, 10_000);
            assert_eq!(h.found, 0, "ack {i}");
        }
        // ...the 6th is past it.
        sk.set_clock(1_006_000);
        h.update(&cfg, &mut sk, delay_min, 10_000);
        assert_eq!(h.found, 1);
        assert_eq!(sk.snd_ssthresh, 32);
    }

    #[test]
    fn a_gap_in_the_ack_train_does_not_trigger() {
        let cfg = HystartConfig {
            detect: HYSTART_ACK_TRAIN,
            ..Default::default()
        };
        let mut h = Hystart::default();
        let mut sk = Sock::new(1000).at(0).cwnd(32);
        h.start_round(&sk);
        // Spacing of 2.5 ms > ack_delta 2 ms: never a train.
        for i in 1..20 {
            sk.set_clock(i * 2500);
            h.update(&cfg, &mut sk, 10_000, 10_000);
        }
        assert_eq!(h.found, 0);
        assert_eq!(h.last_ack, 0);
    }

    #[test]
    fn delay_increase_after_eight_samples_exits() {
        let cfg = HystartConfig {
            detect: HYSTART_DELAY,
            ..Default::default()
        };
        let mut h = Hystart::default();
        let mut sk = Sock::new(1000).at(0).cwnd(20);
        h.start_round(&sk);
        // Base 40 ms: threshold max(4 ms, 5 ms) = 5 ms; samples of 45.001 ms.
        for _ in 0..8 {
            h.update(&cfg, &mut sk, 40_000, 45_001);
        }
        assert_eq!((h.found, h.sample_cnt), (0, 8));
        h.update(&cfg, &mut sk, 40_000, 45_001);
        assert_eq!(h.found, 1);
        assert_eq!(sk.snd_ssthresh, 20);
        // Exactly at the threshold does not trigger.
        let mut h = Hystart::default();
        let mut sk = Sock::new(1000).at(0).cwnd(20);
        h.start_round(&sk);
        for _ in 0..20 {
            h.update(&cfg, &mut sk, 40_000, 45_000);
        }
        assert_eq!(h.found, 0);
    }

    #[test]
    fn below_low_window_only_rounds_are_tracked() {
        let cfg = HystartConfig::default();
        let mut h = Hystart::default();
        let mut sk = Sock::new(1000).at(0).cwnd(8);
        sk.snd_nxt = 500;
        h.start_round(&sk);
        sk.snd_una = 501;
        sk.snd_nxt = 900;
        sk.set_clock(7000);
        h.update(&cfg, &mut sk, 1000, 50_000);
        assert_eq!((h.end_seq, h.round_start, h.sample_cnt), (900, 7000, 0));
        assert_eq!(h.curr_rtt, u32::MAX);
    }
}
