// SPDX-License-Identifier: GPL-2.0
/*
 * kr_vegas: TCP Vegas as a BPF struct_ops program.
 *
 * Brakmo and Peterson, "TCP Vegas: End to End Congestion Avoidance on a
 * Global Internet", IEEE JSAC 13(8), 1995. This is Linux 6.18
 * net/ipv4/tcp_vegas.c, ported line by line from the Rust reference
 * crates/cc/src/vegas.rs (itself a bit-exact port) so that a trace of these
 * programs replays against the Rust bit for bit.
 *
 * Once per round trip Vegas compares the window it has with the window the
 * path needs at its base RTT:
 *
 *	diff = cwnd * (rtt - baseRTT) / baseRTT		(segments queued)
 *
 * where rtt is the smallest sample of the last round (which filters out
 * delayed ACKs) and baseRTT the smallest ever. Below alpha segments queued
 * it adds one, above beta it removes one, between it holds; in slow start,
 * more than gamma queued ends slow start at the rate achieved. Losses are
 * Reno's business, and Vegas restarts its measurements after any of them,
 * after idle, and at the start.
 *
 * The kernel's get_info (the vegas diag for ss) is not ported: struct_ops
 * refuses it.
 */
#include "kleinrock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load; these are the kernel module's defaults. */
const volatile __u32 alpha = 2;	/* fewest segments to keep queued */
const volatile __u32 beta = 4;	/* most segments to keep queued */
const volatile __u32 gamma = 1;	/* queued segments that end slow start */

/* struct vegas, member for member as in tcp_vegas.h: 24 of 104 bytes. */
struct vegas {
	__u32 beg_snd_nxt;	/* right edge of the window when the round began */
	__u32 beg_snd_una;	/* left edge then (unused, as in the kernel) */
	__u32 beg_snd_cwnd;	/* cwnd then (unused, as in the kernel) */
	__u8 doing_vegas_now;	/* measuring this round */
	__u16 cntRTT;		/* RTT samples this round */
	__u32 minRTT;		/* smallest RTT this round, us */
	__u32 baseRTT;		/* smallest RTT ever, us */
};
KR_CA_TYPE(vegas);

_Static_assert(sizeof(struct vegas) <= 104, "icsk_ca_priv is 104 bytes");

/*
 * tcp_current_ssthresh(): during a reduction, ssthresh; otherwise at least
 * three quarters of cwnd.
 */
static __always_inline __u32 tcp_current_ssthresh(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	__u8 state = icsk_ca_state(sk);

	if (state == TCP_CA_CWR || state == TCP_CA_Recovery)
		return tp->snd_ssthresh;
	return max(tp->snd_ssthresh, (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2));
}

/* vegas_enable(): measure from the next window on. */
static __always_inline void vegas_enable(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *vegas = inet_csk_ca(sk);

	vegas->doing_vegas_now = 1;
	vegas->beg_snd_nxt = tp->snd_nxt;
	vegas->cntRTT = 0;
	vegas->minRTT = 0x7fffffff;
}

static __always_inline void vegas_disable(struct sock *sk)
{
	struct vegas *vegas = inet_csk_ca(sk);

	vegas->doing_vegas_now = 0;
}

static __always_inline void tcp_vegas_init(struct sock *sk)
{
	struct vegas *vegas = inet_csk_ca(sk);

	vegas->baseRTT = 0x7fffffff;
	vegas_enable(sk);
}
KR_INIT(kr_vegas_init, tcp_vegas_init)

/* tcp_vegas_pkts_acked(): min-filter this round's RTT and the base RTT. */
static __always_inline void tcp_vegas_pkts_acked(
	struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *vegas = inet_csk_ca(sk);
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	/* Never a zero RTT or base RTT. */
	vrtt = sample->rtt_us + 1;
	if (vrtt < vegas->baseRTT)
		vegas->baseRTT = vrtt;
	vegas->minRTT = min(vegas->minRTT, vrtt);
	vegas->cntRTT++;
}
KR_PKTS_ACKED(kr_vegas_pkts_acked, tcp_vegas_pkts_acked)

