// SPDX-License-Identifier: GPL-2.0
/*
 * kr_cdg: CAIA Delay-Gradient congestion control as a BPF struct_ops
 * program.
 *
 * Hayes and Armitage, "Revisiting TCP congestion control using delay
 * gradients", IFIP Networking 2011. This is Linux 6.18 net/ipv4/tcp_cdg.c
 * (Kenneth Klette Jonassen), ported line by line from the Rust reference
 * crates/cc/src/cdg.rs (itself a bit-exact port) so that a trace of these
 * programs replays against the Rust.
 *
 * Once per round trip CDG takes the smallest and largest RTT of the round
 * and subtracts the previous round's: the gradients, summed over a moving
 * window of `window` rounds, say whether a queue is building. A positive
 * gradient g backs off with probability 1 - exp(-g * backoff_factor / 10^6)
 * to backoff_beta of the window, so that flows sharing a queue do not all
 * back off at once. Between backoffs growth is Reno's. A backoff that did
 * not shrink the RTT, use_ineff times running, stops being taken (loss-based
 * flows share the queue); a shadow window remembers what backoffs gave up,
 * so that a loss halves that rather than the reduced window; and with
 * use_tolerance, losses while the queue is not full are ignored. Slow start
 * ends by CDG's own HyStart.
 *
 * Where this differs from the kernel file:
 * - The gradient window lives in socket-local storage (an sk_storage map),
 *   not behind a pointer in the private area: the kernel's CDG keeps a
 *   kcalloc'd pointer there, which is why bpf_setsockopt(TCP_CONGESTION)
 *   refuses "cdg" (a BPF algorithm switching to it could overwrite the
 *   pointer). init creates the storage, release deletes it, and the kernel
 *   frees it with the socket in any case. Each instance has its own map,
 *   sized for the largest window (256 rounds, 2 KiB per connection).
 * - A backoff enters CWR with tcp_enter_cwr(), which is no kfunc, and of
 *   what it sets a program may write only snd_cwnd, snd_cwnd_cnt,
 *   snd_ssthresh and ecn_flags. So the port keeps a CWR of its own
 *   (cdg_enter_cwr()): ssthresh as tcp_init_cwnd_reduction() sets it, cwnd
 *   cut to ssthresh at once (where PRR would reach it over the round trip),
 *   no growth and no rounds until an ACK passes the snd_nxt of the backoff,
 *   then what tcp_end_cwnd_reduction() does, COMPLETE_CWR included. The
 *   core's own state stays Open meanwhile; a reduction the core starts
 *   itself (a loss) takes over. This differs in result from the kernel
 *   (the flight drops at once rather than over one RTT). The Rust
 *   reference runs the same CWR with cdg:cwr=own (enter_own_cwr(),
 *   end_own_cwr()), the spec this port's traces replay against; its
 *   default, cwr=kernel, models tcp_enter_cwr().
 * - Signed divisions are written with unsigned ones (sdiv()): BPF before
 *   ISA v4 has none.
 * - get_random_u32() is bpf_get_prandom_u32(). A trace cannot replay the
 *   draw; it shows its outcome in state and backoff_cnt, which the Rust
 *   reference takes from the trace (drawn_at_random).
 * - The kernel's HyStart MIB counters are not reachable from BPF.
 */
#include "kleinrock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* hystart_detect bits. */
#define HYSTART_ACK_TRAIN	1
#define HYSTART_DELAY		2

/* enum cdg_state */
#define CDG_UNKNOWN		0
#define CDG_NONFULL		1
#define CDG_FULL		2
#define CDG_BACKOFF		3

/* The largest window the parameter allows. */
#define CDG_WINDOW_MAX		256

/*
 * Set by the loader before load; these are the kernel module's defaults,
 * with its types (window is an int, and the gradient arithmetic with it is
 * signed).
 */
