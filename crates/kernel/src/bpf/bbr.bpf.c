// SPDX-License-Identifier: GPL-2.0
/*
 * kr_bbr: BBR v1 (Bottleneck Bandwidth and Round-trip propagation time) as
 * a BPF struct_ops program.
 *
 * Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based
 * Congestion Control", ACM Queue 14(5), September-October 2016, and CACM
 * 60(2), February 2017. This is Linux 6.18 net/ipv4/tcp_bbr.c, ported line
 * by line from the Rust reference crates/cc/src/bbr.rs (itself a bit-exact
 * port, with the windowed filter of lib/win_minmax.c in minmax.bpf.h), with
 * the kernel's integer widths and function structure, so that a trace of
 * these programs replays against the Rust bit for bit.
 *
 * BBR does not take loss or delay as the signal of congestion. It builds a
 * model of the path from the delivery rate and the RTT measured on every
 * ACK:
 *
 *   bottleneck_bw = windowed_max(delivered / elapsed, 10 round trips)
 *   min_rtt       = windowed_min(rtt, 10 seconds)
 *   pacing_rate   = pacing_gain * bottleneck_bw
 *   cwnd          = max(cwnd_gain * bottleneck_bw * min_rtt, 4)
 *
 * and aims at the operating point Kleinrock showed optimal, a full pipe
 * with no queue (delivery rate at the bottleneck bandwidth, RTT at the
 * propagation delay), by cycling its gains through four modes:
 *
 *             |
 *             V
 *    +---> STARTUP  ----+     STARTUP:   gain 2/ln2, the rate doubles per
 *    |        |         |                round until bw grows < 25% in 3
 *    |        V         |     DRAIN:     gain ln2/2 until inflight <= BDP
 *    |      DRAIN   ----+     PROBE_BW:  gains 5/4, 3/4, then 1 for six
 *    |        |         |                rounds, from a random phase
 *    |        V         |     PROBE_RTT: cwnd 4 for 200 ms and a round
 *    +---> PROBE_BW ----+                when min_rtt is 10 s old, to let
 *    |      ^    |      |                the queue drain and re-measure it
 *    |      +----+      |
 *    |                  |
 *    +---- PROBE_RTT <--+
 *
 * Loss does count in three places: the first round of recovery conserves
 * packets, a long-term estimator detects token-bucket policers (two lossy
 * intervals at a consistent rate) and then paces at the policed rate, and
 * an RTO ends the round. ACK aggregation is measured (extra_acked) and
 * provisioned in cwnd.
 *
 * BBR runs through cong_control, so the TCP core applies neither PRR nor
 * cong_avoid for it, and it asks the core to pace (SK_PACING_NEEDED): with
 * no fq qdisc, TCP paces itself with a timer per socket.
 *
 * The kernel draws one random number: the phase of the gain cycle on
 * entering PROBE_BW. Here it is bpf_get_prandom_u32() reduced to the range
 * as the kernel reduces it; a replay takes it from the trace.
 */
#include "kleinrock.bpf.h"
#include "minmax.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Rates are packets per microsecond scaled by 2^24: a unit is about 715
 * bit/s for 1500-byte packets, so a u32 spans 715 bit/s (0.06 packets/s)
 * to 3 Tbit/s (256 M packets/s).
 */
#define BW_SCALE 24
#define BW_UNIT (1 << BW_SCALE)

/* Gains and other fractions are in 1/256 (BBR_UNIT is 1.0). */
#define BBR_SCALE 8
#define BBR_UNIT (1 << BBR_SCALE)

/* What BBR is doing: how fast it sends, and how much it keeps in flight. */
enum bbr_mode {
	BBR_STARTUP,	/* ramp up the sending rate fast, to fill the pipe */
	BBR_DRAIN,	/* drain the queue STARTUP made */
	BBR_PROBE_BW,	/* discover and share bw: pace around the estimate */
	BBR_PROBE_RTT,	/* cut inflight to the minimum to re-measure min_rtt */
};

/*
 * The kernel's struct bbr, member for member and bit for bit (checked
 * against the running kernel's BTF; docs/KERNEL.md has the table): 104
 * bytes, all of icsk_ca_priv. A trace decoder reads these members from the
 * raw private area with one layout, the same for kr_bbr and the kernel's
 * bbr. Bitfields are allocated from the least significant bit of their u32
 * (x86-64 and BPF are little-endian), so e.g. mode is bits 0-2 of the word
 * at byte 56, lt_use_bw its bit 31. The bitfield widths are also the
 * arithmetic's: lt_rtt_cnt++ wraps at 128 as in the kernel, and the Rust
 * masks to the same widths.
 */
struct bbr {
	__u32 min_rtt_us;		/* min RTT in the 10 s window, us */
	__u32 min_rtt_stamp;		/* when it was measured, jiffies */
	__u32 probe_rtt_done_stamp;	/* end of PROBE_RTT, jiffies */
	struct minmax bw;		/* max recent delivery rate, BW_UNIT */
	__u32 rtt_cnt;			/* packet-timed rounds elapsed */
	__u32 next_rtt_delivered;	/* tp->delivered at the round's end */
	__u64 cycle_mstamp;		/* start of this gain-cycle phase, us */
	__u32 mode:3,			/* enum bbr_mode */
	      prev_ca_state:3,		/* icsk_ca_state on the previous ACK */
	      packet_conservation:1,	/* conserving packets (recovery)? */
	      round_start:1,		/* did a packet-timed round start? */
	      idle_restart:1,		/* restarting after idle? */
	      probe_rtt_round_done:1,	/* a PROBE_RTT round at 4 packets? */
	      unused:13,
	      lt_is_sampling:1,		/* taking long-term samples now? */
	      lt_rtt_cnt:7,		/* rounds in the long-term interval */
	      lt_use_bw:1;		/* pace at lt_bw (policed)? */
	__u32 lt_bw;			/* long-term delivery rate, BW_UNIT */
	__u32 lt_last_delivered;	/* interval start: tp->delivered */
	__u32 lt_last_stamp;		/* interval start: delivered_mstamp, ms */
	__u32 lt_last_lost;		/* interval start: tp->lost */
	__u32 pacing_gain:10,		/* current pacing gain, BBR_UNIT */
	      cwnd_gain:10,		/* current cwnd gain, BBR_UNIT */
	      full_bw_reached:1,	/* did STARTUP fill the pipe? */
	      full_bw_cnt:2,		/* rounds without 25% bw growth */
	      cycle_idx:3,		/* phase in the pacing gain cycle */
	      has_seen_rtt:1,		/* has an RTT sample been seen? */
	      unused_b:5;
	__u32 prior_cwnd;		/* cwnd before recovery or PROBE_RTT */
	__u32 full_bw;			/* bw at the last 25% growth, BW_UNIT */

