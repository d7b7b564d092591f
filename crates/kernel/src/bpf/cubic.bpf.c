// SPDX-License-Identifier: GPL-2.0
/*
 * kr_cubic: CUBIC with Linux HyStart as a BPF struct_ops program.
 *
 * Ha, Rhee and Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant"
 * (ACM SIGOPS OSR, 2008); RFC 9438. HyStart: Ha and Rhee, "Taming the
 * Elephants: New TCP Slow Start" (Computer Networks, 2011). This is Linux
 * 6.18 net/ipv4/tcp_cubic.c, ported line by line from the Rust reference
 * crates/cc/src/cubic.rs and hystart.rs (themselves bit-exact ports), so
 * that a trace of these programs replays against the Rust bit for bit.
 *
 * After a loss at window W_max the window is cut to beta * W_max (beta =
 * 717/1024) and then follows W(t) = C (t - K)^3 + W_max with
 * K = cbrt(W_max (1 - beta) / C): concave up to the old maximum, flat near
 * it, convex beyond. The target is turned into cnt, the ACKed segments per
 * segment of growth, which tcp_cong_avoid_ai() applies. Time is in 2^-10 s
 * (BICTCP_HZ) and cube roots come from a table and one Newton step, all in
 * integers, exactly as the kernel computes them.
 *
 * Parameters are the kernel module's, one set per loaded instance: they
 * live in read-only data the loader sets before load, so kr_cubic and a
 * kr_cubic_nohs with hystart off can run side by side.
 *
 * Two choices beyond the kernel's parameters, from crates/cc: friendly=
 * picks the TCP-friendly estimator (Linux's ACK counting, RFC 8312 Eq. 4 on
 * the jiffies clock as stock FreeBSD computed it, FreeBSD's NewReno
 * emulation, or none), and hystart=hspp replaces slow start with HyStart++
 * (RFC 9406, hystart_pp.bpf.h).
 */
#include "kleinrock.bpf.h"
#include "hystart_pp.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* beta is a fraction of 1024 (BICTCP_BETA_SCALE). */
#define BICTCP_BETA_SCALE	1024
/* CUBIC's time unit is 2^-10 s (BICTCP_HZ). */
#define BICTCP_HZ		10

/* HyStart detectors (hystart_detect bits). */
#define HYSTART_ACK_TRAIN	0x1
#define HYSTART_DELAY		0x2
/* RTT samples per round before the delay detector judges. */
#define HYSTART_MIN_SAMPLES	8
/* The delay threshold, an eighth of the minimum RTT, kept within 4-16 ms
 * (us): below 4 ms delayed ACKs and scheduling noise end slow start too
 * early; above 16 ms long paths build too much queue before leaving. */
#define HYSTART_DELAY_MIN	4000U
#define HYSTART_DELAY_MAX	16000U
#define HYSTART_DELAY_THRESH(x)	clamp(x, HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
#define clamp(x, lo, hi)	min(max(x, lo), hi)

/* The TCP-friendly estimator (friendly=). */
#define FRIENDLY_LINUX		0	/* count ACKs at Reno's rate */
#define FRIENDLY_EQ4		1	/* RFC 8312 Eq. 4 in jiffies */
#define FRIENDLY_NEWRENO	2	/* FreeBSD D46546: emulate NewReno */
#define FRIENDLY_OFF		3	/* tcp_friendliness=0 */

/* Set by the loader before load, each named as the spec's parameter (and
 * crates/cc's CubicParams field); these are the kernel's defaults. */
const volatile __u32 fast_convergence = 1;
const volatile __u32 beta = 717;		/* about 0.7 */
const volatile __u32 initial_ssthresh = 0;	/* 0: leave it infinite */
const volatile __u32 bic_scale = 41;		/* C = 41 * 10 / 1024 = 0.4 */
const volatile __u32 friendly = FRIENDLY_LINUX;
const volatile __u32 hystart = SS_EXIT_HYSTART;	/* the slow-start exit */
const volatile __u32 hystart_detect = HYSTART_ACK_TRAIN | HYSTART_DELAY;
const volatile __u32 hystart_low_window = 16;	/* segments */
const volatile __u32 hystart_ack_delta_us = 2000;

