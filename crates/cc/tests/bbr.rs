//! BBR against numbers worked out from Linux 6.18 `net/ipv4/tcp_bbr.c`.

use kleinrock_cc::bbr::{Bbr, Mode, BBR_UNIT, BW_UNIT, DRAIN_GAIN, HIGH_GAIN, PACING_GAIN};
use kleinrock_cc::harness::{Harness, Setup};
use kleinrock_cc::{CaState, CongestionControl, PacingStatus, RateSample, Sock};

#[test]
fn gains_in_fixed_point() {
    // The values kernel traces show in pacing_gain: 256 * 2885 / 1000 + 1
    // = 739 (2.887x), 256 * 1000 / 2885 = 88 (0.344x).
    assert_eq!(HIGH_GAIN, 739);
    assert_eq!(DRAIN_GAIN, 88);
    assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
    // What they are for: STARTUP's gain is at least 2/ln 2, the smallest
    // that doubles the sending rate each round; PROBE_BW's cycle averages
    // a gain of 1, adding no queue over a cycle.
    assert!(HIGH_GAIN as f64 / 256.0 >= 2.0 / 2f64.ln());
    assert_eq!(PACING_GAIN.iter().sum::<u32>(), 8 * 256);
}

/// `b` attached to a connection at 1 s with cwnd 10.
fn started(b: Bbr) -> Harness<Bbr> {
    let mut h = Harness::new(b, Sock::new(1000).at(1_000_000).cwnd(10));
    h.init();
    h
}

#[test]
fn init_paces_at_high_gain_times_init_cwnd_per_nominal_ms() {
    let h = started(Bbr::new());
    // No RTT yet: bw = 10 * 2^24 / 1000 us = 167772 (units of 2^-24 pkt/us);
    // rate = 167772 * 1448 * 739 >> 8 = 701_291_... then * 990000 >> 24.
    let bw: u64 = 10 * BW_UNIT / 1000;
    let expect = (((bw * 1448 * 739) >> 8) * 990_000) >> 24;
    assert_eq!(h.sk.pacing_rate, expect);
    assert_eq!(h.sk.pacing_status, PacingStatus::Needed);
    assert_eq!(h.cc.state().mode, Mode::Startup);
    assert_eq!(h.cc.state().min_rtt_us, u32::MAX);
}

#[test]
fn startup_ends_after_three_rounds_without_25_percent_growth() {
    let mut h = started(Bbr::new());
    // 10 packets per 10 ms round: bw = 10 * 2^24 / 10000 = 16777.
    let mut t = 1_000_000u64;
    for round in 0..3 {
        t += 10_000;
        h.at(t);
        h.delivered(10, 10_000, 10_000);
        assert_eq!(h.cc.state().mode, Mode::Startup, "round {round}");
    }
    assert_eq!(h.cc.state().full_bw, 16_777);
    assert!(!h.cc.state().full_bw_reached);
    t += 10_000;
    h.at(t);
    h.sk.packets_out = 100; // much inflight: DRAIN cannot end at once
    h.delivered(10, 10_000, 10_000);
    assert!(h.cc.state().full_bw_reached);
    assert_eq!(h.cc.state().mode, Mode::Drain);
    assert_eq!(h.cc.state().pacing_gain, DRAIN_GAIN);
    // ssthresh = inflight at gain 1: bdp = ceil(16777 * 10000 / 2^24) = 10,
    // plus 3 TSO bursts at the pacing rate then in force, which STARTUP never
    // lowered from its initial 41,381,651 bytes/s: 40,411 bytes per 1/1024 s
    // = 27 segments; 10 + 81 = 91, rounded up to even: 92.
    assert_eq!(h.sk.snd_ssthresh, 92);
    // Then the pacing rate drops to the drain gain: 16777 * 1448 * 88 >> 8,
    // * 990000 >> 24 = 492,766 bytes/s.
    assert_eq!(h.sk.pacing_rate, 492_766);
    // Inflight falls to the BDP: PROBE_BW, at a phase other than 1 (drain).
    h.sk.packets_out = 5;
    t += 10_000;
    h.at(t);
    h.delivered(10, 10_000, 10_000);
    assert_eq!(h.cc.state().mode, Mode::ProbeBw);
    assert_ne!(h.cc.state().cycle_idx, 1);
}