	/* ACK aggregation: */
	__u64 ack_epoch_mstamp;		/* start of the ACK sampling epoch, us */
	__u16 extra_acked[2];		/* max excess ACKed per 5-round window */
	__u32 ack_epoch_acked:20,	/* packets (S)ACKed in the epoch */
	      extra_acked_win_rtts:5,	/* age of extra_acked, rounds */
	      extra_acked_win_idx:1,	/* which extra_acked is current */
	      unused_c:6;
};
KR_CA_TYPE(bbr);

_Static_assert(sizeof(struct bbr) == 104, "struct bbr fills icsk_ca_priv");
_Static_assert(__builtin_offsetof(struct bbr, cycle_mstamp) == 48,
	       "the kernel's layout");
_Static_assert(__builtin_offsetof(struct bbr, lt_bw) == 60,
	       "the kernel's layout");
_Static_assert(__builtin_offsetof(struct bbr, prior_cwnd) == 80,
	       "the kernel's layout");
_Static_assert(__builtin_offsetof(struct bbr, ack_epoch_mstamp) == 88,
	       "the kernel's layout");
_Static_assert(__builtin_offsetof(struct bbr, extra_acked) == 96,
	       "the kernel's layout");

/* Phases in a pacing gain cycle. */
#define CYCLE_LEN	8

/* The bw filter's window, rounds: a gain cycle and two. */
static const int bbr_bw_rtts = CYCLE_LEN + 2;
/* The min_rtt filter's window, s. */
static const __u32 bbr_min_rtt_win_sec = 10;
/* Time at bbr_cwnd_min_target in PROBE_RTT, ms: about 2% of 10 s. */
static const __u32 bbr_probe_rtt_mode_ms = 200;
/* Below this rate, bit/s, one-segment TSO bursts: bigger ones are not
 * worth their burstiness. */
static const int bbr_min_tso_rate = 1200000;

/* Pace about 1% below the estimated bw, so that queues drain over time:
 * aiming slightly low is part of the design. */
static const int bbr_pacing_margin_percent = 1;

/* 2/ln(2): the smallest gain that doubles the rate each round, so that
 * STARTUP sends as many packets per round as Reno's slow start. */
static const int bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1;
/* ln(2)/2, the inverse: drains STARTUP's queue in about one round. */
static const int bbr_drain_gain = BBR_UNIT * 1000 / 2885;
/* The steady-state cwnd gain: tolerates delayed and stretched ACKs. */
static const int bbr_cwnd_gain = BBR_UNIT * 2;
/*
 * PROBE_BW's gain cycle, to discover and share bw. Placed in .rodata by
 * name: at 32 bytes clang would put it in the mergeable .rodata.cst32,
 * which libbpf does not map.
 */
static const int bbr_pacing_gain[] SEC(".rodata") = {
	BBR_UNIT * 5 / 4,		/* probe for more bw */
	BBR_UNIT * 3 / 4,		/* drain the probe's queue, yield bw */
	BBR_UNIT, BBR_UNIT, BBR_UNIT,	/* cruise at the estimate, */
	BBR_UNIT, BBR_UNIT, BBR_UNIT	/* without adding queue */
};
/* The cycle starts at a random phase among the first 7 after the drain
 * phase, so that competing flows do not probe in step. */
static const __u32 bbr_cycle_rand = 7;

/* Fewest packets to keep in flight: a receiver ACKing every other packet
 * needs two 2-packet exchanges outstanding. */
static const __u32 bbr_cwnd_min_target = 4;

/* STARTUP ends when bw has not grown by 25% ... */
static const __u32 bbr_full_bw_thresh = BBR_UNIT * 5 / 4;
/* ... for 3 rounds (1: the receive window grows, 2: the sender fills it,
 * 3: the samples show the larger rate). */
static const __u32 bbr_full_bw_cnt = 3;

/* The long-term ("LT") estimator, for policers. Rounds per interval, at
 * least: */
static const __u32 bbr_lt_intvl_min_rtts = 4;
/* An interval is lossy above 50/256 (about 20%) lost: */
static const __u32 bbr_lt_loss_thresh = 50;
/* Two intervals are consistent within 1/8 of the rate ... */
static const __u32 bbr_lt_bw_ratio = BBR_UNIT / 8;
/* ... or within 4 kbit/s (bytes/s): */
static const __u32 bbr_lt_bw_diff = 4000 / 8;
/* Pace at the policed rate for this many rounds: */
static const __u32 bbr_lt_bw_max_rtts = 48;

/* ACK aggregation: the gain on extra_acked added to cwnd, */
static const int bbr_extra_acked_gain = BBR_UNIT;
/* the window of each extra_acked filter, rounds, */
static const __u32 bbr_extra_acked_win_rtts = 5;
/* the ack_epoch_acked at which the epoch restarts, packets, */
static const __u32 bbr_ack_epoch_acked_reset_thresh = 1U << 20;
/* and the cap on the extra cwnd, as this much time at bw, us. */
static const __u32 bbr_extra_acked_max_us = 100 * 1000;

/* TCP_INIT_CWND (RFC 6928), segments. */
#define TCP_INIT_CWND		10
/* GSO_LEGACY_MAX_SIZE, bytes: the largest TSO burst BBR plans for. */
#define GSO_LEGACY_MAX_SIZE	65536
/*
 * MAX_TCP_HEADER, bytes: L1_CACHE_ALIGN(128 + MAX_HEADER), a constant of
 * the kernel's build. crates/cc uses 320, its value on x86-64 distribution
 * kernels (docs/ALGORITHMS.md), and so does the port, so that the two
 * agree. A kernel built without Hyper-V networking, wireless, AX.25 and IP
 * tunnels has MAX_HEADER 32 and so 192 (this project's 6.18 test VM): its
 * bbr then differs from both when sk_pacing_rate >> sk_pacing_shift
 * exceeds 65,215 bytes and a multiple of mss_cache falls in
 * (65,215, 65,343] (mss 1452, for one).
 */