/*
 * struct bictcp, member for member as in tcp_cubic.c so that a tool reading
 * icsk_ca_priv finds the kernel's layout, then HyStart++'s state: 92 of the
 * 104 bytes.
 */
struct bictcp {
	__u32 cnt;		/* ACKed segments per segment of growth */
	__u32 last_max_cwnd;	/* W_max */
	__u32 last_cwnd;	/* cwnd when cnt was last computed */
	__u32 last_time;	/* jiffies when cnt was last computed */
	__u32 bic_origin_point;	/* the plateau of the cubic function */
	__u32 bic_K;		/* time from epoch start to the plateau, 2^-10 s */
	__u32 delay_min;	/* minimum RTT, us */
	__u32 epoch_start;	/* jiffies at the epoch's first ACK, 0: none */
	__u32 ack_cnt;		/* ACKs not yet credited to tcp_cwnd */
	__u32 tcp_cwnd;		/* the estimated Reno window */
	__u16 unused;
	__u8 sample_cnt;	/* HyStart: RTT samples this round */
	__u8 found;		/* HyStart: exit point found */
	__u32 round_start;	/* HyStart: round start, us */
	__u32 end_seq;		/* HyStart: the round ends when this is ACKed */
	__u32 last_ack;		/* HyStart: last ACK of the train, us */
	__u32 curr_rtt;		/* HyStart: minimum RTT of the round, us */
	struct hystart_pp hspp;	/* Kleinrock's: used with hystart=hspp */
};
KR_CA_TYPE(bictcp);

_Static_assert(sizeof(struct bictcp) <= 104, "icsk_ca_priv is 104 bytes");

/* Reno's AIMD-equivalent growth as ACKs per segment * 8 / cwnd (15). */
static __always_inline __u32 beta_scale(void)
{
	return 8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta);
}

/* C over the nominal 100 ms RTT, /1024. */
static __always_inline __u32 cube_rtt_scale(void)
{
	return bic_scale * 10;
}

/* Eq. 4's 3(1 - beta)/(1 + beta) in 1/1024 units (541 for beta = 717). */
static __always_inline __u32 alpha_eq4(void)
{
	return 3 * (BICTCP_BETA_SCALE - beta) * BICTCP_BETA_SCALE /
	       (BICTCP_BETA_SCALE + beta);
}

/* 2^40 / (bic_scale * 10): turns (W_max - cwnd) into K^3 in 2^-10 s. */
static __always_inline __u64 cube_factor(void)
{
	return (1ULL << (10 + 3 * BICTCP_HZ)) / (bic_scale * 10);
}

/* The seed table of cubic_root(): v[x] = cbrt(x << 18) - 1, hand-refined. */
static const __u8 cbrt_table[64] = {
	0,   54,  54,  54,  118, 118, 118, 118,
	123, 129, 134, 138, 143, 147, 151, 156,
	157, 161, 164, 168, 170, 173, 176, 179,
	181, 185, 187, 190, 192, 194, 197, 199,
	200, 202, 204, 206, 209, 211, 213, 215,
	217, 219, 221, 222, 224, 225, 227, 229,
	231, 232, 234, 236, 237, 239, 240, 242,
	244, 245, 246, 248, 250, 251, 252, 254,
};

/* fls64(): 1-based index of the most significant set bit, 0 for 0. */
static __always_inline __u32 fls64(__u64 x)
{
	__u32 num = 63;

	if (!x)
		return 0;
	if (!(x & (~0ULL << 32))) {
		num -= 32;
		x <<= 32;
	}
	if (!(x & (~0ULL << 48))) {
		num -= 16;
		x <<= 16;
	}
	if (!(x & (~0ULL << 56))) {
		num -= 8;
		x <<= 8;
	}
	if (!(x & (~0ULL << 60))) {
		num -= 4;
		x <<= 4;
	}
	if (!(x & (~0ULL << 62))) {
		num -= 2;
		x <<= 2;
	}
	if (!(x & (~0ULL << 63)))
		num -= 1;
	return num + 1;
}

