//! The TCP core's own steps around the algorithm's hooks, written once for
//! every core that drives an algorithm: the simulator's sender and the
//! ACK-clock driver ([`crate::driver`]).
//!
//! Each function is the Linux 6.18 function it is named after, computed as
//! the kernel computes it (`u64` products that wrap as C's do), on the
//! fields of [`Sock`]; where the kernel calls a hook, the caller's [`Tap`]
//! calls it, so that a recorder sees it like any other. State the kernel
//! keeps in `struct tcp_sock` but [`Sock`] does not carry (PRR's counters,
//! `tlp_high_seq`, `undo_marker`, `prior_ssthresh`) stays with the caller,
//! which resets it beside the call; each function says which.
//!
//! - `tcp_update_pacing_rate()` (`tcp_input.c`): the pacing rate from cwnd
//!   and srtt.
//! - `tcp_set_ca_state()` (`tcp_cong.c`): the only way the state machine
//!   moves, the algorithm told first.
//! - `tcp_init_cwnd_reduction()`, `tcp_end_cwnd_reduction()`,
//!   `tcp_enter_cwr()`, `tcp_ecn_queue_cwr()` (`tcp_input.c`): where a
//!   reduction (CWR or Recovery) starts and ends.
//! - `tcp_cong_control()` (`tcp_input.c`) for a core without PRR: who sets
//!   the window after an ACK.

use crate::ops::{CaEvent, CongestionControl, Hook, RateSample, Tap};
use crate::sock::{
    CaState, Sock, TCP_ECN_OK, TCP_ECN_QUEUE_CWR, TCP_INFINITE_SSTHRESH, USEC_PER_SEC,
};

/// `sysctl_tcp_pacing_ss_ratio`'s default: pace at 200% of cwnd/srtt in
/// slow start, so that the window can double in a round trip.
pub const TCP_PACING_SS_RATIO: u64 = 200;

/// `sysctl_tcp_pacing_ca_ratio`'s default: 120% in congestion avoidance,
/// room for the window's growth and for ACK-clock jitter.
pub const TCP_PACING_CA_RATIO: u64 = 120;

/// `tcp_update_pacing_rate()`: `sk_pacing_rate` = ratio × mss × max(cwnd,
/// packets_out) / srtt, capped by `sk_max_pacing_rate`. Slow start is taken
/// to end at half of ssthresh ("approaching the end of slow start, slow
/// down"). Linux sets the rate on every ACK even when nothing paces (fq
/// and HyStart read it).
///
/// `srtt_us` is µs << 3, and the factor `(USEC_PER_SEC / 100) << 3` both
/// cancels that shift and scales the ratio from percent. The products are
/// `u64` and wrap as the kernel's do: only a window of hundreds of millions
/// of segments gets there.
pub fn tcp_update_pacing_rate(sk: &mut Sock) {
    let ratio = if sk.snd_cwnd < sk.snd_ssthresh / 2 {
        TCP_PACING_SS_RATIO
    } else {
        TCP_PACING_CA_RATIO
    };
    let mut rate = (sk.mss_cache as u64).wrapping_mul((USEC_PER_SEC / 100) << 3);
    rate = rate.wrapping_mul(ratio);
    rate = rate.wrapping_mul(sk.snd_cwnd.max(sk.packets_out) as u64);
    if sk.srtt_us != 0 {
        rate /= sk.srtt_us as u64;
    }
    sk.pacing_rate = rate.min(sk.max_pacing_rate);
}

/// `tcp_set_ca_state()`: the algorithm's `set_state` runs first, so that it
/// still reads the state being left in `icsk_ca_state`.
#[inline]
pub fn tcp_set_ca_state<C, T>(tap: &mut T, cc: &mut C, sk: &mut Sock, state: CaState)
where
    C: CongestionControl + ?Sized,
    T: Tap<C> + ?Sized,
{
    tap.call(&Hook::SetState(state), cc, sk);
    sk.icsk_ca_state = state;
}