#define MAX_TCP_HEADER		320
#define NSEC_PER_USEC		1000ULL

static __always_inline void bbr_check_probe_rtt_done(struct sock *sk);

/*
 * get_random_u32_below(ceil) for a constant ceil of at most 256, as
 * include/linux/random.h computes it (and so tcp_bbr.c's draw): Lemire's
 * multiply-shift of a random byte, ceil * byte >> 8, rejecting the bytes
 * whose low half falls below 256 % ceil, which would make the result
 * uneven. The kernel retries until a byte is accepted; the verifier wants
 * a bound, so this tries 8 bytes, and takes the eighth anyway when all 8
 * are rejected (probability (4/256)^8 = 2^-48 for ceil 7): the range is
 * the same, the bias negligible.
 */
#define RANDOM_BELOW_TRIES	8

static __always_inline __u32 get_random_u32_below(__u32 ceil)
{
	__u32 mult = 0;
	int i;

	for (i = 0; i < RANDOM_BELOW_TRIES; i++) {
		mult = ceil * (__u8)bpf_get_prandom_u32();
		if ((__u8)mult >= (1U << 8) % ceil)
			break;
	}
	return mult >> 8;
}

/* Did STARTUP fill the pipe? */
static __always_inline bool bbr_full_bw_reached(const struct sock *sk)
{
	const struct bbr *bbr = inet_csk_ca(sk);

	return bbr->full_bw_reached;
}

/* The windowed max recent delivery rate, BW_UNIT. */
static __always_inline __u32 bbr_max_bw(const struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	return minmax_get(&bbr->bw);
}

/* The estimated bw of the path: the policed rate when one is detected. */
static __always_inline __u32 bbr_bw(const struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	return bbr->lt_use_bw ? bbr->lt_bw : bbr_max_bw(sk);
}

/* The max extra ACKed over the last 5 to 10 rounds. */
static __always_inline __u16 bbr_extra_acked(const struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	return max(bbr->extra_acked[0], bbr->extra_acked[1]);
}

/*
 * A rate in bytes per second, with a gain, 1% under. Ordered to keep in
 * u64 up to 2.9 Tbit/s at the 2.89x gain.
 */
static __always_inline __u64 bbr_rate_bytes_per_sec(struct sock *sk,
						    __u64 rate, int gain)
{
	unsigned int mss = tcp_sk(sk)->mss_cache;

	rate *= mss;
	rate *= gain;
	rate >>= BBR_SCALE;
	rate *= USEC_PER_SEC / 100 * (100 - bbr_pacing_margin_percent);
	return rate >> BW_SCALE;
}

/* A bw and a gain as a pacing rate, bytes per second. */
static __always_inline unsigned long bbr_bw_to_pacing_rate(struct sock *sk,
							   __u32 bw, int gain)
{
	__u64 rate = bw;

	rate = bbr_rate_bytes_per_sec(sk, rate, gain);
	rate = min(rate, (__u64)sk->sk_max_pacing_rate);
	return rate;
}

/* The first pacing rate: high_gain * cwnd / RTT (1 ms before a sample). */
static __always_inline void bbr_init_pacing_rate_from_rtt(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	__u64 bw;
	__u32 rtt_us;

	if (tp->srtt_us) {		/* any RTT sample yet? */
		rtt_us = max(tp->srtt_us >> 3, 1U);
		bbr->has_seen_rtt = 1;
	} else {			/* no: a nominal 1 ms */
		rtt_us = USEC_PER_MSEC;
	}
	bw = (__u64)tp->snd_cwnd * BW_UNIT;
	bw /= rtt_us;
	sk->sk_pacing_rate = bbr_bw_to_pacing_rate(sk, bw, bbr_high_gain);
}

/* Pace at bw * gain; before the pipe is full, never slower than now. */
static __always_inline void bbr_set_pacing_rate(struct sock *sk, __u32 bw,
						int gain)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	unsigned long rate = bbr_bw_to_pacing_rate(sk, bw, gain);

	if (!bbr->has_seen_rtt && tp->srtt_us)
		bbr_init_pacing_rate_from_rtt(sk);
	if (bbr_full_bw_reached(sk) || rate > sk->sk_pacing_rate)
		sk->sk_pacing_rate = rate;
}

/* Overrides sysctl_tcp_min_tso_segs: one segment per burst at low rates. */
static __always_inline __u32 bbr_min_tso_segs(struct sock *sk)
{
	return sk->sk_pacing_rate < (bbr_min_tso_rate >> 3) ? 1 : 2;
}

/*
 * Segments per TSO burst: about 1 ms of data (2^-sk_pacing_shift s) at the
 * pacing rate, as tcp_tso_autosize() but ignoring the driver's
 * sk_gso_max_size. The kernel divides by mss_cache, never 0 on a
 * connected socket; crates/cc guards with max(, 1), and so do we (BPF
 * would give 0 where the Rust gives bytes).
 */
static __always_inline __u32 bbr_tso_segs_goal(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 segs, bytes;

	bytes = min(sk->sk_pacing_rate >> sk->sk_pacing_shift,
		    (unsigned long)(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER));
	segs = max(bytes / max(tp->mss_cache, 1U), bbr_min_tso_segs(sk));

	return min(segs, 0x7FU);
}

/* Save the last good cwnd, to restore after recovery or PROBE_RTT. */
static __always_inline void bbr_save_cwnd(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->prev_ca_state < TCP_CA_Recovery && bbr->mode != BBR_PROBE_RTT)
		bbr->prior_cwnd = tp->snd_cwnd;	/* good enough */
	else	/* recovery or PROBE_RTT cut it: keep the larger */
		bbr->prior_cwnd = max(bbr->prior_cwnd, tp->snd_cwnd);
}

