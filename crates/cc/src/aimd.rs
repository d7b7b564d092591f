//! The window arithmetic every Linux algorithm shares (`net/ipv4/tcp_cong.c`).
//!
//! Slow start and additive increase are written once here, exactly as the
//! kernel computes them (wrapping `u32` arithmetic included), and called by
//! every algorithm that grows its window the classic way. BPF ports call the
//! kernel's own copies as kfuncs, so these must agree bit for bit.

use crate::sock::{Field, Sock};

/// The connection fields the helpers below read, in the order algorithms
/// list them: an algorithm that calls them reads these, and lists them with
/// `reads!` before its own.
pub const AIMD_READS: &[Field] = &[
    Field::snd_cwnd,
    Field::snd_ssthresh,
    Field::snd_cwnd_cnt,
    Field::snd_cwnd_clamp,
    Field::is_cwnd_limited,
    Field::max_packets_out,
    Field::prior_cwnd,
];

/// `reads!(A, B, ...)`: the fields of the lists `A`, `B`, ... in order, as
/// one `&'static [Field]` built at compile time. An algorithm's reads are
/// those of the helpers it calls and then its own, and a variant's are its
/// base's and then what the variant adds, each list written once.
macro_rules! reads {
    ($($list:expr),+ $(,)?) => {{
        use $crate::sock::Field;
        const LISTS: &[&[Field]] = &[$($list),+];
        const N: usize = {
            let (mut n, mut i) = (0, 0);
            while i < LISTS.len() {
                n += LISTS[i].len();
                i += 1;
            }
            n
        };
        const ALL: [Field; N] = {
            let mut all = [Field::snd_cwnd; N];
            let (mut k, mut i) = (0, 0);
            while i < LISTS.len() {
                let mut j = 0;
                while j < LISTS[i].len() {
                    all[k] = LISTS[i][j];
                    k += 1;
                    j += 1;
                }
                i += 1;
            }
            all
        };
        &ALL
    }};
}

pub(crate) use reads;

/// `tcp_slow_start()`: grow cwnd by one segment per segment ACKed, but not
/// past ssthresh; return the ACKed segments left over for congestion
/// avoidance.
///
/// A stretch ACK of N segments counts as N ACKs (no RFC 3465 cap of 2): a
/// segment counts only once it is entirely (S)ACKed, which defends against
/// the ACK-division attack that motivated the cap.
pub fn tcp_slow_start(sk: &mut Sock, acked: u32) -> u32 {
    let cwnd = sk.snd_cwnd.wrapping_add(acked).min(sk.snd_ssthresh);
    let acked = acked.wrapping_sub(cwnd.wrapping_sub(sk.snd_cwnd));
    sk.snd_cwnd = cwnd.min(sk.snd_cwnd_clamp);
    acked
}

/// `tcp_cong_avoid_ai()`: in theory `cwnd += 1/w` per ACKed segment; in
/// integers, credit `acked` to `snd_cwnd_cnt` and add one segment per `w`
/// credits.
pub fn tcp_cong_avoid_ai(sk: &mut Sock, w: u32, acked: u32) {
    // Credits earned while w was larger are applied gently: one segment.
    if sk.snd_cwnd_cnt >= w {
        sk.snd_cwnd_cnt = 0;
        sk.snd_cwnd = sk.snd_cwnd.wrapping_add(1);
    }
    sk.snd_cwnd_cnt = sk.snd_cwnd_cnt.wrapping_add(acked);
    if sk.snd_cwnd_cnt >= w {
        // The kernel divides by w here, and so does this: w == 0 reaches
        // the division (any count is >= 0), so callers never pass it. Their
        // w is cwnd after slow start, or CUBIC's cnt (at least 1 once
        // computed, and computed on the first call with a cwnd of 1 or
        // more). A cwnd or clamp of 0 is no state of the kernel's
        // (tcp_snd_cwnd_set() warns, and this very division would fault),
        // so what comes from outside is refused before it gets here (a
        // replay's row: docs/TRACE_FORMAT.md); and a slow start whose sum
        // wraps cwnd to 0 has wrapped its leftover to 0 too, so it returns
        // before calling this.
        let delta = sk.snd_cwnd_cnt / w;
        sk.snd_cwnd_cnt = sk.snd_cwnd_cnt.wrapping_sub(delta.wrapping_mul(w));
        sk.snd_cwnd = sk.snd_cwnd.wrapping_add(delta);
    }
    sk.snd_cwnd = sk.snd_cwnd.min(sk.snd_cwnd_clamp);
}