/*
 * cubic_root(): integer cube root by table lookup and one Newton-Raphson
 * step, x' = (2x + a / x^2) / 3, with x(x - 1) for x^2 and * 341 >> 10 for
 * / 3 as the kernel writes it. The "& 63" masks change no value (a < 64 in
 * the first branch; the shifted a always has at most 6 bits) but prove the
 * table index in bounds to the verifier.
 */
static __always_inline __u32 cubic_root(__u64 a)
{
	__u32 x, b, shift;

	b = fls64(a);
	if (b < 7)
		return ((__u32)cbrt_table[a & 63] + 35) >> 6;

	/* b * 84 >> 8 is about b / 3: the cube root's bit length. */
	b = ((b * 84) >> 8) - 1;
	shift = (a >> (b * 3)) & 63;
	x = ((__u32)(((__u32)cbrt_table[shift] + 10) << b)) >> 6;
	/* x >= 4 here, so x * (x - 1) is never zero. */
	x = 2 * x + (__u32)(a / ((__u64)x * (__u64)(x - 1)));
	return (x * 341) >> 10;
}

/* bictcp_reset(): forget the epoch and W_max; HyStart keeps its round. */
static __always_inline void bictcp_reset(struct bictcp *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->bic_origin_point = 0;
	ca->bic_K = 0;
	ca->delay_min = 0;
	ca->epoch_start = 0;
	ca->ack_cnt = 0;
	ca->tcp_cwnd = 0;
	ca->found = 0;
}

/* bictcp_clock_us(): the microsecond clock, truncated to 32 bits. */
static __always_inline __u32 bictcp_clock_us(const struct sock *sk)
{
	return (__u32)tcp_sk(sk)->tcp_mstamp;
}

/* bictcp_hystart_reset(): start a HyStart round now. */
static __always_inline void bictcp_hystart_reset(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);

	ca->round_start = ca->last_ack = bictcp_clock_us(sk);
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