static __always_inline void bbr_cwnd_event(struct sock *sk, int event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (event == CA_EVENT_TX_START && tp->app_limited) {
		bbr->idle_restart = 1;
		bbr->ack_epoch_mstamp = tp->tcp_mstamp;
		bbr->ack_epoch_acked = 0;
		/* Restarting from idle and app-limited: no need for more
		 * speed than the estimate, so pace at it and spare the
		 * buffers. */
		if (bbr->mode == BBR_PROBE_BW)
			bbr_set_pacing_rate(sk, bbr_bw(sk), BBR_UNIT);
		else if (bbr->mode == BBR_PROBE_RTT)
			bbr_check_probe_rtt_done(sk);
	}
}
KR_CWND_EVENT(kr_bbr_cwnd_event, bbr_cwnd_event)

/*
 * bdp = ceil(bw * min_rtt * gain), packets. A small gain keeps the queue
 * small but lets RTT noise (delayed ACKs, ACK compression) drag the rate
 * down; the round-up avoids a feedback loop downwards. With no RTT sample
 * ever (no timestamps, everything retransmitted) cap at the initial cwnd.
 */
static __always_inline __u32 bbr_bdp(struct sock *sk, __u32 bw, int gain)
{
	struct bbr *bbr = inet_csk_ca(sk);
	__u32 bdp;
	__u64 w;

	if (bbr->min_rtt_us == ~0U)	/* no valid RTT sample yet */
		return TCP_INIT_CWND;

	w = (__u64)bw * bbr->min_rtt_us;
	bdp = (((w * gain) >> BBR_SCALE) + BW_UNIT - 1) / BW_UNIT;

	return bdp;
}

/*
 * Room for full-sized TSO bursts at both ends (one in the sender's qdisc,
 * one in its TSO engine, one in the receiver's GRO or delayed ACK), an even
 * cwnd against delayed ACKs, and 2 more in the probing phase so that small
 * BDPs still probe. At low rates a burst is one segment, so nothing bloats.
 */
static __always_inline __u32 bbr_quantization_budget(struct sock *sk,
						     __u32 cwnd)
{
	struct bbr *bbr = inet_csk_ca(sk);

	cwnd += 3 * bbr_tso_segs_goal(sk);
	cwnd = (cwnd + 1) & ~1U;
	if (bbr->mode == BBR_PROBE_BW && bbr->cycle_idx == 0)
		cwnd += 2;

	return cwnd;
}

/* The inflight target for a bw and a gain. */
static __always_inline __u32 bbr_inflight(struct sock *sk, __u32 bw,
					  int gain)
{
	__u32 inflight;

	inflight = bbr_bdp(sk, bw, gain);
	inflight = bbr_quantization_budget(sk, inflight);

	return inflight;
}

/*
 * Packets in the network when the next packet leaves: with earliest
 * departure time pacing, some of inflight still waits in the pacing layer.
 * in_network_at_edt = inflight_at_edt - (EDT - now) * bw, counting the EDT
 * skb itself when raising inflight (will it push inflight over the
 * target?), not when lowering it (will inflight sink too low before it?).
 */
static __always_inline __u32 bbr_packets_in_net_at_edt(struct sock *sk,
						       __u32 inflight_now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	__u64 now_ns, edt_ns, interval_us;
	__u32 interval_delivered, inflight_at_edt;

	now_ns = tp->tcp_clock_cache;
	edt_ns = max(tp->tcp_wstamp_ns, now_ns);
	interval_us = (edt_ns - now_ns) / NSEC_PER_USEC;
	interval_delivered = (__u64)bbr_bw(sk) * interval_us >> BW_SCALE;
	inflight_at_edt = inflight_now;
	if (bbr->pacing_gain > BBR_UNIT)		/* raising inflight */
		inflight_at_edt += bbr_tso_segs_goal(sk); /* the EDT skb */
	if (interval_delivered >= inflight_at_edt)
		return 0;
	return inflight_at_edt - interval_delivered;
}

/* The cwnd to add for ACK aggregation, at most 100 ms at bw. */
static __always_inline __u32 bbr_ack_aggregation_cwnd(struct sock *sk)
{
	__u32 max_aggr_cwnd, aggr_cwnd = 0;

	if (bbr_extra_acked_gain && bbr_full_bw_reached(sk)) {
		max_aggr_cwnd = ((__u64)bbr_bw(sk) * bbr_extra_acked_max_us)
				/ BW_UNIT;
		aggr_cwnd = (bbr_extra_acked_gain * bbr_extra_acked(sk))
			    >> BBR_SCALE;
		aggr_cwnd = min(aggr_cwnd, max_aggr_cwnd);
	}

	return aggr_cwnd;
}

/*
 * Packet conservation in the first round of recovery (P packets sent per P
 * ACKed); after it, slow start at most 2P per P (bbr_set_cwnd); when
 * recovery ends, or is undone, restore the cwnd from before it. Returns
 * whether conservation applies, and the cwnd in *new_cwnd.
 */
static __always_inline bool
bbr_set_cwnd_to_recover_or_restore(struct sock *sk,
				   const struct rate_sample *rs, __u32 acked,
				   __u32 *new_cwnd)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	struct inet_connection_sock *icsk = (void *)sk;
	__u8 prev_state = bbr->prev_ca_state;
	__u8 state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	__u32 cwnd = tp->snd_cwnd;

	/* An ACK of P packets releases at most 2P: first take off the
	 * packets lost, then bbr_set_cwnd() slow-starts toward the target. */
	if (rs->losses > 0)
		cwnd = max((__s32)(cwnd - rs->losses), 1);

	if (state == TCP_CA_Recovery && prev_state != TCP_CA_Recovery) {
		/* The first round of recovery: conserve packets. */
		bbr->packet_conservation = 1;
		bbr->next_rtt_delivered = tp->delivered; /* round starts now */
		/* Cut what the application, TSQ or TSO deferral left unused. */
		cwnd = tcp_packets_in_flight(tp) + acked;
	} else if (prev_state >= TCP_CA_Recovery && state < TCP_CA_Recovery) {
		/* Recovery is over: restore the cwnd saved before it. */
		cwnd = max(cwnd, bbr->prior_cwnd);
		bbr->packet_conservation = 0;
	}
	bbr->prev_ca_state = state;

	if (bbr->packet_conservation) {
		*new_cwnd = max(cwnd, tcp_packets_in_flight(tp) + acked);
		return true;
	}
	*new_cwnd = cwnd;
	return false;
}