/* tcp_vegas_state(): measure only while Open. */
static __always_inline void tcp_vegas_state(struct sock *sk, __u8 ca_state)
{
	if (ca_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		vegas_disable(sk);
}
KR_SET_STATE(kr_vegas_state, tcp_vegas_state)

/* Restart after idle, and at the first transmission. */
static __always_inline void tcp_vegas_cwnd_event(struct sock *sk, int event)
{
	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START)
		tcp_vegas_init(sk);
}
KR_CWND_EVENT(kr_vegas_cwnd_event, tcp_vegas_cwnd_event)

static __always_inline __u32 tcp_vegas_ssthresh(const struct tcp_sock *tp)
{
	return min(tp->snd_ssthresh, tp->snd_cwnd);
}

/* The once-per-round adjustment, with enough samples. */
static __always_inline void vegas_adjust(struct sock *sk, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *vegas = inet_csk_ca(sk);
	__u32 rtt, diff;
	__u64 target_cwnd;

	/* The smallest RTT of the round: delayed ACKs filtered out, at the
	 * cost of noticing congestion a little later. */
	rtt = vegas->minRTT;
	/* The window the achieved rate needs at the base RTT. */
	target_cwnd = (__u64)tp->snd_cwnd * vegas->baseRTT;
	target_cwnd /= rtt;
	/* The segments this window keeps queued: the papers' "Diff". */
	diff = tp->snd_cwnd * (rtt - vegas->baseRTT) / vegas->baseRTT;

	if (diff > gamma && tcp_in_slow_start(tp)) {
		/* Too fast: leave slow start at the achieved rate, plus one
		 * for the truncation. */
		tp->snd_cwnd = min(tp->snd_cwnd, (__u32)target_cwnd + 1);
		tp->snd_ssthresh = tcp_vegas_ssthresh(tp);
	} else if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else if (diff > beta) {
		tp->snd_cwnd = tp->snd_cwnd - 1;
		tp->snd_ssthresh = tcp_vegas_ssthresh(tp);
	} else if (diff < alpha) {
		tp->snd_cwnd = tp->snd_cwnd + 1;
	}

	if (tp->snd_cwnd < 2)
		tp->snd_cwnd = 2;
	else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
		tp->snd_cwnd = tp->snd_cwnd_clamp;
	tp->snd_ssthresh = tcp_current_ssthresh(sk);
}

static __always_inline void tcp_vegas_cong_avoid(struct sock *sk, __u32 ack,
						 __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *vegas = inet_csk_ca(sk);

	if (!vegas->doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (after(ack, vegas->beg_snd_nxt)) {
		vegas->beg_snd_nxt = tp->snd_nxt;
		/* Two samples a round mean one ACK a round: delayed ACKs
		 * only. Three give at least one undelayed sample. */
		if (vegas->cntRTT <= 2)
			tcp_reno_cong_avoid(sk, ack, acked);
		else
			vegas_adjust(sk, acked);
		vegas->cntRTT = 0;
		vegas->minRTT = 0x7fffffff;
	} else if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	}
}
KR_CONG_AVOID(kr_vegas_cong_avoid, tcp_vegas_cong_avoid)

KR_SSTHRESH(kr_vegas_ssthresh, tcp_reno_ssthresh)
KR_UNDO_CWND(kr_vegas_undo_cwnd, tcp_reno_undo_cwnd)

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_vegas = {
	.init = (void *)kr_vegas_init,
	.ssthresh = (void *)kr_vegas_ssthresh,
	.undo_cwnd = (void *)kr_vegas_undo_cwnd,
	.cong_avoid = (void *)kr_vegas_cong_avoid,
	.pkts_acked = (void *)kr_vegas_pkts_acked,
	.set_state = (void *)kr_vegas_state,
	.cwnd_event = (void *)kr_vegas_cwnd_event,
	.name = "kr_vegas",
};