#[test]
fn bdp_rounds_up_and_cwnd_tracks_it_once_the_pipe_is_full() {
    let mut h = started(Bbr::new());
    let mut t = 1_000_000u64;
    // 1 packet per us (bw = 2^24), 10 ms RTT: BDP 10,000 packets, all
    // ACKed by one ACK per round.
    for _ in 0..6 {
        t += 10_000;
        h.at(t);
        h.sk.packets_out = 5;
        h.delivered(10_000, 10_000, 10_000);
    }
    assert!(h.cc.state().full_bw_reached);
    assert_eq!(h.cc.state().bw.get(), 1 << 24);
    assert_eq!(h.cc.state().mode, Mode::ProbeBw);
    // STARTUP grew cwnd by each ACK's 10,000 for three rounds: 30,010.
    // Then in PROBE_BW (cwnd gain 2) the target is the BDP,
    // 2^24 * 10000 * 512 >> 8 = 2^24 * 20000, rounded up in packets:
    // 20,000; plus ACK aggregation: each ACK delivers 10,000 where the
    // epoch, restarted by the ACK before, expected none: extra_acked
    // 10,000, under the 100 ms cap of 100,000; plus three TSO bursts at
    // the pacing rate of phase 7 (gain 1), 2^24 * 1448 * 990000 >> 24 =
    // 1,433,520,000 bytes/s, >> 10 = 1,399,921 bytes per 1/1024 s, capped
    // at 65,215 (GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER) = 45 segments:
    // 20,000 + 10,000 + 135 = 30,135, rounded up to even, and no +2
    // outside phase 0: 30,136. cwnd = min(30,010 + 10,000, 30,136).
    assert_eq!(h.cc.state().extra_acked, [10_000, 10_000]);
    assert_eq!(h.sk.pacing_rate, 1_433_520_000);
    assert_eq!(h.cc.state().cycle_idx, 7);
    assert_eq!(h.sk.snd_cwnd, 30_136);
}

#[test]
fn probe_rtt_after_ten_seconds_caps_cwnd_at_four_for_200ms() {
    let mut h = started(Bbr::new());
    let mut t = 1_000_000u64;
    for _ in 0..6 {
        t += 10_000;
        h.at(t);
        h.sk.packets_out = 5;
        h.delivered(100, 10_000, 10_000);
    }
    // RTT samples above the 10 ms minimum for 10 s: the filter expires.
    while t < 11_200_000 {
        t += 10_000;
        h.at(t);
        h.sk.packets_out = 50;
        h.delivered(100, 10_000, 12_000);
    }
    assert_eq!(h.cc.state().mode, Mode::ProbeRtt);
    assert_eq!(h.sk.snd_cwnd, 4);
    // PROBE_RTT samples are marked app-limited up to what is delivered
    // and in flight: 6 * 100 + 1014 * 100 delivered, 50 in flight.
    assert_eq!(h.sk.app_limited, 102_000 + 50);
    // Inflight at 4: the next ACK (+10 ms) sets the end 200 ms on and
    // starts a round, the one after ends that round; the first ACK past
    // the end, 10 ms steps on the 1 ms jiffies clock, is at +220 ms.
    h.sk.packets_out = 4;
    let entered = t;
    while h.cc.state().mode == Mode::ProbeRtt {
        t += 10_000;
        h.at(t);
        h.delivered(4, 10_000, 10_000);
        assert!(t - entered < 400_000, "PROBE_RTT does not end");
    }
    assert_eq!(t - entered, 220_000);
    assert_eq!(h.cc.state().mode, Mode::ProbeBw);
    assert_eq!(h.cc.state().min_rtt_us, 10_000);
}

#[test]
fn loss_recovery_conserves_packets_then_restores_cwnd() {
    let mut h = started(Bbr::new());
    h.sk.snd_cwnd = 100;
    h.sk.packets_out = 100;
    // bbr_ssthresh() saves cwnd and returns ssthresh as it is: a loss does
    // not lower it (Reno's would be 50).
    h.sk.snd_ssthresh = 77;
    assert_eq!(h.ssthresh(), 77);
    assert_eq!((h.sk.snd_cwnd, h.sk.snd_ssthresh), (100, 77));
    assert_eq!(h.cc.state().prior_cwnd, 100);
    // The first ACK in Recovery: cwnd = 100 - 10 lost = 90, then packet
    // conservation, inflight (100 out - 10 lost) + 2 ACKed.
    h.sk.icsk_ca_state = CaState::Recovery;
    h.sk.lost_out = 10;
    let mut rs = RateSample {
        acked_sacked: 2,
        delivered: -1,
        interval_us: -1,
        rtt_us: -1,
        losses: 10,
        ..Default::default()
    };
    h.cong_control(&rs);
    assert!(h.cc.state().packet_conservation);
    assert_eq!(h.sk.snd_cwnd, 90 + 2);
    // Leaving recovery restores the saved 100; fewer than TCP_INIT_CWND
    // delivered so far, STARTUP still grows by the 2 ACKed: 102.
    h.sk.icsk_ca_state = CaState::Open;
    rs.losses = 0;
    h.cong_control(&rs);
    assert!(!h.cc.state().packet_conservation);
    assert_eq!(h.sk.snd_cwnd, 102);
    // bbr_undo_cwnd() returns cwnd as it is, not the core's prior_cwnd
    // (Reno's undo would give 150), and forgets full-pipe detection and
    // long-term sampling, which the spurious loss may have misled.
    h.sk.prior_cwnd = 150;
    for (name, v) in [
        ("full_bw", 5_000),
        ("full_bw_cnt", 2),
        ("lt_is_sampling", 1),
        ("lt_bw", 1_234),
    ] {
        assert!(h.cc.set_ca(name, v), "{name}");
    }
    assert_eq!(h.undo(), 102);
    let st = h.cc.state();
    assert_eq!((st.full_bw, st.full_bw_cnt), (0, 0));
    assert_eq!((st.lt_is_sampling, st.lt_bw), (false, 0));
}

