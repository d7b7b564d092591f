// SPDX-License-Identifier: GPL-2.0
/*
 * kr_htcp: H-TCP as a BPF struct_ops program.
 *
 * Leith and Shorten, "H-TCP: TCP for high-speed and long-distance
 * networks", PFLDnet 2004. This is Linux 6.18 net/ipv4/tcp_htcp.c, ported
 * line by line from the Rust reference crates/cc/src/htcp.rs (itself a
 * bit-exact port) so that a trace of these programs replays against the
 * Rust bit for bit.
 *
 * For the first second after a congestion event H-TCP grows like Reno;
 * after that its increase per RTT, alpha, grows with the time D since the
 * event (1 + 10 D + (D/2)^2, D in seconds past the first), scaled by the
 * RTT so that flows with different RTTs share fairly. The decrease factor
 * beta is min RTT / max RTT within [0.5, 0.8], unless the achieved
 * throughput changed by more than a fifth since the last event, when it is
 * 0.5 so that new flows find room; alpha is then 2 (1 - beta) times the time
 * factor, which keeps H-TCP Reno-fair at low speeds. Times are in jiffies,
 * fractions in 1/128.
 *
 * Where this differs in form from the kernel file: HZ is the kernel's int,
 * here an unsigned long read from the kernel's config, so the arithmetic
 * takes it as a __u32 (hz()) to keep the kernel's 32-bit products and
 * quotients.
 */
#include "kleinrock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* alpha of 1.0, in 1/128. */
#define ALPHA_BASE	(1 << 7)
/* beta's bounds in 1/128: Reno's 0.5, and 0.8. */
#define BETA_MIN	(1 << 6)
#define BETA_MAX	102

/* Set by the loader before load; these are the kernel module's defaults. */
const volatile __u32 use_rtt_scaling = 1;
const volatile __u32 use_bandwidth_switch = 1;

/* struct htcp, member for member as in tcp_htcp.c: 60 of the 104 bytes. */
struct htcp {
	__u32 alpha;		/* additive increase per RTT, 1/128 */
	__u8 beta;		/* multiplicative decrease, 1/128 */
	__u8 modeswitch;	/* adaptive beta after a first event */
	__u16 pkts_acked;	/* segments the last ACK delivered */
	__u32 packetcount;	/* segments since lasttime */
	__u32 minRTT;		/* jiffies */
	__u32 maxRTT;		/* jiffies */
	__u32 last_cong;	/* jiffies at the last congestion event */
	__u32 undo_last_cong;	/* what undo restores */
	__u32 undo_maxRTT;
	__u32 undo_old_maxB;
	__u32 minB;		/* achieved throughput, segments per second */
	__u32 maxB;
	__u32 old_maxB;		/* maxB at the last congestion event */
	__u32 Bi;		/* its running average */
	__u32 lasttime;		/* jiffies when packetcount began */
};
KR_CA_TYPE(htcp);

_Static_assert(sizeof(struct htcp) <= 104, "icsk_ca_priv is 104 bytes");

/* The kernel's HZ is an int constant: its arithmetic here stays 32-bit. */
static __always_inline __u32 hz(void)
{
	return HZ;
}

static __always_inline __u32 htcp_cong_time(const struct htcp *ca)
{
	return tcp_jiffies32 - ca->last_cong;
}

static __always_inline __u32 htcp_ccount(const struct htcp *ca)
{
	return htcp_cong_time(ca) / ca->minRTT;
}

/* htcp_reset(): a congestion event; remember what undo restores. */
static __always_inline void htcp_reset(struct htcp *ca)
{
	ca->undo_last_cong = ca->last_cong;
	ca->undo_maxRTT = ca->maxRTT;
	ca->undo_old_maxB = ca->old_maxB;
	ca->last_cong = tcp_jiffies32;
}

static __always_inline __u32 htcp_cwnd_undo(struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);

	if (ca->undo_last_cong) {
		ca->last_cong = ca->undo_last_cong;
		ca->maxRTT = ca->undo_maxRTT;
		ca->old_maxB = ca->undo_old_maxB;
		ca->undo_last_cong = 0;
	}
	return tcp_reno_undo_cwnd(sk);
}
KR_UNDO_CWND(kr_htcp_cwnd_undo, htcp_cwnd_undo)

/* measure_rtt(): min and (while Open) max RTT, in jiffies. */
static __always_inline void measure_rtt(struct sock *sk, __u32 srtt)
{
	struct htcp *ca = inet_csk_ca(sk);

	if (ca->minRTT > srtt || !ca->minRTT)
		ca->minRTT = srtt;
	if (icsk_ca_state(sk) == TCP_CA_Open) {
		if (ca->maxRTT < ca->minRTT)
			ca->maxRTT = ca->minRTT;
		/* A jump of more than 20 ms is a route change, not a queue. */
		if (ca->maxRTT < srtt && srtt <= ca->maxRTT + msecs_to_jiffies(20))
			ca->maxRTT = srtt;
	}
}

/*
 * measure_achieved_throughput(): the pkts_acked hook. RTT samples, and
 * about once per window of segments the achieved rate Bi, whose maximum
 * the bandwidth switch compares across congestion events.
 */
