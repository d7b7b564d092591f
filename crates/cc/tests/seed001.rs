//! Seed 001 (FreeBSD review D46546) in miniature: on a sub-millisecond path
//! a coarse clock starves CUBIC's RFC 8312 Eq. 4 friendly window, while a
//! NewReno-emulated one does not care what the clock is.

use kleinrock_cc::harness::{Harness, Setup};
use kleinrock_cc::{Algorithm, Sock};

/// Puts a CUBIC flow just after a loss at cwnd 28 (cut to 20, so W_max =
/// 28) on a 500 us path, then ACKs one segment every 25 us for 20 ms (40
/// round trips), with cwnd pinned at 20 so that only the clock differs
/// between runs. Returns the friendly window W_est (`tcp_cwnd`) after the
/// first and the last ACK.
fn friendly_window(spec: &str, hz: u32) -> (u32, u32) {
    let cc: Algorithm = format!("{spec}:hystart=off").parse().unwrap();
    let mut h = Harness::new(cc, Sock::new(hz).at(1_000_000));
    h.init();
    h.sk.snd_cwnd = 28;
    h.sk.snd_ssthresh = h.ssthresh();
    h.sk.srtt_us = 500 << 3;
    h.sk.is_cwnd_limited = true;
    let tcp_cwnd = |h: &Harness<Algorithm>| h.member("tcp_cwnd").unwrap() as u32;
    let mut first = None;
    for i in 0..800u64 {
        h.at(1_000_000 + 25 * i);
        h.sk.snd_cwnd = 20;
        h.cong_avoid(0, 1);
        first.get_or_insert(tcp_cwnd(&h));
    }
    (first.unwrap(), tcp_cwnd(&h))
}

#[test]
fn eq4_window_grows_far_slower_per_rtt_on_a_coarse_clock() {
    // W_est = (W_max * 717 + 541 * t_ticks / rtt_ticks) >> 10, the 500 us
    // RTT reading as one tick at either HZ. At t = 0: 28 * 717 >> 10 = 19.
    assert_eq!(friendly_window("cubic:friendly=eq4", 1000).0, 19);
    assert_eq!(friendly_window("cubic:friendly=eq4", 100).0, 19);
    // After 20 ms, HZ=1000: t = 19 ticks (the last ACK is at 19.975 ms),
    // (20076 + 541 * 19) >> 10 = 29: ten segments in 40 round trips.
    assert_eq!(friendly_window("cubic:friendly=eq4", 1000).1, 29);
    // HZ=100: t = 1 tick, (20076 + 541) >> 10 = 20: one segment.
    assert_eq!(friendly_window("cubic:friendly=eq4", 100).1, 20);
}

#[test]
fn newreno_emulated_window_does_not_depend_on_hz() {
    // One segment per window of ACKs from 20: 800 ACKs reach 45, whatever
    // the clock (the sum 20 + 21 + ... + 44 is 800).
    for hz in [100, 250, 1000, 10_000, 100_000] {
        assert_eq!(
            friendly_window("cubic:friendly=newreno", hz),
            (20, 45),
            "HZ={hz}"
        );
    }
}