static __always_inline void cubictcp_init(struct sock *sk)
{
	struct bictcp *ca = inet_csk_ca(sk);

	bictcp_reset(ca);
	hspp_reset(&ca->hspp);
	if (hystart == SS_EXIT_HYSTART)
		bictcp_hystart_reset(sk);
	else if (hystart == SS_EXIT_OFF && initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}
KR_INIT(kr_cubic_init, cubictcp_init)

/*
 * Idle (application-limited) for a while: shift the epoch by the idle time
 * so the curve resumes where it left off instead of jumping.
 */
static __always_inline void cubictcp_cwnd_event(struct sock *sk, int event)
{
	struct bictcp *ca = inet_csk_ca(sk);
	__u32 now = tcp_jiffies32;
	__s32 delta;

	if (event != CA_EVENT_TX_START)
		return;
	delta = now - tcp_sk(sk)->lsndtime;
	if (ca->epoch_start && delta > 0) {
		ca->epoch_start += delta;
		if (after(ca->epoch_start, now))
			ca->epoch_start = now;
	}
}
KR_CWND_EVENT(kr_cubic_cwnd_event, cubictcp_cwnd_event)

/*
 * A new epoch starts at the first ACK in congestion avoidance after a
 * reduction: fix K and the origin of the cubic function.
 */
static __always_inline void start_epoch(struct bictcp *ca, __u32 now,
					__u32 cwnd, __u32 acked)
{
	ca->epoch_start = now;
	ca->ack_cnt = acked;
	ca->tcp_cwnd = cwnd;
	if (ca->last_max_cwnd <= cwnd) {
		ca->bic_K = 0;
		ca->bic_origin_point = cwnd;
	} else {
		/* K = cbrt((W_max - cwnd) * rtt / C) in 2^-10 s. */
		ca->bic_K = cubic_root(cube_factor() *
				       (__u64)(ca->last_max_cwnd - cwnd));
		ca->bic_origin_point = ca->last_max_cwnd;
	}
}

/*
 * The cubic function's cnt: ACKs per segment that reach the target
 * W(t + min RTT) within one round trip.
 */
static __always_inline __u32 cubic_cnt(const struct bictcp *ca, __u32 now,
				       __u32 cwnd)
{
	__u32 delta, bic_target, cnt;
	__u64 offs, t;

	/* t in 2^-10 s, one min RTT ahead; the s32 sign-extends as in C. */
	t = (__s32)(now - ca->epoch_start);
	t += usecs_to_jiffies(ca->delay_min);
	t <<= BICTCP_HZ;
	t /= HZ;

	offs = t < ca->bic_K ? ca->bic_K - t : t - ca->bic_K;
	/* C/rtt * (t - K)^3, in segments. */
	delta = (cube_rtt_scale() * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
	if (t < ca->bic_K)
		bic_target = ca->bic_origin_point - delta;
	else
		bic_target = ca->bic_origin_point + delta;

	if (bic_target > cwnd)
		cnt = cwnd / (bic_target - cwnd);
	else
		cnt = 100 * cwnd;	/* at or above the target: very slowly */

	/* Before the first loss the curve knows nothing of the path:
	 * grow at least 5% per round trip. */
	if (ca->last_max_cwnd == 0 && cnt > 20)
		cnt = 20;
	return cnt;
}

/*
 * Linux: Reno gains one segment per cwnd * beta_scale / 8 ACKs. The
 * kernel's "while (ack_cnt > delta)" loop is taken in closed form (the
 * verifier wants bounded loops), as the Rust does; both leave the counters
 * alone for delta == 0, where the kernel would spin forever.
 */
static __always_inline void count_reno_acks(struct bictcp *ca, __u32 cwnd)
{
	__u32 delta = (cwnd * beta_scale()) >> 3;
	__u32 n;

	if (delta && ca->ack_cnt > delta) {
		n = (ca->ack_cnt - 1) / delta;
		ca->ack_cnt -= n * delta;
		ca->tcp_cwnd += n;
	}
}

/* FreeBSD D46546: NewReno's window, one segment per window of ACKs. */
static __always_inline void emulate_newreno(struct bictcp *ca)
{
	__u32 w = max(ca->tcp_cwnd, 1U);
	__u32 n;

	if (ca->ack_cnt >= w) {
		n = ca->ack_cnt / w;
		ca->ack_cnt -= n * w;
		ca->tcp_cwnd += n;
	}
}

/*
 * RFC 8312 Eq. 4 as stock FreeBSD computed it: W_est = W_max * beta +
 * 3(1 - beta)/(1 + beta) * t / RTT, t and the RTT both in whole jiffies,
 * the RTT at least one. On a coarse clock and a sub-millisecond path the
 * RTT reads as a whole tick and W_est barely grows (seed 001's collapse).
 */
static __always_inline void estimate_eq4(const struct sock *sk,
					 struct bictcp *ca, __u32 now)
{
	__s32 elapsed = now - ca->epoch_start;
	__u64 t_ticks = elapsed > 0 ? elapsed : 0;
	__u64 rtt_ticks = max(usecs_to_jiffies(tcp_sk(sk)->srtt_us >> 3), 1ULL);
	__u64 w_max_beta = (__u64)ca->last_max_cwnd * beta;
	__u64 growth = (__u64)alpha_eq4() * t_ticks / rtt_ticks;
	__u64 w_est = (w_max_beta + growth) >> 10;

	ca->tcp_cwnd = min(w_est, 0xffffffffULL);
}

/*
 * The TCP-friendly region: cap cnt so that cwnd grows at least as fast as
 * the estimated Reno window tcp_cwnd.
 */
static __always_inline void apply_friendliness(const struct sock *sk,
					       struct bictcp *ca, __u32 now,
					       __u32 cwnd)
{
	if (friendly == FRIENDLY_OFF)
		return;
	if (friendly == FRIENDLY_LINUX)
		count_reno_acks(ca, cwnd);
	else if (friendly == FRIENDLY_NEWRENO)
		emulate_newreno(ca);
	else
		estimate_eq4(sk, ca, now);
	if (ca->tcp_cwnd > cwnd) {
		__u32 max_cnt = cwnd / (ca->tcp_cwnd - cwnd);

		if (ca->cnt > max_cnt)
			ca->cnt = max_cnt;
	}
}

/* bictcp_update(): recompute cnt for the current cwnd. */
static __always_inline void bictcp_update(const struct sock *sk,
					  struct bictcp *ca, __u32 cwnd,
					  __u32 acked)
{
	__u32 now = tcp_jiffies32;
	bool hold;

	ca->ack_cnt += acked;

	/*
	 * Nothing changed and the last computation is recent (1/32 s): the
	 * kernel skips everything, friendliness included. FreeBSD evaluates
	 * its estimate on every ACK, so its two estimators do here too (as in
	 * crates/cc); only the cubic function is held.
	 */
	hold = ca->last_cwnd == cwnd &&
	       (__s32)(now - ca->last_time) <= (__s32)(HZ / 32);
	if (hold && (friendly == FRIENDLY_LINUX || friendly == FRIENDLY_OFF))
		return;

	/* The cubic function is evaluated at most once per jiffy; any cwnd
	 * reduction clears epoch_start and forces a recomputation. */
	if (!hold && (ca->epoch_start == 0 || now != ca->last_time)) {
		ca->last_cwnd = cwnd;
		ca->last_time = now;
		if (ca->epoch_start == 0)
			start_epoch(ca, now, cwnd, acked);
		ca->cnt = cubic_cnt(ca, now, cwnd);
	}
	apply_friendliness(sk, ca, now, cwnd);
	/* At most one segment per two ACKed: 1.5x per round trip. */
	ca->cnt = max(ca->cnt, 2U);
}

static __always_inline void cubictcp_cong_avoid(struct sock *sk, __u32 ack,
						__u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		if (hystart == SS_EXIT_HSPP)
			acked = hspp_slow_start(sk, &ca->hspp, acked);
		else
			acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bictcp_update(sk, ca, tp->snd_cwnd, acked);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}
KR_CONG_AVOID(kr_cubic_cong_avoid, cubictcp_cong_avoid)

static __always_inline __u32 cubictcp_recalc_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd;

	ca->epoch_start = 0;	/* end of epoch */
	hspp_on_loss(&ca->hspp);

	/* Fast convergence: a loss below the last W_max means a new flow is
	 * taking its share; remember a lower W_max, (1 + beta) / 2 of cwnd. */
	if (cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + beta)) /
				    (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;

	return max((cwnd * beta) / BICTCP_BETA_SCALE, 2U);
}
KR_SSTHRESH(kr_cubic_recalc_ssthresh, cubictcp_recalc_ssthresh)

static __always_inline void cubictcp_state(struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		bictcp_reset(inet_csk_ca(sk));
		bictcp_hystart_reset(sk);
	}
}
KR_SET_STATE(kr_cubic_state, cubictcp_state)