/*
 * Slow-start toward the target cwnd (while bw grows, or after loss drew
 * cwnd below it), or, once the pipe is full, snap down to it.
 */
static __always_inline void bbr_set_cwnd(struct sock *sk,
					 const struct rate_sample *rs,
					 __u32 acked, __u32 bw, int gain)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd, target_cwnd = 0;

	if (!acked)
		goto done;	/* nothing newly ACKed: just apply the caps */

	if (bbr_set_cwnd_to_recover_or_restore(sk, rs, acked, &cwnd))
		goto done;

	target_cwnd = bbr_bdp(sk, bw, gain);
	/* More for the excess data that ACK aggregation delivers at once. */
	target_cwnd += bbr_ack_aggregation_cwnd(sk);
	target_cwnd = bbr_quantization_budget(sk, target_cwnd);

	if (bbr_full_bw_reached(sk))	/* cut cwnd only once the pipe is full */
		cwnd = min(cwnd + acked, target_cwnd);
	else if (cwnd < target_cwnd || tp->delivered < TCP_INIT_CWND)
		cwnd = cwnd + acked;
	cwnd = max(cwnd, bbr_cwnd_min_target);

done:
	tp->snd_cwnd = min(cwnd, tp->snd_cwnd_clamp);	/* the global cap */
	if (bbr->mode == BBR_PROBE_RTT)	/* drain the queue, re-measure */
		tp->snd_cwnd = min(tp->snd_cwnd, bbr_cwnd_min_target);
}

/* Does this gain-cycle phase end: its time is up, or its inflight reached? */
static __always_inline bool bbr_is_next_cycle_phase(struct sock *sk,
						    const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	bool is_full_length =
		tcp_stamp_us_delta(tp->delivered_mstamp, bbr->cycle_mstamp) >
		bbr->min_rtt_us;
	__u32 inflight, bw;

	/* Gain 1.0 paces at the estimate, to use the pipe without adding
	 * queue: the phase lasts one min_rtt. */
	if (bbr->pacing_gain == BBR_UNIT)
		return is_full_length;

	inflight = bbr_packets_in_net_at_edt(sk, rs->prior_in_flight);
	bw = bbr_max_bw(sk);

	/* Gain > 1.0 probes for bw by raising inflight to gain * BDP, which
	 * may take longer than min_rtt on a LAN; not after a loss, though,
	 * since a path with small buffers may not hold that much. */
	if (bbr->pacing_gain > BBR_UNIT)
		return is_full_length &&
			(rs->losses ||
			 inflight >= bbr_inflight(sk, bw, bbr->pacing_gain));

	/* Gain < 1.0 drains the queue the probe made: done when inflight
	 * is down to the BDP, since going on would leave the pipe empty. */
	return is_full_length ||
		inflight <= bbr_inflight(sk, bw, BBR_UNIT);
}

static __always_inline void bbr_advance_cycle_phase(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->cycle_idx = (bbr->cycle_idx + 1) & (CYCLE_LEN - 1);
	bbr->cycle_mstamp = tp->delivered_mstamp;
}

/* Gain cycling: converge to a fair share of the available bw. */
static __always_inline void bbr_update_cycle_phase(struct sock *sk,
						   const struct rate_sample *rs)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->mode == BBR_PROBE_BW && bbr_is_next_cycle_phase(sk, rs))
		bbr_advance_cycle_phase(sk);
}

static __always_inline void bbr_reset_startup_mode(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->mode = BBR_STARTUP;
}

/* PROBE_BW from a random phase, never the drain phase (index 1). */
static __always_inline void bbr_reset_probe_bw_mode(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->mode = BBR_PROBE_BW;
	bbr->cycle_idx = CYCLE_LEN - 1 - get_random_u32_below(bbr_cycle_rand);
	bbr_advance_cycle_phase(sk);	/* flip to the next phase */
}

static __always_inline void bbr_reset_mode(struct sock *sk)
{
	if (!bbr_full_bw_reached(sk))
		bbr_reset_startup_mode(sk);
	else
		bbr_reset_probe_bw_mode(sk);
}

/* Start a new long-term sampling interval. */
static __always_inline void bbr_reset_lt_bw_sampling_interval(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->lt_last_stamp = tp->delivered_mstamp / USEC_PER_MSEC;
	bbr->lt_last_delivered = tp->delivered;
	bbr->lt_last_lost = tp->lost;
	bbr->lt_rtt_cnt = 0;
}

/* Stop long-term sampling altogether. */
static __always_inline void bbr_reset_lt_bw_sampling(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->lt_bw = 0;
	bbr->lt_use_bw = 0;
	bbr->lt_is_sampling = false;
	bbr_reset_lt_bw_sampling_interval(sk);
}

/* A long-term interval is done: two consistent ones mean a policer. */
static __always_inline void bbr_lt_bw_interval_done(struct sock *sk, __u32 bw)
{
	struct bbr *bbr = inet_csk_ca(sk);
	__u32 diff;
	__s32 d;

	if (bbr->lt_bw) {	/* a rate from the previous interval? */
		/* The kernel's abs() of the u32 difference reads it as an
		 * s32; negating in u32 keeps INT_MIN defined. */
		d = bw - bbr->lt_bw;
		diff = d < 0 ? -(__u32)d : (__u32)d;
		if ((diff * BBR_UNIT <= bbr_lt_bw_ratio * bbr->lt_bw) ||
		    (bbr_rate_bytes_per_sec(sk, diff, BBR_UNIT) <=
		     bbr_lt_bw_diff)) {
			/* Consistent: we are policed; pace at the average. */
			bbr->lt_bw = (bw + bbr->lt_bw) >> 1;
			bbr->lt_use_bw = 1;
			bbr->pacing_gain = BBR_UNIT;	/* avoid drops */
			bbr->lt_rtt_cnt = 0;
			return;
		}
	}
	bbr->lt_bw = bw;
	bbr_reset_lt_bw_sampling_interval(sk);
}

/*
 * Token-bucket policers are common (Flach et al., "An Internet-Wide
 * Analysis of Traffic Policing", SIGCOMM 2016). Two consecutive intervals
 * with a consistent rate and heavy loss mean one; BBR then paces at their
 * average rate, lt_bw, to stop the losses.
 *
 * The rate sample comes as the two fields read (losses, is_app_limited):
 * set_state passes a sample made on the BPF stack, where a struct
 * rate_sample cannot live (its member offsets are relocated to the running
 * kernel's layout, not ours).
 */
