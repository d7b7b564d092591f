/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every Kleinrock port shares: the accessors of sock.bpf.h and the
 * window arithmetic of net/ipv4/tcp_cong.c (slow start, additive increase,
 * Reno's ssthresh and undo). The wrappers of the kernel's own algorithms
 * (native_*.bpf.c) include sock.bpf.h only, since they call the kernel's
 * functions of these names.
 *
 * The arithmetic is a line-by-line port of crates/cc/src/aimd.rs, itself a
 * bit-exact port of Linux 6.18 tcp_cong.c. The kernel would let us call its
 * own tcp_slow_start() and tcp_cong_avoid_ai() as kfuncs; we carry our own
 * copies instead so that a hook trace recorded from these programs replays
 * against the Rust reference with nothing in between. The functions keep
 * the kernel's names so the three texts read side by side; being static
 * inline, they never resolve to the kfuncs of the same names.
 */
#ifndef __KLEINROCK_BPF_H__
#define __KLEINROCK_BPF_H__

#include "sock.bpf.h"

/*
 * tcp_slow_start(): one segment per segment ACKed, not past ssthresh;
 * returns the ACKed segments left over for congestion avoidance. A stretch
 * ACK of N segments counts N (no RFC 3465 cap of 2).
 */
static __always_inline __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked)
{
	__u32 cwnd = min(tp->snd_cwnd + acked, tp->snd_ssthresh);

	acked -= cwnd - tp->snd_cwnd;
	tp->snd_cwnd = min(cwnd, tp->snd_cwnd_clamp);
	return acked;
}

/*
 * tcp_cong_avoid_ai(): cwnd += 1/w per ACKed segment, in integers: credit
 * acked to snd_cwnd_cnt and add one segment per w credits.
 */
static __always_inline void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w,
					      __u32 acked)
{
	/* Credits earned while w was larger are applied gently: one segment. */
	if (tp->snd_cwnd_cnt >= w) {
		tp->snd_cwnd_cnt = 0;
		tp->snd_cwnd++;
	}
	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= w) {
		__u32 delta = tp->snd_cwnd_cnt / w;

		tp->snd_cwnd_cnt -= delta * w;
		tp->snd_cwnd += delta;
	}
	tp->snd_cwnd = min(tp->snd_cwnd, tp->snd_cwnd_clamp);
}

/* tcp_reno_cong_avoid(): Jacobson's slow start and congestion avoidance. */
static __always_inline void tcp_reno_cong_avoid(struct sock *sk, __u32 ack,
						__u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* tcp_reno_ssthresh(): halve the window, never below two segments. */
static __always_inline __u32 tcp_reno_ssthresh(const struct sock *sk)
{
	return max(tcp_sk(sk)->snd_cwnd >> 1, 2U);
}

/* tcp_reno_undo_cwnd(): restore the window from before the reduction. */
static __always_inline __u32 tcp_reno_undo_cwnd(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max(tp->snd_cwnd, tp->prior_cwnd);
}

/*
 * Kernel helpers of include/net/tcp.h and include/linux/jiffies.h that
 * BBR uses, as crates/cc computes them (sock.rs, bbr.rs).
 */
#define MSEC_PER_SEC	1000UL

/* tcp_packets_in_flight(): sent and not cumulatively ACKed, less SACKed
 * and lost, plus retransmitted: the core's estimate of what is in the
 * network, segments. */
static __always_inline __u32 tcp_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) +
	       tp->retrans_out;
}

/* tcp_stamp_us_delta(): t1 - t0 in us, 0 if t1 is earlier; the kernel's
 * u32 return type truncates deltas of 2^32 us (71.6 min) and more. */
static __always_inline __u32 tcp_stamp_us_delta(__u64 t1, __u64 t0)
{
	return max((__s64)(t1 - t0), 0LL);
}

/* msecs_to_jiffies(), rounding up: the kernel's formula for every HZ that
 * divides 1000 (100, 250, 1000), as crates/cc's sock.rs computes it. */
static __always_inline __u32 msecs_to_jiffies(__u32 m)
{
	return ((__u64)m * HZ + MSEC_PER_SEC - 1) / MSEC_PER_SEC;
}

#endif /* __KLEINROCK_BPF_H__ */
