/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HyStart++ (RFC 9406, Balasubramanian, Huang and Olteanu, 2023) for the
 * ports that opt in (reno:hystart=hspp, cubic:hystart=hspp).
 *
 * Each round (one window of data) takes the minimum of its RTT samples.
 * Once a round has N_RTT_SAMPLE samples and its minimum exceeds the last
 * round's by an eighth (clamped to 4-16 ms), slow start gives way to
 * Conservative Slow Start: a quarter of slow start's growth, for up to
 * CSS_ROUNDS rounds. An RTT back below the baseline resumes slow start;
 * otherwise ssthresh is set to cwnd and congestion avoidance takes over.
 * Unpaced senders grow at most L segments per ACK. It runs only in the
 * initial slow start: the first loss ends it (RFC 9406 section 4.3).
 *
 * No kernel ships HyStart++: this is a line-by-line port of Kleinrock's own
 * integer rendering in crates/cc/src/hystart_pp.rs, which it must match bit
 * for bit.
 */
#ifndef __KLEINROCK_HYSTART_PP_BPF_H__
#define __KLEINROCK_HYSTART_PP_BPF_H__

#include "kleinrock.bpf.h"

/* The RFC's constants, with its names. */
#define HSPP_MIN_RTT_THRESH	4000U	/* us: smallest rise that counts */
#define HSPP_MAX_RTT_THRESH	16000U	/* us: largest rise required */
#define HSPP_MIN_RTT_DIVISOR	8	/* the rise is this fraction of the RTT */
#define HSPP_N_RTT_SAMPLE	8	/* samples a round needs to be judged */
#define HSPP_CSS_GROWTH_DIVISOR	4	/* CSS grows at a quarter of the rate */
#define HSPP_CSS_ROUNDS		5	/* CSS rounds before avoidance */
#define HSPP_L_UNPACED		8	/* segments per ACK when not paced */

/* The `hystart` parameter of the ports that take it: which slow-start exit
 * runs (crates/cc's SlowStartExit). */
#define SS_EXIT_OFF		0	/* hystart=0: exit on loss only */
#define SS_EXIT_HYSTART		1	/* Linux HyStart, CUBIC's default */
#define SS_EXIT_HSPP		2	/* HyStart++, RFC 9406 */

/* Phases. */
#define HSPP_SLOW_START		0
#define HSPP_CSS		1
#define HSPP_DONE		2

/* The state, member for member as crates/cc's HystartPP (32 bytes). */
struct hystart_pp {
	__u8 phase;
	__u8 started;			/* a round has begun */
	__u16 unused;
	__u32 window_end;		/* the round ends when this is ACKed */
	__u32 last_round_min_rtt;	/* us, ~0: none */
	__u32 current_round_min_rtt;	/* us, ~0: none */
	__u32 rtt_sample_count;
	__u32 css_baseline_min_rtt;	/* us: the RTT that started CSS */
	__u32 css_rounds;
	__u32 css_credit;		/* ACKed segments not yet CSS growth */
};

static __always_inline __u32 sat_add(__u32 a, __u32 b)
{
	return a + b < a ? ~0U : a + b;
}

static __always_inline __u32 sat_sub(__u32 a, __u32 b)
{
	return a > b ? a - b : 0;
}

static __always_inline void hspp_reset(struct hystart_pp *h)
{
	h->phase = HSPP_SLOW_START;
	h->started = 0;
	h->window_end = 0;
	h->last_round_min_rtt = ~0U;
	h->current_round_min_rtt = ~0U;
	h->rtt_sample_count = 0;
	h->css_baseline_min_rtt = ~0U;
	h->css_rounds = 0;
	h->css_credit = 0;
}

/* The first loss ends HyStart++ for good. */
static __always_inline void hspp_on_loss(struct hystart_pp *h)
{
	h->phase = HSPP_DONE;
}

/* RttThresh: an eighth of the last round's minimum RTT, within 4-16 ms. */
static __always_inline __u32 hspp_rtt_thresh(__u32 last_round_min_rtt)
{
	__u32 t = last_round_min_rtt / HSPP_MIN_RTT_DIVISOR;

	return min(max(t, HSPP_MIN_RTT_THRESH), HSPP_MAX_RTT_THRESH);
}