/*
 * hystart_ack_delay(): a cushion for TSO/GRO aggregation, the time to send
 * four maximum-size GSO packets at the pacing rate, at most 1 ms; without
 * it short-RTT flows see an ACK train too early.
 */
static __always_inline __u32 hystart_ack_delay(const struct sock *sk)
{
	unsigned long rate = sk->sk_pacing_rate;

	if (!rate)
		return 0;
	return min((__u64)USEC_PER_MSEC,
		   (__u64)sk->sk_gso_max_size * 4 * USEC_PER_SEC / rate);
}

/*
 * The ACK-train detector: ACKs back to back for longer than half the
 * minimum RTT (the whole RTT when paced) mean the window spans the path.
 */
static __always_inline void check_ack_train(struct sock *sk,
					    struct bictcp *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = bictcp_clock_us(sk);
	__u32 threshold;

	if ((__s32)(now - ca->last_ack) > (__s32)hystart_ack_delta_us)
		return;
	ca->last_ack = now;
	threshold = ca->delay_min + hystart_ack_delay(sk);
	if (sk->sk_pacing_status == SK_PACING_NONE)
		threshold >>= 1;
	/* An s32 against the u32 threshold: C compares unsigned. */
	if ((__u32)(now - ca->round_start) > threshold) {
		ca->found = 1;
		tp->snd_ssthresh = tp->snd_cwnd;
	}
}