/// `tcp_reno_cong_avoid()`: Jacobson's slow start and congestion avoidance
/// (SIGCOMM '88): double per RTT below ssthresh, one segment per RTT above.
pub fn tcp_reno_cong_avoid(sk: &mut Sock, _ack: u32, acked: u32) {
    if !sk.is_cwnd_limited() {
        return;
    }
    let mut acked = acked;
    if sk.in_slow_start() {
        acked = tcp_slow_start(sk, acked);
        if acked == 0 {
            return;
        }
    }
    let w = sk.snd_cwnd;
    tcp_cong_avoid_ai(sk, w, acked);
}

/// `tcp_reno_ssthresh()`: halve the window, never below two segments.
pub fn tcp_reno_ssthresh(sk: &Sock) -> u32 {
    (sk.snd_cwnd >> 1).max(2)
}

/// `tcp_reno_undo_cwnd()`: restore the window from before the reduction.
pub fn tcp_reno_undo_cwnd(sk: &Sock) -> u32 {
    sk.snd_cwnd.max(sk.prior_cwnd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Setup;

    #[test]
    fn reads_concatenates_in_order() {
        const AB: &[Field] = reads!(AIMD_READS, &[Field::srtt_us], &[]);
        assert_eq!(&AB[..7], AIMD_READS);
        assert_eq!(&AB[7..], &[Field::srtt_us]);
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_the_rest() {
        let mut sk = Sock::new(1000).cwnd(10).ssthresh(14);
        assert_eq!(tcp_slow_start(&mut sk, 3), 0);
        assert_eq!(sk.snd_cwnd, 13);
        assert_eq!(tcp_slow_start(&mut sk, 5), 4);
        assert_eq!(sk.snd_cwnd, 14);
    }

    #[test]
    fn slow_start_respects_clamp_but_reports_growth_to_ssthresh() {
        // The kernel computes the leftover against ssthresh before clamping.
        let mut sk = Sock::new(1000).cwnd(10).ssthresh(100);
        sk.snd_cwnd_clamp = 12;
        assert_eq!(tcp_slow_start(&mut sk, 5), 0);
        assert_eq!(sk.snd_cwnd, 12);
    }

    #[test]
    fn additive_increase_one_segment_per_window() {
        let mut sk = Sock::new(1000).cwnd(10).ssthresh(5);
        for _ in 0..9 {
            tcp_cong_avoid_ai(&mut sk, 10, 1);
        }
        assert_eq!((sk.snd_cwnd, sk.snd_cwnd_cnt), (10, 9));
        tcp_cong_avoid_ai(&mut sk, 10, 1);
        assert_eq!((sk.snd_cwnd, sk.snd_cwnd_cnt), (11, 0));
        // A stretch ACK of 25 with w = 11: two segments, 3 credits left.
        tcp_cong_avoid_ai(&mut sk, 11, 25);
        assert_eq!((sk.snd_cwnd, sk.snd_cwnd_cnt), (13, 3));
    }

    #[test]
    fn credits_from_a_larger_w_apply_gently() {
        let mut sk = Sock::new(1000).cwnd(20).ssthresh(5);
        sk.snd_cwnd_cnt = 50;
        tcp_cong_avoid_ai(&mut sk, 8, 2);
        // One segment for the stale credit, then 2 fresh credits.
        assert_eq!((sk.snd_cwnd, sk.snd_cwnd_cnt), (21, 2));
    }

    #[test]
    fn reno_halves_with_a_floor_of_two_and_undoes_to_prior() {
        let mut sk = Sock::new(1000).cwnd(7).ssthresh(5);
        assert_eq!(tcp_reno_ssthresh(&sk), 3);
        sk.snd_cwnd = 3;
        assert_eq!(tcp_reno_ssthresh(&sk), 2);
        sk.prior_cwnd = 40;
        assert_eq!(tcp_reno_undo_cwnd(&sk), 40);
    }

    #[test]
    fn reno_cong_avoid_needs_cwnd_limited() {
        let mut sk = Sock::new(1000).cwnd(10).ssthresh(100);
        sk.max_packets_out = 4;
        tcp_reno_cong_avoid(&mut sk, 0, 2);
        assert_eq!(sk.snd_cwnd, 10);
        sk.is_cwnd_limited = true;
        tcp_reno_cong_avoid(&mut sk, 0, 2);
        assert_eq!(sk.snd_cwnd, 12);
    }

    #[test]
    fn reno_leftover_from_slow_start_goes_to_avoidance() {
        let mut sk = Sock::new(1000).cwnd(9).ssthresh(10);
        sk.is_cwnd_limited = true;
        sk.snd_cwnd_cnt = 9;
        // 1 segment reaches ssthresh, 11 left: stale credit 9 >= w=10? no;
        // cnt 9 + 11 = 20 -> +2 segments.
        tcp_reno_cong_avoid(&mut sk, 0, 12);
        assert_eq!((sk.snd_cwnd, sk.snd_cwnd_cnt), (12, 0));
    }
}