/* A round ends: CSS counts it, and the minima move down a round. */
static __always_inline void hspp_end_round(struct tcp_sock *tp,
					   struct hystart_pp *h)
{
	if (h->started && h->phase == HSPP_CSS) {
		h->css_rounds++;
		if (h->css_rounds > HSPP_CSS_ROUNDS) {
			tp->snd_ssthresh = tp->snd_cwnd;
			h->phase = HSPP_DONE;
		}
	}
	h->started = 1;
	h->window_end = tp->snd_nxt;
	h->last_round_min_rtt = h->current_round_min_rtt;
	h->current_round_min_rtt = ~0U;
	h->rtt_sample_count = 0;
}

/* Slow start: an RTT rise of RttThresh over the last round enters CSS. */
static __always_inline void hspp_check_rtt_rise(struct hystart_pp *h)
{
	__u32 thresh;

	if (h->current_round_min_rtt == ~0U || h->last_round_min_rtt == ~0U)
		return;
	thresh = hspp_rtt_thresh(h->last_round_min_rtt);
	if (h->current_round_min_rtt >=
	    sat_add(h->last_round_min_rtt, thresh)) {
		h->css_baseline_min_rtt = h->current_round_min_rtt;
		h->phase = HSPP_CSS;
		h->css_rounds = 0;
		h->css_credit = 0;
	}
}

/* CSS: an RTT back below the baseline was noise; resume slow start. */
static __always_inline void hspp_check_rtt_fall(struct hystart_pp *h)
{
	if (h->current_round_min_rtt < h->css_baseline_min_rtt) {
		h->css_baseline_min_rtt = ~0U;
		h->phase = HSPP_SLOW_START;
	}
}

/* One ACK's RTT sample (rtt_us < 0: none; the round still advances). */
static __always_inline void hspp_on_ack(struct sock *sk, struct hystart_pp *h,
					__s32 rtt_us)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 rtt;

	if (h->phase == HSPP_DONE || !tcp_in_slow_start(tp))
		return;
	if (!h->started || after(tp->snd_una, h->window_end))
		hspp_end_round(tp, h);
	if (rtt_us < 0)
		return;
	rtt = max((__u32)rtt_us, 1U);
	h->current_round_min_rtt = min(h->current_round_min_rtt, rtt);
	h->rtt_sample_count = sat_add(h->rtt_sample_count, 1);
	if (h->rtt_sample_count < HSPP_N_RTT_SAMPLE)
		return;
	if (h->phase == HSPP_SLOW_START)
		hspp_check_rtt_rise(h);
	else if (h->phase == HSPP_CSS)
		hspp_check_rtt_fall(h);
}

/*
 * Replaces tcp_slow_start(): grow by the ACKed segments (at most L when
 * unpaced), a quarter of that in CSS, never past ssthresh; returns the
 * ACKed segments left over for congestion avoidance.
 */
static __always_inline __u32 hspp_slow_start(struct sock *sk,
					     struct hystart_pp *h, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 limited, grow, room, inc;

	if (h->phase == HSPP_DONE)
		return tcp_slow_start(tp, acked);
	limited = sk->sk_pacing_status != SK_PACING_NONE ?
		  acked : min(acked, (__u32)HSPP_L_UNPACED);
	if (h->phase == HSPP_CSS) {
		h->css_credit = sat_add(h->css_credit, limited);
		grow = h->css_credit / HSPP_CSS_GROWTH_DIVISOR;
		h->css_credit %= HSPP_CSS_GROWTH_DIVISOR;
	} else {
		grow = limited;
	}
	room = sat_sub(tp->snd_ssthresh, tp->snd_cwnd);
	inc = min(grow, room);
	tp->snd_cwnd = min(sat_add(tp->snd_cwnd, inc), tp->snd_cwnd_clamp);
	return inc == room ? acked - min(inc, acked) : 0;
}

#endif /* __KLEINROCK_HYSTART_PP_BPF_H__ */
