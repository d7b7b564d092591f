//! CUBIC against numbers worked out by hand from the arithmetic of Linux
//! 6.18 `net/ipv4/tcp_cubic.c` (each intermediate value is in a comment).

use kleinrock_cc::cubic::{cubic_root, Cubic, CubicParams, Scales};
use kleinrock_cc::harness::{sample, Harness, Setup};
use kleinrock_cc::{Algorithm, CaEvent, CaState, CongestionControl, Sock};

/// A connection in congestion avoidance (ssthresh = cwnd, cwnd-limited) at
/// `now_us` on a `hz` clock.
fn ca_sock(hz: u32, now_us: u64, cwnd: u32) -> Sock {
    Sock::new(hz)
        .at(now_us)
        .cwnd(cwnd)
        .ssthresh(cwnd)
        .cwnd_limited()
}

#[test]
fn cube_root_table_and_newton_step() {
    // a < 64: (v[a] + 35) >> 6. v[1] = 54: 89 >> 6 = 1; v[7] = 118:
    // 153 >> 6 = 2; v[26] = 187: 222 >> 6 = 3; v[63] = 254: 289 >> 6 = 4.
    for (a, r) in [
        (0u64, 0u32),
        (1, 1),
        (7, 2),
        (8, 2),
        (26, 3),
        (27, 3),
        (63, 4),
    ] {
        assert_eq!(cubic_root(a), r, "cbrt({a})");
    }
    // a = 64: fls 7, b = (7*84 >> 8) - 1 = 1, shift = 64 >> 3 = 8, v[8] =
    // 123, x = (133 << 1) >> 6 = 4; Newton: 2*4 + 64/(4*3) = 13; 13*341 >> 10 = 4.
    assert_eq!(cubic_root(64), 4);
    // a = 1000: fls 10, b = 2, shift = 1000 >> 6 = 15, v = 156, x = (166 << 2)
    // >> 6 = 10; 2*10 + 1000/90 = 31; 31*341 >> 10 = 10.
    assert_eq!(cubic_root(1000), 10);
    assert_eq!(cubic_root(1_000_000), 100);
    assert_eq!(cubic_root(1_000_000_000), 1000);
    // Not exact: cbrt(2^40) is 10321.3; the kernel's estimate is 10323.
    assert_eq!(cubic_root(1 << 40), 10323);
    assert_eq!(cubic_root(1 << 63), 2_098_142);
    assert_eq!(cubic_root(u64::MAX), 2_641_850);
}

#[test]
fn precomputed_scales() {
    let s = Scales::new(&CubicParams::default());
    // 8 * 1741 / 3 = 4642; 4642 / 307 = 15.
    assert_eq!(s.beta_scale, 15);
    assert_eq!(s.cube_rtt_scale, 410);
    // 2^40 / 410.
    assert_eq!(s.cube_factor, 2_681_735_677);
    // 3 * 307 * 1024 / 1741.
    assert_eq!(s.alpha_eq4, 541);
}

#[test]
fn ssthresh_beta_and_fast_convergence() {
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 100));
    // 100 * 717 / 1024 = 70; first loss: W_max = cwnd.
    assert_eq!(h.ssthresh(), 70);
    assert_eq!(h.cc.state().last_max_cwnd, 100);
    // A loss below W_max: W_max = 90 * 1741 / 2048 = 76; ssthresh 63.
    h.sk.snd_cwnd = 90;
    assert_eq!(h.ssthresh(), 63);
    assert_eq!(h.cc.state().last_max_cwnd, 76);
    // Without fast convergence W_max is the cwnd.
    h.cc = Cubic::new(CubicParams {
        fast_convergence: false,
        ..Default::default()
    });
    h.sk.snd_cwnd = 100;
    h.ssthresh();
    h.sk.snd_cwnd = 90;
    h.ssthresh();
    assert_eq!(h.cc.state().last_max_cwnd, 90);
    // Never below 2.
    h.sk.snd_cwnd = 2;
    assert_eq!(h.ssthresh(), 2);
}