static __always_inline void bbr_lt_bw_sampling(struct sock *sk, int losses,
					       bool is_app_limited)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	__u32 lost, delivered;
	__u64 bw;
	__u32 t;

	if (bbr->lt_use_bw) {	/* already pacing at lt_bw? */
		if (bbr->mode == BBR_PROBE_BW && bbr->round_start &&
		    ++bbr->lt_rtt_cnt >= bbr_lt_bw_max_rtts) {
			bbr_reset_lt_bw_sampling(sk);	/* stop using lt_bw */
			bbr_reset_probe_bw_mode(sk);	/* cycle gains again */
		}
		return;
	}

	/* Sample from the first loss on: by then the policer's tokens are
	 * spent, and the rate is the steady one it allows, not the burst. */
	if (!bbr->lt_is_sampling) {
		if (!losses)
			return;
		bbr_reset_lt_bw_sampling_interval(sk);
		bbr->lt_is_sampling = true;
	}

	/* Running out of data would underestimate: start over. */
	if (is_app_limited) {
		bbr_reset_lt_bw_sampling(sk);
		return;
	}

	if (bbr->round_start)
		bbr->lt_rtt_cnt++;	/* rounds in this interval */
	if (bbr->lt_rtt_cnt < bbr_lt_intvl_min_rtts)
		return;			/* the interval is too short */
	if (bbr->lt_rtt_cnt > 4 * bbr_lt_intvl_min_rtts) {
		bbr_reset_lt_bw_sampling(sk);	/* too long: start over */
		return;
	}

	/* End the interval on a loss, when the tokens are spent: ending it
	 * earlier would underestimate the policed rate. */
	if (!losses)
		return;

	lost = tp->lost - bbr->lt_last_lost;
	delivered = tp->delivered - bbr->lt_last_delivered;
	/* Lossy enough (lost/delivered >= 50/256)? If not, wait. */
	if (!delivered || (lost << BBR_SCALE) < bbr_lt_loss_thresh * delivered)
		return;

	/* The interval's average delivery rate. */
	t = tp->delivered_mstamp / USEC_PER_MSEC - bbr->lt_last_stamp;
	if ((__s32)t < 1)
		return;		/* under 1 ms: wait */
	/* Would t in us overflow? */
	if (t >= ~0U / USEC_PER_MSEC) {
		bbr_reset_lt_bw_sampling(sk);	/* too long: start over */
		return;
	}
	t *= USEC_PER_MSEC;
	bw = (__u64)delivered * BW_UNIT;
	bw /= t;
	bbr_lt_bw_interval_done(sk, bw);
}

/* Count rounds and sample the delivery rate. */
static __always_inline void bbr_update_bw(struct sock *sk,
					  const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	__u64 bw;

	bbr->round_start = 0;
	if (rs->delivered < 0 || rs->interval_us <= 0)
		return;		/* not a valid sample */

	/* Has the next round trip begun? */
	if (!before(rs->prior_delivered, bbr->next_rtt_delivered)) {
		bbr->next_rtt_delivered = tp->delivered;
		bbr->rtt_cnt++;
		bbr->round_start = 1;
		bbr->packet_conservation = 0;
	}

	bbr_lt_bw_sampling(sk, rs->losses, rs->is_app_limited);

	/*
	 * delivered / interval, a lower bound on the bottleneck bw; scaled
	 * first, since the ratio is well below 1 for most connections. The
	 * kernel's div64_long() divides signed, which BPF before v4 cannot;
	 * both sides are positive here (checked above), so unsigned division
	 * gives the same quotient.
	 */
	bw = (__u64)rs->delivered * BW_UNIT / (__u64)rs->interval_us;

	/*
	 * An app-limited sample shows the application's rate, not the
	 * path's; letting it drag the estimate down would slow the flow for
	 * nothing. Take it only when it is at least the current estimate: the
	 * flow keeps the last measured rate however long it is app-limited,
	 * and leaves that phase when the application writes faster than the
	 * network delivers.
	 */
	if (!rs->is_app_limited || bw >= bbr_max_bw(sk)) {
		/* Into the max filter. */
		minmax_running_max(&bbr->bw, bbr_bw_rtts, bbr->rtt_cnt, bw);
	}
}

/*
 * bbr->extra_acked[bbr->extra_acked_win_idx], read and written. The
 * verifier refuses loads and stores at a variable offset into the socket,
 * which the private area is part of, so the index chooses between two
 * constant offsets; the member and the value are the kernel's.
 */
static __always_inline __u16 bbr_extra_acked_cur(const struct bbr *bbr)
{
	return bbr->extra_acked_win_idx ? bbr->extra_acked[1] :
					  bbr->extra_acked[0];
}

static __always_inline void bbr_set_extra_acked_cur(struct bbr *bbr, __u16 v)
{
	if (bbr->extra_acked_win_idx)
		bbr->extra_acked[1] = v;
	else
		bbr->extra_acked[0] = v;
}

/*
 * ACK aggregation: the max excess of data ACKed over what bw predicts for
 * the epoch, over the last 5 to 10 rounds, capped by cwnd. cwnd grows by
 * it so that sending goes on through the silences between aggregated ACKs.
 */