/// `tcp_ecn_queue_cwr()`: with ECN negotiated, set CWR on the next data
/// segment, to tell the receiver it may stop echoing ECE.
#[inline]
pub fn tcp_ecn_queue_cwr(sk: &mut Sock) {
    if sk.ecn_flags & TCP_ECN_OK != 0 {
        sk.ecn_flags |= TCP_ECN_QUEUE_CWR;
    }
}

/// `tcp_init_cwnd_reduction()`: a reduction (CWR or Recovery) starts. It
/// lasts until `snd_una` passes today's `snd_nxt` (`high_seq`), starts
/// with the cwnd it will be measured against (`prior_cwnd`), asks the
/// algorithm for the new ssthresh (`ssthresh`: its hook, as the caller
/// calls hooks) and queues CWR for the receiver.
///
/// The caller resets what it keeps itself: `tlp_high_seq` and PRR's
/// `prr_delivered` and `prr_out`, which the kernel clears here too.
#[inline]
pub fn tcp_init_cwnd_reduction(sk: &mut Sock, ssthresh: impl FnOnce(&mut Sock) -> u32) {
    sk.high_seq = sk.snd_nxt;
    sk.snd_cwnd_cnt = 0;
    sk.prior_cwnd = sk.snd_cwnd;
    sk.snd_ssthresh = ssthresh(sk);
    tcp_ecn_queue_cwr(sk);
}

/// `tcp_enter_cwr()`: a reduction that is never undone (ECN's, or an
/// algorithm's own signal), made once: only from Open or Disorder. Returns
/// whether CWR was entered. The kernel first clears `prior_ssthresh` and
/// `undo_marker`, so that nothing undoes it; those, like the core's own
/// parts of [`tcp_init_cwnd_reduction`], are the caller's.
#[inline]
pub fn tcp_enter_cwr<C, T>(tap: &mut T, cc: &mut C, sk: &mut Sock) -> bool
where
    C: CongestionControl + ?Sized,
    T: Tap<C> + ?Sized,
{
    if sk.icsk_ca_state >= CaState::Cwr {
        return false;
    }
    tcp_init_cwnd_reduction(sk, |sk| tap.call(&Hook::Ssthresh, cc, sk));
    tcp_set_ca_state(tap, cc, sk, CaState::Cwr);
    true
}

/// `tcp_end_cwnd_reduction()`: the reduction is over; cwnd lands on
/// ssthresh, where PRR was taking it, unless the reduction was undone
/// (Recovery with no `undo_marker` left, the caller's to say) or the
/// algorithm sets cwnd itself (`cong_control`). Then `CA_EVENT_COMPLETE_CWR`.
#[inline]
pub fn tcp_end_cwnd_reduction<C, T>(tap: &mut T, cc: &mut C, sk: &mut Sock, undo_marked: bool)
where
    C: CongestionControl + ?Sized,
    T: Tap<C> + ?Sized,
{
    if cc.has_cong_control() {
        return;
    }
    if sk.snd_ssthresh < TCP_INFINITE_SSTHRESH && (sk.icsk_ca_state == CaState::Cwr || undo_marked)
    {
        sk.snd_cwnd = sk.snd_ssthresh;
        sk.snd_cwnd_stamp = sk.jiffies;
    }
    tap.call(&Hook::CwndEvent(CaEvent::CompleteCwr), cc, sk);
}