/// One ACK of one segment at `elapsed_ms` after the epoch started, cwnd
/// pinned at 70, returning the `cnt` CUBIC computed.
fn cnt_at(h: &mut Harness<Cubic>, hz: u32, start_us: u64, elapsed_ms: u64) -> u32 {
    h.sk = ca_sock(hz, start_us + elapsed_ms * 1000, 70);
    h.cong_avoid(0, 1);
    h.cc.state().cnt
}

#[test]
fn k_and_the_cubic_target_at_chosen_times() {
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 100));
    h.ssthresh(); // W_max = 100, cwnd cut to 70 below.
    let start = 1_000_000;
    // Epoch starts: K = cubic_root(2681735677 * 30) = 4316 (2^-10 s; the
    // real-valued K is cbrt(30 / 0.4) = 4.217 s = 4318).
    // t = 0: delta = 410 * 4316^3 >> 40 = 29, target 71, cnt = 70 / 1.
    assert_eq!(cnt_at(&mut h, 1000, start, 0), 70);
    assert_eq!(h.cc.state().bic_K, 4316);
    assert_eq!(h.cc.state().bic_origin_point, 100);
    assert_eq!(h.cc.state().epoch_start, ca_sock(1000, start, 1).jiffies);
    // 1 s: t = 1024, offs 3292, delta 13, target 87, cnt = 70 / 17 = 4.
    assert_eq!(cnt_at(&mut h, 1000, start, 1000), 4);
    // 2 s: t = 2048, target 96, cnt = 70 / 26 = 2.
    assert_eq!(cnt_at(&mut h, 1000, start, 2000), 2);
    // 4 s: t = 4096 < K, target 100 - 0: cnt = 70 / 30 = 2.
    assert_eq!(cnt_at(&mut h, 1000, start, 4000), 2);
}

#[test]
fn target_looks_one_min_rtt_ahead_in_jiffies() {
    // HZ=250, delay_min 100 ms = usecs_to_jiffies 25 jiffies ahead:
    // t = (0 + 25) << 10 / 250 = 102, delta = 410 * 4214^3 >> 40 = 27,
    // target 73, cnt = 70 / 3 = 23.
    let mut h = Harness::new(Cubic::default(), ca_sock(250, 0, 100));
    h.ssthresh();
    h.cc.set_ca("delay_min", 100_000);
    assert_eq!(cnt_at(&mut h, 250, 5_000_000, 0), 23);
}

#[test]
fn cnt_is_recomputed_at_most_once_per_jiffy_and_32_times_a_second() {
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 100));
    h.ssthresh();
    let start = 1_000_000;
    assert_eq!(cnt_at(&mut h, 1000, start, 0), 70);
    // 31 ms later with the same cwnd: HZ/32 = 31 jiffies not exceeded.
    assert_eq!(cnt_at(&mut h, 1000, start, 31), 70);
    assert_eq!(h.cc.state().last_time, ca_sock(1000, start, 1).jiffies);
    // 32 ms: recomputed (the target has moved little: still 70 / 1).
    assert_eq!(cnt_at(&mut h, 1000, start, 32), 70);
    assert_eq!(
        h.cc.state().last_time,
        ca_sock(1000, start + 32_000, 1).jiffies
    );
}

#[test]
fn before_the_first_loss_growth_is_at_least_5_percent_per_rtt() {
    // last_max_cwnd == 0: origin = cwnd, target = cwnd + tiny: cnt would be
    // 100 * cwnd; capped at 20.
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 1_000_000, 70));
    h.cong_avoid(0, 1);
    assert_eq!(h.cc.state().cnt, 20);
}