static __always_inline void bbr_update_ack_aggregation(struct sock *sk,
						       const struct rate_sample *rs)
{
	__u32 epoch_us, expected_acked, extra_acked;
	struct bbr *bbr = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!bbr_extra_acked_gain || rs->acked_sacked <= 0 ||
	    rs->delivered < 0 || rs->interval_us <= 0)
		return;

	if (bbr->round_start) {
		bbr->extra_acked_win_rtts = min(0x1F,
						bbr->extra_acked_win_rtts + 1);
		if (bbr->extra_acked_win_rtts >= bbr_extra_acked_win_rtts) {
			bbr->extra_acked_win_rtts = 0;
			bbr->extra_acked_win_idx = bbr->extra_acked_win_idx ?
						   0 : 1;
			bbr_set_extra_acked_cur(bbr, 0);
		}
	}

	/* The packets bw predicts for the epoch so far. */
	epoch_us = tcp_stamp_us_delta(tp->delivered_mstamp,
				      bbr->ack_epoch_mstamp);
	expected_acked = ((__u64)bbr_bw(sk) * epoch_us) / BW_UNIT;

	/* Start a new epoch when ACKs come slower than predicted, or when
	 * very many came since it began (a stale epoch). */
	if (bbr->ack_epoch_acked <= expected_acked ||
	    (bbr->ack_epoch_acked + rs->acked_sacked >=
	     bbr_ack_epoch_acked_reset_thresh)) {
		bbr->ack_epoch_acked = 0;
		bbr->ack_epoch_mstamp = tp->delivered_mstamp;
		expected_acked = 0;
	}

	/* The excess ACKed beyond the prediction. */
	bbr->ack_epoch_acked = min(0xFFFFFU,
				   bbr->ack_epoch_acked + rs->acked_sacked);
	extra_acked = bbr->ack_epoch_acked - expected_acked;
	extra_acked = min(extra_acked, tp->snd_cwnd);
	if (extra_acked > bbr_extra_acked_cur(bbr))
		bbr_set_extra_acked_cur(bbr, extra_acked);
}

/*
 * Did STARTUP fill the pipe? Yes when bw has not grown by 25% in 3
 * non-app-limited rounds (HyStart has the same aim, from delay and ACK
 * spacing instead). Three rounds also let transient cross traffic or
 * radio noise pass.
 */
static __always_inline void bbr_check_full_bw_reached(struct sock *sk,
						      const struct rate_sample *rs)
{
	struct bbr *bbr = inet_csk_ca(sk);
	__u32 bw_thresh;

	if (bbr_full_bw_reached(sk) || !bbr->round_start || rs->is_app_limited)
		return;

	bw_thresh = (__u64)bbr->full_bw * bbr_full_bw_thresh >> BBR_SCALE;
	if (bbr_max_bw(sk) >= bw_thresh) {
		bbr->full_bw = bbr_max_bw(sk);
		bbr->full_bw_cnt = 0;
		return;
	}
	++bbr->full_bw_cnt;
	bbr->full_bw_reached = bbr->full_bw_cnt >= bbr_full_bw_cnt;
}

/* The pipe is probably full: drain the queue, then go to steady state. */
static __always_inline void bbr_check_drain(struct sock *sk,
					    const struct rate_sample *rs)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->mode == BBR_STARTUP && bbr_full_bw_reached(sk)) {
		bbr->mode = BBR_DRAIN;	/* drain the queue STARTUP made */
		tcp_sk(sk)->snd_ssthresh =
				bbr_inflight(sk, bbr_max_bw(sk), BBR_UNIT);
	}	/* and on: is inflight already small? */
	if (bbr->mode == BBR_DRAIN &&
	    bbr_packets_in_net_at_edt(sk, tcp_packets_in_flight(tcp_sk(sk))) <=
	    bbr_inflight(sk, bbr_max_bw(sk), BBR_UNIT))
		bbr_reset_probe_bw_mode(sk);	/* the queue is drained */
}

static __always_inline void bbr_check_probe_rtt_done(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (!(bbr->probe_rtt_done_stamp &&
	      after(tcp_jiffies32, bbr->probe_rtt_done_stamp)))
		return;

	bbr->min_rtt_stamp = tcp_jiffies32;	/* the next PROBE_RTT in 10 s */
	tp->snd_cwnd = max(tp->snd_cwnd, bbr->prior_cwnd);
	bbr_reset_mode(sk);
}

/*
 * PROBE_RTT: flows drain the bottleneck queue together from time to time
 * to measure the true min_rtt (the propagation delay), which keeps queues
 * and losses small and BBR flows fair to each other. When the 10 s min_rtt
 * filter expires, cwnd is capped at 4 packets for at least 200 ms and one
 * round (about 2% of the time), then the previous mode resumes: PROBE_BW
 * if the pipe was full, else STARTUP. Only flows busy for the whole 10 s
 * pay this: interactive ones pass through low-rate periods where the
 * min_rtt filter catches a low RTT on its own.
 */
static __always_inline void bbr_update_min_rtt(struct sock *sk,
					       const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	bool filter_expired;
	__u32 mark;

	/* The min RTT of the 10 s window. */
	filter_expired = after(tcp_jiffies32,
			       bbr->min_rtt_stamp + bbr_min_rtt_win_sec * HZ);
	if (rs->rtt_us >= 0 &&
	    (rs->rtt_us < bbr->min_rtt_us ||
	     (filter_expired && !rs->is_ack_delayed))) {
		bbr->min_rtt_us = rs->rtt_us;
		bbr->min_rtt_stamp = tcp_jiffies32;
	}

	if (bbr_probe_rtt_mode_ms > 0 && filter_expired &&
	    !bbr->idle_restart && bbr->mode != BBR_PROBE_RTT) {
		bbr->mode = BBR_PROBE_RTT;	/* dip, drain the queue */
		bbr_save_cwnd(sk);		/* to restore it after */
		bbr->probe_rtt_done_stamp = 0;
	}

	if (bbr->mode == BBR_PROBE_RTT) {
		/* The samples of this mode say nothing of the path's rate:
		 * mark them app-limited (the kernel's "?: 1"). */
		mark = tp->delivered + tcp_packets_in_flight(tp);
		tp->app_limited = mark ? mark : 1;
		/* Hold the minimum in flight for max(200 ms, one round). */
		if (!bbr->probe_rtt_done_stamp &&
		    tcp_packets_in_flight(tp) <= bbr_cwnd_min_target) {
			bbr->probe_rtt_done_stamp = tcp_jiffies32 +
				msecs_to_jiffies(bbr_probe_rtt_mode_ms);
			bbr->probe_rtt_round_done = 0;
			bbr->next_rtt_delivered = tp->delivered;
		} else if (bbr->probe_rtt_done_stamp) {
			if (bbr->round_start)
				bbr->probe_rtt_round_done = 1;
			if (bbr->probe_rtt_round_done)
				bbr_check_probe_rtt_done(sk);
		}
	}
	/* An idle restart ends with the first ACK of new data. */
	if (rs->delivered > 0)
		bbr->idle_restart = 0;
}