#[test]
fn the_gain_cycle_phase_is_seeded_and_can_be_dictated() {
    let run = |seed: Option<u64>, forced: Option<u64>| {
        let mut b = Bbr::new();
        if let Some(s) = seed {
            b.set_random_seed(s);
        }
        let mut h = started(b);
        let mut t = 1_000_000u64;
        for _ in 0..4 {
            t += 10_000;
            h.at(t);
            h.sk.packets_out = 5;
            if let Some(f) = forced {
                h.cc.expect_random("cycle_idx", f as i64);
            }
            h.delivered(10, 10_000, 10_000);
        }
        assert_eq!(h.cc.state().mode, Mode::ProbeBw);
        h.cc.state().cycle_idx
    };
    // Drawn among the seven phases other than the drain (1); 50 seeds
    // reach them all.
    let phases: std::collections::BTreeSet<u32> = (0..50).map(|s| run(Some(s), None)).collect();
    assert_eq!(
        phases.into_iter().collect::<Vec<_>>(),
        [0, 2, 3, 4, 5, 6, 7]
    );
    assert_eq!(run(Some(3), None), run(Some(3), None));
    assert_eq!(run(None, Some(5)), 5);
}

/// A rate sample that carries no delivery: the model only ages.
fn no_sample() -> RateSample {
    RateSample {
        delivered: -1,
        interval_us: -1,
        rtt_us: -1,
        ..Default::default()
    }
}

#[test]
fn a_gain_cycle_phase_ages_by_the_kernels_u32_microseconds() {
    // tcp_stamp_us_delta() returns u32: a phase that began 2^32 + 5 us ago
    // reads as 5 us old, short of min_rtt, so it goes on.
    let mut h = started(Bbr::new());
    for (name, v) in [
        ("mode", Mode::ProbeBw as i64),
        ("cycle_idx", 3),
        ("pacing_gain", BBR_UNIT as i64),
        ("min_rtt_us", 10_000),
        ("cycle_mstamp", 1_000),
    ] {
        assert!(h.cc.set_ca(name, v), "{name}");
    }
    h.sk.delivered_mstamp = 1_000 + (1 << 32) + 5;
    h.cong_control(&no_sample());
    assert_eq!(h.cc.state().cycle_idx, 3);
    // One min_rtt past it, modulo 2^32, the phase ends.
    h.sk.delivered_mstamp = 1_000 + (1 << 32) + 10_001;
    h.cong_control(&no_sample());
    assert_eq!(h.cc.state().cycle_idx, 4);
}

#[test]
fn an_ack_epoch_ages_by_the_kernels_u32_microseconds() {
    // bw 2^23 (half a packet per us): 2^32 + 1000 us into the epoch the
    // kernel expects 500 packets, not 2^31 + 500, so the 2000 ACKed are
    // excess and the epoch goes on.
    let mut h = started(Bbr::new());
    for (name, v) in [
        ("bw_s0_v", 1 << 23),
        ("ack_epoch_mstamp", 1_000),
        ("ack_epoch_acked", 2_000),
    ] {
        assert!(h.cc.set_ca(name, v), "{name}");
    }
    h.sk.snd_cwnd = 5_000; // above the excess, which it caps
    h.sk.delivered += 10;
    h.sk.delivered_mstamp = 1_000 + (1 << 32) + 1_000;
    let rs = RateSample {
        delivered: 10,
        interval_us: 20,
        rtt_us: -1,
        acked_sacked: 10,
        ..Default::default()
    };
    h.cong_control(&rs);
    assert_eq!(h.cc.state().ack_epoch_mstamp, 1_000);
    assert_eq!(h.cc.state().ack_epoch_acked, 2_010);
    assert_eq!(h.cc.state().extra_acked, [1_510, 0]);
}