#[test]
fn friendliness_counts_acks_at_the_reno_rate() {
    // cwnd 100: Reno gains one segment per 100 * 15 >> 3 = 187 ACKed.
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 100));
    h.ssthresh(); // W_max 100 = cwnd: the cubic part is flat.
    h.sk = ca_sock(1000, 1_000_000, 100);
    h.cong_avoid(0, 1); // epoch starts: ack_cnt = 1, tcp_cwnd = 100.
    assert_eq!(h.cc.state().tcp_cwnd, 100);
    // 100 ms later (past the 1/32 s hold-off), 187 more ACKed: ack_cnt 188
    // > 187, so tcp_cwnd 101 and ack_cnt 1.
    h.sk.snd_cwnd = 100;
    h.at(1_100_000);
    h.cong_avoid(0, 187);
    assert_eq!((h.cc.state().tcp_cwnd, h.cc.state().ack_cnt), (101, 1));
    // Reno is ahead by 1: cnt capped at 100 / 1 = 100 (the cubic part
    // alone asks for 100 * 100 ACKs per segment).
    assert_eq!(h.cc.state().cnt, 100);
    h.sk.snd_cwnd = 100;
    h.at(1_200_000);
    // ack_cnt 1 + 373 = 374 = 2 * 187: the kernel's loop stops at 187.
    h.cong_avoid(0, 373);
    assert_eq!((h.cc.state().tcp_cwnd, h.cc.state().ack_cnt), (102, 187));
    assert_eq!(h.cc.state().cnt, 50);
}

#[test]
fn newreno_emulation_gains_a_segment_per_window() {
    let p = CubicParams {
        friendly: kleinrock_cc::cubic::Friendly::NewReno,
        ..Default::default()
    };
    let mut h = Harness::new(Cubic::new(p), ca_sock(1000, 0, 100));
    h.ssthresh();
    h.sk = ca_sock(1000, 1_000_000, 100);
    h.cong_avoid(0, 1);
    h.sk.snd_cwnd = 100;
    h.at(1_100_000);
    h.cong_avoid(0, 99); // ack_cnt 100 = W_est: +1.
    assert_eq!((h.cc.state().tcp_cwnd, h.cc.state().ack_cnt), (101, 0));
    assert_eq!(h.cc.state().cnt, 100);
}

#[test]
fn hystart_ack_train_ends_slow_start_through_pkts_acked() {
    let mut h = Harness::new(Cubic::default(), Sock::new(1000));
    h.at(10_000_000);
    h.sk.snd_cwnd = 40;
    h.sk.snd_nxt = 100_000;
    h.init();
    // Min RTT 20 ms, no pacing rate: the train must last over 10 ms.
    let mut t = 10_000_000;
    for _ in 0..10 {
        t += 1000;
        h.at(t);
        h.pkts_acked(sample(2, 20_000, 40));
    }
    assert_eq!(h.cc.hystart_state().found, 0);
    h.at(t + 1000);
    h.pkts_acked(sample(2, 20_000, 40));
    assert_eq!(h.cc.hystart_state().found, 1);
    assert_eq!(h.sk.snd_ssthresh, 40);
    // Found: later samples no longer judge, even a huge RTT rise.
    h.sk.snd_ssthresh = u32::MAX;
    h.pkts_acked(sample(1, 900_000, 40));
    assert_eq!(h.sk.snd_ssthresh, u32::MAX);
}

#[test]
fn hystart_delay_detector_alone_and_low_window() {
    let p = CubicParams {
        hystart_detect: 2,
        hystart_low_window: 16,
        hystart_ack_delta_us: 2000,
        ..Default::default()
    };
    let mut h = Harness::new(Cubic::new(p), Sock::new(1000));
    h.sk.snd_cwnd = 10; // below hystart_low_window
    h.init();
    for _ in 0..20 {
        h.pkts_acked(sample(1, 60_000, 10));
    }
    assert_eq!(h.cc.hystart_state().found, 0);
    // First sample set delay_min to 60 ms; now cwnd 16 and RTTs of 67.5 ms
    // (threshold 60 + 7.5 ms): the ninth judged sample exits.
    h.sk.snd_cwnd = 16;
    for _ in 0..8 {
        h.pkts_acked(sample(1, 67_501, 16));
    }
    assert_eq!(h.cc.hystart_state().found, 0);
    h.pkts_acked(sample(1, 67_501, 16));
    assert_eq!(h.cc.hystart_state().found, 1);
    assert_eq!(h.sk.snd_ssthresh, 16);
}