static __always_inline void bbr_update_gains(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	switch (bbr->mode) {
	case BBR_STARTUP:
		bbr->pacing_gain = bbr_high_gain;
		bbr->cwnd_gain = bbr_high_gain;
		break;
	case BBR_DRAIN:
		bbr->pacing_gain = bbr_drain_gain;	/* slow, to drain */
		bbr->cwnd_gain = bbr_high_gain;	/* keep cwnd */
		break;
	case BBR_PROBE_BW:
		bbr->pacing_gain = (bbr->lt_use_bw ?
				    BBR_UNIT :
				    bbr_pacing_gain[bbr->cycle_idx]);
		bbr->cwnd_gain = bbr_cwnd_gain;
		break;
	case BBR_PROBE_RTT:
		bbr->pacing_gain = BBR_UNIT;
		bbr->cwnd_gain = BBR_UNIT;
		break;
	}
}

static __always_inline void bbr_update_model(struct sock *sk,
					     const struct rate_sample *rs)
{
	bbr_update_bw(sk, rs);
	bbr_update_ack_aggregation(sk, rs);
	bbr_update_cycle_phase(sk, rs);
	bbr_check_full_bw_reached(sk, rs);
	bbr_check_drain(sk, rs);
	bbr_update_min_rtt(sk, rs);
	bbr_update_gains(sk);
}

static __always_inline void bbr_main(struct sock *sk, __u32 ack, int flag,
				     const struct rate_sample *rs)
{
	struct bbr *bbr = inet_csk_ca(sk);
	__u32 bw;

	bbr_update_model(sk, rs);

	bw = bbr_bw(sk);
	bbr_set_pacing_rate(sk, bw, bbr->pacing_gain);
	bbr_set_cwnd(sk, rs, rs->acked_sacked, bw, bbr->cwnd_gain);
}
KR_CONG_CONTROL(kr_bbr_main, bbr_main)

static __always_inline void bbr_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->prior_cwnd = 0;
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	bbr->rtt_cnt = 0;
	bbr->next_rtt_delivered = tp->delivered;
	bbr->prev_ca_state = TCP_CA_Open;
	bbr->packet_conservation = 0;

	bbr->probe_rtt_done_stamp = 0;
	bbr->probe_rtt_round_done = 0;
	bbr->min_rtt_us = tcp_min_rtt(tp);
	bbr->min_rtt_stamp = tcp_jiffies32;

	minmax_reset(&bbr->bw, bbr->rtt_cnt, 0);	/* max bw 0 */

	bbr->has_seen_rtt = 0;
	bbr_init_pacing_rate_from_rtt(sk);

	bbr->round_start = 0;
	bbr->idle_restart = 0;
	bbr->full_bw_reached = 0;
	bbr->full_bw = 0;
	bbr->full_bw_cnt = 0;
	bbr->cycle_mstamp = 0;
	bbr->cycle_idx = 0;
	bbr_reset_lt_bw_sampling(sk);
	bbr_reset_startup_mode(sk);

	bbr->ack_epoch_mstamp = tp->tcp_mstamp;
	bbr->ack_epoch_acked = 0;
	bbr->extra_acked_win_rtts = 0;
	bbr->extra_acked_win_idx = 0;
	bbr->extra_acked[0] = 0;
	bbr->extra_acked[1] = 0;

	/*
	 * Ask the TCP core to pace, unless fq or SO_MAX_PACING_RATE already
	 * did. The kernel writes cmpxchg(NONE -> NEEDED) because
	 * sk_pacing_status is also set from the fq qdisc without the
	 * socket lock; a BPF program cannot cmpxchg a socket field, and
	 * needs no atomicity here: init runs under the socket lock, and the
	 * only lockless writer (fq) sets FQ, which a racing NEEDED would at
	 * worst delay until fq's next packet sets it again.
	 */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
}
KR_INIT(kr_bbr_init, bbr_init)

/* Provision 3 * cwnd of send buffer: BBR may slow-start even in recovery. */
SEC("struct_ops")
__u32 BPF_PROG(kr_bbr_sndbuf_expand, struct sock *sk)
{
	return 3;
}

SEC("struct_ops")
__u32 BPF_PROG(kr_bbr_min_tso_segs, struct sock *sk)
{
	return bbr_min_tso_segs(sk);
}

/*
 * BBR need not undo, since it does not cut cwnd on loss as such; the
 * kernel keeps undo for now: a spurious slow-down restarts the full-pipe
 * and policer detection.
 */
static __always_inline __u32 bbr_undo_cwnd(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->full_bw = 0;	/* spurious slow-down: full pipe unknown */
	bbr->full_bw_cnt = 0;
	bbr_reset_lt_bw_sampling(sk);
	return tcp_sk(sk)->snd_cwnd;
}
KR_UNDO_CWND(kr_bbr_undo_cwnd, bbr_undo_cwnd)

/* Entering loss recovery: save cwnd for when it ends or is undone. */
static __always_inline __u32 bbr_ssthresh(struct sock *sk)
{
	bbr_save_cwnd(sk);
	return tcp_sk(sk)->snd_ssthresh;
}
KR_SSTHRESH(kr_bbr_ssthresh, bbr_ssthresh)

static __always_inline void bbr_set_state(struct sock *sk, __u8 new_state)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		/* The kernel's struct rate_sample rs = { .losses = 1 }. */
		bbr->prev_ca_state = TCP_CA_Loss;
		bbr->full_bw = 0;
		bbr->round_start = 1;	/* an RTO ends the round */
		bbr_lt_bw_sampling(sk, 1, false);
	}
}
KR_SET_STATE(kr_bbr_set_state, bbr_set_state)

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_bbr = {
	.init = (void *)kr_bbr_init,
	.cong_control = (void *)kr_bbr_main,
	.sndbuf_expand = (void *)kr_bbr_sndbuf_expand,
	.undo_cwnd = (void *)kr_bbr_undo_cwnd,
	.cwnd_event = (void *)kr_bbr_cwnd_event,
	.ssthresh = (void *)kr_bbr_ssthresh,
	.min_tso_segs = (void *)kr_bbr_min_tso_segs,
	.set_state = (void *)kr_bbr_set_state,
	.name = "kr_bbr",
};