static __always_inline void measure_achieved_throughput(
	struct sock *sk, const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);
	__u8 state = icsk_ca_state(sk);
	__u32 now = tcp_jiffies32;
	__u32 alpha_pkts, cur_Bi;

	if (state == TCP_CA_Open)
		ca->pkts_acked = sample->pkts_acked;
	if (sample->rtt_us > 0)
		measure_rtt(sk, usecs_to_jiffies(sample->rtt_us));
	if (!use_bandwidth_switch)
		return;
	if (state != TCP_CA_Open && state != TCP_CA_Disorder) {
		ca->packetcount = 0;
		ca->lasttime = now;
		return;
	}
	ca->packetcount += sample->pkts_acked;
	alpha_pkts = ca->alpha >> 7 ?: 1;
	if (ca->packetcount >= tp->snd_cwnd - alpha_pkts &&
	    now - ca->lasttime >= ca->minRTT && ca->minRTT > 0) {
		cur_Bi = ca->packetcount * hz() / (now - ca->lasttime);
		if (htcp_ccount(ca) <= 3) {
			/* Just after a backoff: start the estimate afresh. */
			ca->minB = ca->maxB = ca->Bi = cur_Bi;
		} else {
			ca->Bi = (3 * ca->Bi + cur_Bi) / 4;
			if (ca->Bi > ca->maxB)
				ca->maxB = ca->Bi;
			if (ca->minB > ca->maxB)
				ca->minB = ca->maxB;
		}
		ca->packetcount = 0;
		ca->lasttime = now;
	}
}
KR_PKTS_ACKED(kr_htcp_pkts_acked, measure_achieved_throughput)

static __always_inline void htcp_beta_update(struct htcp *ca, __u32 minRTT,
					     __u32 maxRTT)
{
	__u32 maxB, old_maxB;

	if (use_bandwidth_switch) {
		maxB = ca->maxB;
		old_maxB = ca->old_maxB;
		ca->old_maxB = ca->maxB;
		/* More than a fifth up or down since the last event. */
		if (!between(5 * maxB, 4 * old_maxB, 6 * old_maxB)) {
			ca->beta = BETA_MIN;
			ca->modeswitch = 0;
			return;
		}
	}
	if (ca->modeswitch && minRTT > msecs_to_jiffies(10) && maxRTT) {
		/* Stored into the u8 before clamping, as the kernel does. */
		ca->beta = (minRTT << 7) / maxRTT;
		if (ca->beta < BETA_MIN)
			ca->beta = BETA_MIN;
		else if (ca->beta > BETA_MAX)
			ca->beta = BETA_MAX;
	} else {
		ca->beta = BETA_MIN;
		ca->modeswitch = 1;
	}
}

static __always_inline void htcp_alpha_update(struct htcp *ca)
{
	__u32 minRTT = ca->minRTT;
	__u32 factor = 1;
	__u32 diff = htcp_cong_time(ca);
	__u32 scale;

	if (diff > hz()) {
		diff -= hz();
		factor = 1 + (10 * diff + ((diff / 2) * (diff / 2) / hz())) / hz();
	}
	if (use_rtt_scaling && minRTT) {
		scale = (hz() << 3) / (10 * minRTT);
		/* The ratio kept within [0.5, 10], << 3. */
		scale = min(max(scale, 1U << 2), 10U << 3);
		factor = (factor << 3) / scale;
		if (!factor)
			factor = 1;
	}
	ca->alpha = 2 * factor * ((1 << 7) - ca->beta);
	if (!ca->alpha)
		ca->alpha = ALPHA_BASE;
}

/* After each congestion event. */
static __always_inline void htcp_param_update(struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);
	__u32 minRTT = ca->minRTT;
	__u32 maxRTT = ca->maxRTT;

	htcp_beta_update(ca, minRTT, maxRTT);
	htcp_alpha_update(ca);
	/* A slowly fading memory of maxRTT, for routing changes. */
	if (minRTT > 0 && maxRTT > minRTT)
		ca->maxRTT = minRTT + ((maxRTT - minRTT) * 95) / 100;
}

static __always_inline __u32 htcp_recalc_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct htcp *ca = inet_csk_ca(sk);

	htcp_param_update(sk);
	return max((tp->snd_cwnd * ca->beta) >> 7, 2U);
}
KR_SSTHRESH(kr_htcp_recalc_ssthresh, htcp_recalc_ssthresh)

/* cwnd += alpha / cwnd per ACK, alpha in 1/128. */
static __always_inline void htcp_cong_avoid(struct sock *sk, __u32 ack,
					    __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}
	if ((tp->snd_cwnd_cnt * ca->alpha) >> 7 >= tp->snd_cwnd) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
		htcp_alpha_update(ca);
	} else {
		tp->snd_cwnd_cnt += ca->pkts_acked;
	}
	ca->pkts_acked = 1;
}
KR_CONG_AVOID(kr_htcp_cong_avoid, htcp_cong_avoid)

static __always_inline void htcp_init(struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->alpha = ALPHA_BASE;
	ca->beta = BETA_MIN;
	ca->pkts_acked = 1;
	ca->last_cong = tcp_jiffies32;
}
KR_INIT(kr_htcp_init, htcp_init)

static __always_inline void htcp_state(struct sock *sk, __u8 new_state)
{
	struct htcp *ca = inet_csk_ca(sk);

	switch (new_state) {
	case TCP_CA_Open:
		if (ca->undo_last_cong) {
			ca->last_cong = tcp_jiffies32;
			ca->undo_last_cong = 0;
		}
		break;
	case TCP_CA_CWR:
	case TCP_CA_Recovery:
	case TCP_CA_Loss:
		htcp_reset(ca);
		break;
	}
}
KR_SET_STATE(kr_htcp_state, htcp_state)

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_htcp = {
	.init = (void *)kr_htcp_init,
	.ssthresh = (void *)kr_htcp_recalc_ssthresh,
	.cong_avoid = (void *)kr_htcp_cong_avoid,
	.set_state = (void *)kr_htcp_state,
	.undo_cwnd = (void *)kr_htcp_cwnd_undo,
	.pkts_acked = (void *)kr_htcp_pkts_acked,
	.name = "kr_htcp",
};