const volatile int window = 8;			/* rounds, a power of two */
const volatile __u32 backoff_beta = 724;	/* 0.7071 * 1024 */
const volatile __u32 backoff_factor = 42;	/* 1000 / (G * window), G = 3 */
const volatile __u32 hystart_detect = HYSTART_ACK_TRAIN | HYSTART_DELAY;
const volatile __u32 use_ineff = 5;		/* 0: off */
const volatile __u32 use_shadow = 1;
const volatile __u32 use_tolerance = 0;

/* A round's RTT extremes, or gradients of them (us). */
struct cdg_minmax {
	union {
		struct {
			__s32 min;
			__s32 max;
		};
		__u64 v64;
	};
};

/*
 * struct cdg as in tcp_cdg.c, member for member but for the gradients
 * pointer, then Kleinrock's CWR: 64 of the 104 bytes.
 */
struct cdg {
	struct cdg_minmax rtt;		/* this round's extremes */
	struct cdg_minmax rtt_prev;	/* the previous round's */
	struct cdg_minmax gsum;		/* the window's gradient sums */
	bool gfilled;			/* has the window been filled once */
	__u8 tail;			/* next slot of the window */
	__u8 state;			/* enum cdg_state */
	__u8 delack;			/* single-segment ACKs to treat as delayed */
	__u32 rtt_seq;			/* the round ends when an ACK passes it */
	__u32 shadow_wnd;		/* what backoffs gave up, for losses */
	__u16 backoff_cnt;		/* backoffs since one shrank the RTT */
	__u16 sample_cnt;		/* HyStart's RTT samples this round */
	__s32 delay_min;		/* smallest RTT in slow start, us */
	__u32 last_ack;			/* HyStart's ACK train, us */
	__u32 round_start;		/* its start, us */
	__u32 cwr_high_seq;		/* Kleinrock's CWR ends past this */
	__u8 in_cwr;			/* Kleinrock's CWR is on */
};
KR_CA_TYPE(cdg);

_Static_assert(sizeof(struct cdg) <= 104, "icsk_ca_priv is 104 bytes");

/* The gradient window, one per socket. */
struct cdg_window {
	struct cdg_minmax gradients[CDG_WINDOW_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cdg_window);
} gradient_window SEC(".maps");

/* The socket's gradient window, NULL if there is none (window 1, or init
 * found no memory). */
static __always_inline struct cdg_window *cdg_gradients(struct sock *sk)
{
	if (window <= 1)
		return NULL;
	return bpf_sk_storage_get(&gradient_window, sk, NULL, 0);
}

/* a / b for b > 0, truncating toward zero as C does. */
static __always_inline __s32 sdiv(__s32 a, __s32 b)
{
	__u32 q = (a < 0 ? 0U - (__u32)a : (__u32)a) / (__u32)b;

	return a < 0 ? (__s32)(0U - q) : (__s32)q;
}

/* DIV_ROUND_CLOSEST(x, 64) for a signed x. */
static __always_inline __s32 div_round_closest_64(__s32 x)
{
	return x > 0 ? sdiv(x + 32, 64) : sdiv(x - 32, 64);
}

/*
 * nexp_u32(): e^(-ux / 10^6) scaled to U32_MAX, by a product of table
 * entries for each set bit of ux >> 8 and a linear step for the low eight
 * bits.
 */
static __always_inline __u32 nexp_u32(__u32 ux)
{
	/* exp(-x) * 65536 - 1 for x = 0, then 0.000256 * 2^k, k = 0..15. */
	static const __u16 v[17] = {
		65535,
		65518, 65501, 65468, 65401, 65267, 65001, 64470, 63422,
		61378, 57484, 50423, 38795, 22965, 8047,  987,   14,
	};
	__u32 msb = ux >> 8;
	__u32 res, y;
	int i;

	/* Cut off when ux >= 2^24 (the true value is at most 222/U32_MAX). */
	if (msb > 0xffff)
		return 0;
	res = 0xffffffffU - (ux & 0xff) * (0xffffffffU / 1000000);
	/* msb has at most 16 bits: at most 16 rounds. */
	for (i = 1; msb && i <= 16; i++, msb >>= 1) {
		/* A clear bit multiplies by v[0] + 1 = 65536 >> 16: by one. */
		y = (__u32)v[msb & 1 ? i : 0] + 1;
		res = ((__u64)res * y) >> 16;
	}
	return res;
}