#[test]
fn loss_state_resets_epoch_w_max_and_delay_min() {
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 100));
    h.ssthresh();
    h.pkts_acked(sample(1, 5000, 9));
    assert_eq!(h.cc.state().delay_min, 5000);
    h.set_state(CaState::Recovery);
    assert_eq!(h.cc.state().last_max_cwnd, 100);
    h.set_state(CaState::Loss);
    assert_eq!(*h.cc.state(), Default::default());
    assert_eq!(h.cc.hystart_state().curr_rtt, u32::MAX);
}

#[test]
fn rtt_samples_in_the_first_second_of_an_epoch_are_ignored() {
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 100));
    h.ssthresh();
    h.sk = ca_sock(1000, 1_000_000, 70);
    h.cong_avoid(0, 1); // epoch starts
    h.at(1_999_000);
    h.pkts_acked(sample(1, 7000, 9));
    assert_eq!(h.cc.state().delay_min, 0);
    h.at(2_000_000);
    h.pkts_acked(sample(1, 0, 9));
    assert_eq!(h.cc.state().delay_min, 1, "a zero RTT counts as 1 us");
    h.pkts_acked(sample(1, -1, 9));
    assert_eq!(h.cc.state().delay_min, 1);
}

#[test]
fn idle_shifts_the_epoch_but_never_into_the_future() {
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 100));
    h.ssthresh();
    h.sk = ca_sock(1000, 1_000_000, 70);
    h.cong_avoid(0, 1);
    let epoch = h.cc.state().epoch_start;
    // Last send at +100 ms, transmission restarts at +600 ms: +500 jiffies.
    h.at(1_100_000);
    h.sk.lsndtime = h.sk.jiffies;
    h.at(1_600_000);
    h.event(CaEvent::TxStart);
    assert_eq!(h.cc.state().epoch_start, epoch.wrapping_add(500));
    // lsndtime far in the past: capped at now.
    h.sk.lsndtime = h.sk.jiffies.wrapping_sub(100_000);
    h.event(CaEvent::TxStart);
    assert_eq!(h.cc.state().epoch_start, h.sk.jiffies);
    // Other events do nothing.
    h.event(CaEvent::CwndRestart);
    assert_eq!(h.cc.state().epoch_start, h.sk.jiffies);
}

#[test]
fn initial_ssthresh_applies_only_without_hystart() {
    let spec = |s: &str| s.parse::<Algorithm>().unwrap();
    let mut h = Harness::new(spec("cubic:initial_ssthresh=50"), Sock::new(1000));
    h.init();
    assert_eq!(h.sk.snd_ssthresh, kleinrock_cc::sock::TCP_INFINITE_SSTHRESH);
    h.cc = spec("cubic:initial_ssthresh=50:hystart=off");
    h.init();
    assert_eq!(h.sk.snd_ssthresh, 50);
}

#[test]
fn cnt_never_below_two_so_growth_is_at_most_1_5x_per_rtt() {
    let mut h = Harness::new(Cubic::default(), ca_sock(1000, 0, 10));
    h.ssthresh();
    // Far past K with a small window: target far above cwnd.
    h.sk = ca_sock(1000, 1_000_000, 7);
    h.cong_avoid(0, 1);
    h.sk.snd_cwnd = 7;
    h.at(60_000_000);
    h.cong_avoid(0, 1);
    assert_eq!(h.cc.state().cnt, 2);
}