/*
 * The delay detector: the round's minimum RTT over its first eight samples
 * exceeding the path's minimum by an eighth (4-16 ms) means a queue.
 */
static __always_inline void check_delay(struct sock *sk, struct bictcp *ca,
					__u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->curr_rtt > delay)
		ca->curr_rtt = delay;
	if (ca->sample_cnt < HYSTART_MIN_SAMPLES) {
		ca->sample_cnt++;
		return;
	}
	if (ca->curr_rtt > ca->delay_min +
			   HYSTART_DELAY_THRESH(ca->delay_min >> 3)) {
		ca->found = 1;
		tp->snd_ssthresh = tp->snd_cwnd;
	}
}

/* hystart_update(): one RTT sample taken in slow start. */
static __always_inline void hystart_update(struct sock *sk, __u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);

	if (after(tp->snd_una, ca->end_seq))
		bictcp_hystart_reset(sk);
	if (tp->snd_cwnd < hystart_low_window)
		return;
	if (hystart_detect & HYSTART_ACK_TRAIN)
		check_ack_train(sk, ca);
	if (hystart_detect & HYSTART_DELAY)
		check_delay(sk, ca, delay);
}

/*
 * Track the minimum RTT; false when the sample is absent or skipped.
 * Samples right after fast recovery are inflated by the queue that caused
 * the loss: the first second of an epoch is skipped.
 */
static __always_inline bool track_delay_min(struct bictcp *ca, __s32 rtt_us,
					    __u32 *delay)
{
	if (rtt_us < 0)
		return false;
	if (ca->epoch_start &&
	    (__s32)(tcp_jiffies32 - ca->epoch_start) < (__s32)HZ)
		return false;
	*delay = max((__u32)rtt_us, 1U);
	if (ca->delay_min == 0 || ca->delay_min > *delay)
		ca->delay_min = *delay;
	return true;
}

static __always_inline void cubictcp_acked(struct sock *sk,
					   const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);
	__s32 rtt_us = sample->rtt_us;
	__u32 delay = 0;
	bool sampled = track_delay_min(ca, rtt_us, &delay);

	if (hystart == SS_EXIT_HYSTART) {
		if (sampled && !ca->found && tcp_in_slow_start(tp))
			hystart_update(sk, delay);
	} else if (hystart == SS_EXIT_HSPP) {
		/* HyStart++ sees every ACK: its rounds advance without RTTs. */
		hspp_on_ack(sk, &ca->hspp, rtt_us);
	}
}
KR_PKTS_ACKED(kr_cubic_acked, cubictcp_acked)

KR_UNDO_CWND(kr_cubic_undo_cwnd, tcp_reno_undo_cwnd)

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_cubic = {
	.init = (void *)kr_cubic_init,
	.ssthresh = (void *)kr_cubic_recalc_ssthresh,
	.cong_avoid = (void *)kr_cubic_cong_avoid,
	.set_state = (void *)kr_cubic_state,
	.undo_cwnd = (void *)kr_cubic_undo_cwnd,
	.cwnd_event = (void *)kr_cubic_cwnd_event,
	.pkts_acked = (void *)kr_cubic_acked,
	.name = "kr_cubic",
};