/// `tcp_cong_control()` in a core that keeps no PRR (the ACK-clock model,
/// the property scripts, the quinn adapter): the algorithm's
/// `cong_control` with the rate sample `rs` makes (asked only then), or
/// else `cong_avoid` outside a reduction, where the window stays where the
/// reduction put it (the simulator's sender runs PRR there instead), then
/// the pacing rate, which Linux sets even when nothing paces (HyStart
/// reads it).
#[inline]
pub fn tcp_cong_control_without_prr<C, T>(
    tap: &mut T,
    cc: &mut C,
    sk: &mut Sock,
    ack: u32,
    acked: u32,
    rs: impl FnOnce(&Sock) -> RateSample,
) where
    C: CongestionControl + ?Sized,
    T: Tap<C> + ?Sized,
{
    if cc.has_cong_control() {
        let rs = rs(sk);
        tap.call(&Hook::CongControl { ack, flag: 0, rs }, cc, sk);
        return;
    }
    if !matches!(sk.icsk_ca_state, CaState::Recovery | CaState::Cwr) {
        tap.call(&Hook::CongAvoid { ack, acked }, cc, sk);
    }
    tcp_update_pacing_rate(sk);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::NoTap;
    use crate::Algorithm;
    use alloc::vec::Vec;

    fn sock(cwnd: u32, ssthresh: u32, srtt_us: u32) -> Sock {
        let mut sk = Sock::new(1000);
        sk.mss_cache = 1000;
        sk.snd_cwnd = cwnd;
        sk.snd_ssthresh = ssthresh;
        sk.srtt_us = srtt_us;
        sk
    }

    #[test]
    fn pacing_is_twice_cwnd_over_srtt_in_slow_start_then_1_2_times() {
        // 10 segments of 1000 bytes per 10 ms: 1 MB/s.
        let mut sk = sock(10, TCP_INFINITE_SSTHRESH, 10_000 << 3);
        tcp_update_pacing_rate(&mut sk);
        assert_eq!(sk.pacing_rate, 2_000_000);
        // At half of ssthresh slow start is taken to be ending.
        sk.snd_ssthresh = 20;
        tcp_update_pacing_rate(&mut sk);
        assert_eq!(sk.pacing_rate, 1_200_000);
        // More out than cwnd (cwnd just cut): the flight sets the rate.
        sk.packets_out = 20;
        tcp_update_pacing_rate(&mut sk);
        assert_eq!(sk.pacing_rate, 2_400_000);
        sk.max_pacing_rate = 1_000_000;
        tcp_update_pacing_rate(&mut sk);
        assert_eq!(sk.pacing_rate, 1_000_000);
    }

    #[test]
    fn pacing_without_an_rtt_sample_is_not_divided() {
        let mut sk = sock(10, TCP_INFINITE_SSTHRESH, 0);
        tcp_update_pacing_rate(&mut sk);
        assert_eq!(sk.pacing_rate, 1000 * 80_000 * 200 * 10);
    }

    #[test]
    fn the_pacing_product_wraps_at_u64_as_the_kernels_does() {
        // mss 1000 x 80000 x 200 = 1.6e10 per segment of cwnd: u64 holds
        // 1152921504 segments of it, and wraps one later.
        let per_seg: u128 = 1000 * 80_000 * 200;
        let edge = (u64::MAX as u128 / per_seg) as u32;
        let srtt = 7u32 << 3;
        let mut sk = sock(edge, u32::MAX, srtt);
        tcp_update_pacing_rate(&mut sk);
        assert_eq!(
            sk.pacing_rate as u128,
            per_seg * edge as u128 / srtt as u128
        );
        sk.snd_cwnd = edge + 1;
        tcp_update_pacing_rate(&mut sk);
        let wrapped = (per_seg * (edge as u128 + 1)) % (1u128 << 64);
        assert_eq!(sk.pacing_rate as u128, wrapped / srtt as u128);
        assert!(sk.pacing_rate < per_seg as u64, "wrapped, not saturated");
    }

    /// Records the hooks called, by name.
    #[derive(Default)]
    struct Names(Vec<&'static str>);

    impl<C: CongestionControl + ?Sized> Tap<C> for Names {
        fn before(&mut self, hook: &Hook, _sk: &Sock, _cc: &C) {
            self.0.push(hook.name());
        }
    }

    /// Sees the state `set_state` is called in.
    struct SeesState(Option<(CaState, CaState)>);

    impl CongestionControl for SeesState {
        fn name(&self) -> &'static str {
            "sees_state"
        }
        fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
            sk.snd_cwnd / 2
        }
        fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
            sk.snd_cwnd
        }
        fn set_state(&mut self, sk: &mut Sock, new_state: CaState) {
            self.0 = Some((sk.icsk_ca_state, new_state));
        }
        fn reads(&self) -> &'static [crate::sock::Field] {
            &[]
        }
    }

    #[test]
    fn set_state_tells_the_algorithm_before_the_state_moves() {
        let mut cc = SeesState(None);
        let mut sk = Sock::new(1000);
        tcp_set_ca_state(&mut NoTap, &mut cc, &mut sk, CaState::Recovery);
        assert_eq!(cc.0, Some((CaState::Open, CaState::Recovery)));
        assert_eq!(sk.icsk_ca_state, CaState::Recovery);
    }

    #[test]
    fn a_reduction_starts_at_snd_nxt_with_the_algorithms_ssthresh() {
        let mut sk = sock(40, TCP_INFINITE_SSTHRESH, 0);
        sk.snd_cwnd_cnt = 7;
        sk.snd_nxt = 5000;
        sk.ecn_flags = TCP_ECN_OK;
        let mut seen_high_seq = 0;
        tcp_init_cwnd_reduction(&mut sk, |sk| {
            seen_high_seq = sk.high_seq;
            sk.snd_cwnd * 7 / 10
        });
        // The hook already sees the episode's end.
        assert_eq!(seen_high_seq, 5000);
        assert_eq!(
            (sk.snd_ssthresh, sk.prior_cwnd, sk.snd_cwnd_cnt, sk.high_seq),
            (28, 40, 0, 5000)
        );
        assert_eq!(sk.ecn_flags, TCP_ECN_OK | TCP_ECN_QUEUE_CWR);
        // Without ECN nothing is queued.
        let mut sk = sock(40, TCP_INFINITE_SSTHRESH, 0);
        tcp_init_cwnd_reduction(&mut sk, |_| 20);
        assert_eq!(sk.ecn_flags, 0);
    }

    #[test]
    fn cwr_is_entered_once_from_open_or_disorder() {
        let mut cc: Algorithm = "reno".parse().unwrap();
        let mut names = Names::default();
        let mut sk = sock(40, TCP_INFINITE_SSTHRESH, 0);
        sk.icsk_ca_state = CaState::Disorder;
        assert!(tcp_enter_cwr(&mut names, &mut cc, &mut sk));
        assert_eq!(names.0, ["ssthresh", "set_state"]);
        assert_eq!(
            (sk.icsk_ca_state, sk.snd_ssthresh, sk.prior_cwnd),
            (CaState::Cwr, 20, 40)
        );
        for state in [CaState::Cwr, CaState::Recovery, CaState::Loss] {
            sk.icsk_ca_state = state;
            assert!(!tcp_enter_cwr(&mut names, &mut cc, &mut sk));
        }
        assert_eq!(names.0.len(), 2);
    }

    #[test]
    fn a_reduction_ends_at_ssthresh_unless_undone() {
        let mut cc: Algorithm = "reno".parse().unwrap();
        let mut names = Names::default();
        let mut sk = sock(12, 20, 0);
        sk.icsk_ca_state = CaState::Recovery;
        // Recovery whose undo_marker is gone (undone): cwnd stays.
        tcp_end_cwnd_reduction(&mut names, &mut cc, &mut sk, false);
        assert_eq!(sk.snd_cwnd, 12);
        tcp_end_cwnd_reduction(&mut names, &mut cc, &mut sk, true);
        assert_eq!(sk.snd_cwnd, 20);
        // CWR always lands on ssthresh; an infinite one never.
        sk.icsk_ca_state = CaState::Cwr;
        sk.snd_cwnd = 9;
        tcp_end_cwnd_reduction(&mut names, &mut cc, &mut sk, false);
        assert_eq!(sk.snd_cwnd, 20);
        sk.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        tcp_end_cwnd_reduction(&mut names, &mut cc, &mut sk, true);
        assert_eq!(sk.snd_cwnd, 20);
        assert_eq!(names.0, ["cwnd_event"; 4]);
        // An algorithm with cong_control owns cwnd: nothing, no event.
        let mut bbr: Algorithm = "bbr".parse().unwrap();
        let mut names = Names::default();
        sk.snd_ssthresh = 5;
        tcp_end_cwnd_reduction(&mut names, &mut bbr, &mut sk, true);
        assert_eq!((sk.snd_cwnd, names.0.len()), (20, 0));
    }
}