/*
 * tcp_cdg_hystart_update(): CUBIC's HyStart with CDG's changes: the us
 * clock for ACK trains, the train restarting when not cwnd-limited, any
 * cwnd, and RTT minima that passed the delayed-ACK filter.
 */
static __always_inline void tcp_cdg_hystart_update(struct sock *sk)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now_us, base_owd;
	__s32 thresh;

	ca->delay_min = min_not_zero(ca->delay_min, ca->rtt.min);
	if (ca->delay_min == 0)
		return;

	if (hystart_detect & HYSTART_ACK_TRAIN) {
		now_us = tp->tcp_mstamp;
		if (ca->last_ack == 0 || !tcp_is_cwnd_limited(sk)) {
			ca->last_ack = now_us;
			ca->round_start = now_us;
		} else if (before(now_us, ca->last_ack + 3000)) {
			base_owd = max((__u32)ca->delay_min / 2U, 125U);
			ca->last_ack = now_us;
			if (after(now_us, ca->round_start + base_owd)) {
				tp->snd_ssthresh = tp->snd_cwnd;
				return;
			}
		}
	}

	if (hystart_detect & HYSTART_DELAY) {
		if (ca->sample_cnt < 8) {
			ca->sample_cnt++;
		} else {
			thresh = max((__u32)ca->delay_min +
					     (__u32)ca->delay_min / 8U,
				     125U);
			if (ca->rtt.min > thresh)
				tp->snd_ssthresh = tp->snd_cwnd;
		}
	}
}

/*
 * tcp_cdg_grad(): this round's gradient, summed over the window (the
 * paper's average without its division by window), extrapolated while the
 * window fills.
 */
static __always_inline __s32 tcp_cdg_grad(struct sock *sk, struct cdg *ca)
{
	struct cdg_window *w = cdg_gradients(sk);
	__s32 gmin = ca->rtt.min - ca->rtt_prev.min;
	__s32 gmax = ca->rtt.max - ca->rtt_prev.max;
	__s32 grad;

	if (w) {
		ca->gsum.min += gmin - w->gradients[ca->tail].min;
		ca->gsum.max += gmax - w->gradients[ca->tail].max;
		w->gradients[ca->tail].min = gmin;
		w->gradients[ca->tail].max = gmax;
		ca->tail = (ca->tail + 1) & (window - 1);
		gmin = ca->gsum.min;
		gmax = ca->gsum.max;
	}

	grad = gmin > 0 ? gmin : gmax;

	/* Extrapolate the missing rounds while the window fills. */
	if (!ca->gfilled) {
		if (!w && window > 1)
			grad *= window;	/* init found no memory */
		else if (ca->tail == 0)
			ca->gfilled = true;
		else
			grad = sdiv(grad * window, (int)ca->tail);
	}

	/* The last backoff was effectual. */
	if (gmin <= -32 || gmax <= -32)
		ca->backoff_cnt = 0;

	if (use_tolerance) {
		/* Small variations count as none. */
		gmin = div_round_closest_64(gmin);
		gmax = div_round_closest_64(gmax);
		if (gmin > 0 && gmax <= 0)
			ca->state = CDG_FULL;
		else if ((gmin > 0 && gmax > 0) || gmax < 0)
			ca->state = CDG_NONFULL;
	}
	return grad;
}

