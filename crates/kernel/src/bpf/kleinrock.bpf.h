/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every Kleinrock struct_ops port shares: the kernel's accessors
 * (tcp_sk, inet_csk_ca, tcp_jiffies32, HZ) and the window arithmetic of
 * net/ipv4/tcp_cong.c (slow start, additive increase, Reno's ssthresh and
 * undo).
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

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "hooks.bpf.h"

/* The kernel's HZ, read by libbpf from the running kernel's config. */
extern unsigned long CONFIG_HZ __kconfig;
#define HZ CONFIG_HZ

/* tcp_jiffies32 is (u32)jiffies; jiffies_64 agrees with it in 32 bits. */
#define tcp_jiffies32 ((__u32)bpf_jiffies64())

#define USEC_PER_SEC	1000000UL
#define USEC_PER_MSEC	1000UL

/* The ssthresh of a connection that has not seen congestion. */
#define TCP_INFINITE_SSTHRESH	0x7fffffff

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
/* The smaller of two values, ignoring a zero (DCTCP's alpha, CDG's RTTs). */
#define min_not_zero(a, b) ((a) == 0 ? (b) : ((b) == 0 ? (a) : min(a, b)))

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* after(seq1, seq2): is seq1 later than seq2 in 32-bit wrapping order. */
static __always_inline bool after(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq2 - seq1) < 0;
}

static __always_inline bool before(__u32 seq1, __u32 seq2)
{
	return after(seq2, seq1);
}

/* between(seq1, seq2, seq3): seq2 <= seq1 <= seq3 in wrapping order. */
static __always_inline bool between(__u32 seq1, __u32 seq2, __u32 seq3)
{
	return seq3 - seq2 >= seq1 - seq2;
}

/*
 * inet_csk(sk)->icsk_ca_state, the TCP core's recovery state (TCP_CA_*),
 * before the change a set_state hook is told of. A bitfield: read by
 * relocation.
 */
static __always_inline __u8 icsk_ca_state(const struct sock *sk)
{
	const struct inet_connection_sock *icsk = (const void *)sk;

	return BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

/*
 * usecs_to_jiffies(), rounding up: the kernel's formula for every HZ that
 * divides one million (100, 250, 1000), as crates/cc's sock.rs computes it.
 */
static __always_inline __u64 usecs_to_jiffies(__u32 us)
{
	return ((__u64)us * HZ + USEC_PER_SEC - 1) / USEC_PER_SEC;
}

/* msecs_to_jiffies(), rounding up, for every HZ that divides 1000. */
static __always_inline __u32 msecs_to_jiffies(__u32 ms)
{
	return ((__u64)ms * HZ + 999) / 1000;
}

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/*
 * tcp_is_cwnd_limited(): may the window grow? In slow start it may while
 * cwnd is below twice what was recently in flight. is_cwnd_limited is a
 * bitfield whose position differs between kernels: read it by relocation.
 */
static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

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

#endif /* __KLEINROCK_BPF_H__ */