static __always_inline __u32 tcp_cdg_ssthresh(struct sock *sk)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd;

	if (ca->in_cwr) {
		/* The core starts a reduction of its own (a loss) inside the
		 * port's CWR. The kernel, in CWR already, would not have asked:
		 * keep the backoff's threshold, and let the core's reduction
		 * take over (it completes with COMPLETE_CWR as CWR does). */
		ca->in_cwr = 0;
		return tp->snd_ssthresh;
	}
	if (ca->state == CDG_BACKOFF)
		return max(2U, (cwnd * min(1024U, backoff_beta)) >> 10);
	if (ca->state == CDG_NONFULL && use_tolerance)
		return cwnd;
	ca->shadow_wnd = min(ca->shadow_wnd >> 1, cwnd);
	if (use_shadow)
		return max(max(2U, ca->shadow_wnd), cwnd >> 1);
	return max(2U, cwnd >> 1);
}
KR_SSTHRESH(kr_cdg_ssthresh, tcp_cdg_ssthresh)

/*
 * tcp_enter_cwr() as far as a program can: once per reduction, the
 * threshold of tcp_init_cwnd_reduction() and the window PRR would reach a
 * round trip later; cong_avoid holds until an ACK passes snd_nxt of now.
 */
static __always_inline void cdg_enter_cwr(struct sock *sk)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (icsk_ca_state(sk) >= TCP_CA_CWR || ca->in_cwr)
		return;
	ca->cwr_high_seq = tp->snd_nxt;
	tp->snd_cwnd_cnt = 0;
	tp->snd_ssthresh = tcp_cdg_ssthresh(sk);
	if (tp->ecn_flags & TCP_ECN_OK)
		tp->ecn_flags |= TCP_ECN_QUEUE_CWR;
	tp->snd_cwnd = min(tp->snd_cwnd, tp->snd_ssthresh);
	tp->snd_cwnd_stamp = tcp_jiffies32;
	ca->in_cwr = 1;
}

/* tcp_cdg_backoff(): maybe reduce to backoff_beta of cwnd. */
static __always_inline bool tcp_cdg_backoff(struct sock *sk, __u32 grad)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (bpf_get_prandom_u32() <= nexp_u32(grad * backoff_factor))
		return false;
	if (use_ineff) {
		ca->backoff_cnt++;
		if (ca->backoff_cnt > use_ineff)
			return false;
	}
	ca->shadow_wnd = max(ca->shadow_wnd, tp->snd_cwnd);
	ca->state = CDG_BACKOFF;
	cdg_enter_cwr(sk);
	return true;
}

/* Ends the round: gradient, possibly a backoff. True if it backed off. */
static __always_inline bool tcp_cdg_end_round(struct sock *sk)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__s32 grad = 0;

	if (ca->rtt_prev.v64)
		grad = tcp_cdg_grad(sk, ca);
	ca->rtt_seq = tp->snd_nxt;
	ca->rtt_prev = ca->rtt;
	ca->rtt.v64 = 0;
	ca->last_ack = 0;
	ca->sample_cnt = 0;
	return grad > 0 && tcp_cdg_backoff(sk, grad);
}

static __always_inline void tcp_cdg_cwnd_event(struct sock *sk, int ev)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct cdg_window *w;
	int i;

	switch (ev) {
	case CA_EVENT_CWND_RESTART:
		w = cdg_gradients(sk);
		if (w) {
			for (i = 0; i < window && i < CDG_WINDOW_MAX; i++)
				w->gradients[i].v64 = 0;
		}
		/* Everything but Kleinrock's CWR, which idling does not end. */
		__builtin_memset(ca, 0, __builtin_offsetof(struct cdg,
							   cwr_high_seq));
		ca->rtt_seq = tp->snd_nxt;
		ca->shadow_wnd = tp->snd_cwnd;
		break;
	case CA_EVENT_COMPLETE_CWR:
		ca->state = CDG_UNKNOWN;
		ca->rtt_seq = tp->snd_nxt;
		ca->rtt_prev = ca->rtt;
		ca->rtt.v64 = 0;
		ca->in_cwr = 0;
		break;
	default:
		break;
	}
}
KR_CWND_EVENT(kr_cdg_cwnd_event, tcp_cdg_cwnd_event)

/* tcp_end_cwnd_reduction() for the port's own CWR. */
static __always_inline void cdg_end_cwr(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->snd_cwnd = tp->snd_ssthresh;
	tp->snd_cwnd_stamp = tcp_jiffies32;
	tcp_cdg_cwnd_event(sk, CA_EVENT_COMPLETE_CWR);
}

static __always_inline void tcp_cdg_cong_avoid(struct sock *sk, __u32 ack,
					       __u32 acked)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 prior_snd_cwnd, incr;

	/* In CWR the kernel calls no cong_avoid; it leaves CWR when an ACK
	 * passes high_seq, before this ACK's cong_avoid. */
	if (ca->in_cwr) {
		if (!after(ack, ca->cwr_high_seq))
			return;
		cdg_end_cwr(sk);
	}

	if (tcp_in_slow_start(tp) && hystart_detect)
		tcp_cdg_hystart_update(sk);

	if (after(ack, ca->rtt_seq) && ca->rtt.v64 && tcp_cdg_end_round(sk))
		return;

	if (!tcp_is_cwnd_limited(sk)) {
		ca->shadow_wnd = min(ca->shadow_wnd, tp->snd_cwnd);
		return;
	}

	prior_snd_cwnd = tp->snd_cwnd;
	tcp_reno_cong_avoid(sk, ack, acked);
	incr = tp->snd_cwnd - prior_snd_cwnd;
	ca->shadow_wnd = max(ca->shadow_wnd, ca->shadow_wnd + incr);
}
KR_CONG_AVOID(kr_cdg_cong_avoid, tcp_cdg_cong_avoid)

static __always_inline void tcp_cdg_acked(struct sock *sk,
					  const struct ack_sample *sample)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__s32 rtt_us = sample->rtt_us;

	if (rtt_us <= 0)
		return;

	/* Hayes' delayed-ACK filter (CAIA TR 100219A): after a stretch ACK,
	 * single-segment ACKs are probably delayed ones, which may only lower
	 * an existing minimum. */
	if (tp->sacked_out == 0) {
		if (sample->pkts_acked == 1 && ca->delack) {
			ca->rtt.min = min(ca->rtt.min, rtt_us);
			ca->delack--;
			return;
		} else if (sample->pkts_acked > 1 && ca->delack < 5) {
			ca->delack++;
		}
	}
	ca->rtt.min = min_not_zero(ca->rtt.min, rtt_us);
	ca->rtt.max = max(ca->rtt.max, rtt_us);
}
KR_PKTS_ACKED(kr_cdg_acked, tcp_cdg_acked)

static __always_inline void tcp_cdg_init(struct sock *sk)
{
	struct cdg *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	/* Without memory the window stays unallocated, as in the kernel;
	 * tcp_cdg_grad() then extrapolates every round. */
	if (window > 1)
		bpf_sk_storage_get(&gradient_window, sk, NULL,
				   BPF_SK_STORAGE_GET_F_CREATE);
	ca->rtt_seq = tp->snd_nxt;
	ca->shadow_wnd = tp->snd_cwnd;
}
KR_INIT(kr_cdg_init, tcp_cdg_init)

static __always_inline void tcp_cdg_release(struct sock *sk)
{
	bpf_sk_storage_delete(&gradient_window, sk);
}
KR_RELEASE(kr_cdg_release, tcp_cdg_release)

KR_UNDO_CWND(kr_cdg_undo_cwnd, tcp_reno_undo_cwnd)

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_cdg = {
	.cong_avoid = (void *)kr_cdg_cong_avoid,
	.cwnd_event = (void *)kr_cdg_cwnd_event,
	.pkts_acked = (void *)kr_cdg_acked,
	.undo_cwnd = (void *)kr_cdg_undo_cwnd,
	.ssthresh = (void *)kr_cdg_ssthresh,
	.release = (void *)kr_cdg_release,
	.init = (void *)kr_cdg_init,
	.name = "kr_cdg",
};
