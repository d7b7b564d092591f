// SPDX-License-Identifier: GPL-2.0
/*
 * kr_dctcp: DCTCP as a BPF struct_ops program.
 *
 * Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010; RFC 8257. This
 * is Linux 6.18 net/ipv4/tcp_dctcp.c and tcp_dctcp.h, ported line by line
 * from the Rust reference crates/cc/src/dctcp.rs (itself a bit-exact port)
 * so that a trace of these programs replays against the Rust bit for bit.
 *
 * Switches mark CE on every packet that finds the queue above a threshold.
 * The receiver echoes each packet's CE state exactly (the CE state machine
 * below, which both ends run), and once per window of data the sender folds
 * the fraction F of CE-echoed deliveries into
 *
 *	alpha = (1 - g) * alpha + g * F		(g = 1/2^shift_g, alpha in 1/1024)
 *
 * and on the window's first ECE sets ssthresh = cwnd * (1 - alpha / 2):
 * light marking costs little, full marking halves like Reno. Growth is
 * Reno's; a real loss halves.
 *
 * Where this differs from the kernel file:
 * - Without negotiated ECN the kernel swaps the socket's ops to its private
 *   "dctcp-reno" and clears ECT. A program cannot write icsk_ca_ops, so
 *   init asks the kernel to switch the socket to its built-in "reno" with
 *   bpf_setsockopt(TCP_CONGESTION), the way the kernel's selftest bpf_dctcp
 *   falls back; the core then clears ECT as it does for any algorithm
 *   without TCP_CONG_NEEDS_ECN. Same arithmetic, another name. Should the
 *   kernel refuse (it allows one such switch per setsockopt, so an init run
 *   from another program's bpf_setsockopt gets EBUSY), the port keeps the
 *   Rust's fallback flag and behaves as Reno itself, but ECT stays set.
 * - The delayed ACK that must go out before a CE change is sent with the
 *   bpf_tcp_send_ack() helper instead of __tcp_send_ack(); the Rust
 *   reference leaves sending to the receiver's TCP and models the request.
 * - ECN means the RFC 3168 bit, as in the Rust; the kernel's
 *   tcp_ecn_mode_any() also accepts AccECN (net.ipv4.tcp_ecn=3).
 * - PLB (net.ipv4.tcp_plb_enabled, off by default) is not ported: its
 *   state and rehash functions are not reachable from BPF.
 */
#include "kleinrock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* alpha is a fraction in 1/1024. */
#define DCTCP_MAX_ALPHA		1024U

/* Set by the loader before load; these are the kernel module's defaults. */
const volatile __u32 shift_g = 4;		/* g = 1/16 */
const volatile __u32 alpha_on_init = DCTCP_MAX_ALPHA;

/* The algorithm a connection without ECN falls back to. */
static const char fallback_cc[] = "reno";

/*
 * struct dctcp, member for member as in tcp_dctcp.c (without PLB's state),
 * then Kleinrock's fallback flag: 32 of the 104 bytes.
 */
struct dctcp {
	__u32 old_delivered;	/* tp->delivered when the window began */
	__u32 old_delivered_ce;	/* tp->delivered_ce when the window began */
	__u32 prior_rcv_nxt;	/* receiver: rcv_nxt after the last data */
	__u32 dctcp_alpha;	/* marked fraction, 1/1024 */
	__u32 next_seq;		/* the window ends when snd_una reaches it */
	__u32 ce_state;		/* receiver: was the last data CE (0, 1)? */
	__u32 loss_cwnd;	/* cwnd before the last reduction */
	__u32 fallback;		/* no ECN and no switch to reno: be Reno */
};
KR_CA_TYPE(dctcp);

_Static_assert(sizeof(struct dctcp) <= 104, "icsk_ca_priv is 104 bytes");

/* dctcp_reset(): start a new observation window. */
static __always_inline void dctcp_reset(const struct tcp_sock *tp,
					struct dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

/*
 * dctcp_update_alpha(): once per window of data, fold the fraction of
 * CE-echoed deliveries into alpha.
 */
static __always_inline void dctcp_update_alpha(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	__u32 delivered, delivered_ce, alpha;

	if (before(tp->snd_una, ca->next_seq))
		return;
	delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
	alpha = ca->dctcp_alpha;
	alpha -= min_not_zero(alpha, alpha >> shift_g);
	if (delivered_ce) {
		delivered = tp->delivered - ca->old_delivered;
		/* 32 bits as in the kernel: with shift_g = 1 this overflows
		 * after 8 M marked packets in one window. */
		delivered_ce <<= (10 - shift_g);
		delivered_ce /= max(1U, delivered);
		alpha = min(alpha + delivered_ce, DCTCP_MAX_ALPHA);
	}
	ca->dctcp_alpha = alpha;
	dctcp_reset(tp, ca);
}

/* dctcp_react_to_loss(): a real loss halves, whatever alpha says. */
static __always_inline void dctcp_react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max(tp->snd_cwnd >> 1, 2U);
}

/* dctcp_ece_ack_cwr(): ECE on outgoing ACKs follows the CE state. */
static __always_inline void dctcp_ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ce_state == 1)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

/*
 * dctcp_ece_ack_update(): the receiver's CE state machine, run for every
 * ECN-capable data packet after rcv_nxt has taken it in. When the CE state
 * flips, a delayed ACK covering packets of the old state goes out first
 * with the old ECE, and the current packet is ACKed at once, so every byte
 * is echoed with the mark it carried.
 */
static __always_inline void dctcp_ece_ack_update(struct sock *sk, int evt,
						 __u32 *prior_rcv_nxt,
						 __u32 *ce_state)
{
	struct inet_connection_sock *icsk = (void *)sk;
	__u32 new_ce_state = evt == CA_EVENT_ECN_IS_CE ? 1 : 0;

	if (*ce_state != new_ce_state) {
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcp_ece_ack_cwr(sk, *ce_state);
			bpf_tcp_send_ack(sk, *prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	*prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
	*ce_state = new_ce_state;
	dctcp_ece_ack_cwr(sk, new_ce_state);
}

static __always_inline void dctcp_init(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	if (!(tp->ecn_flags & TCP_ECN_OK)) {
		/* On success the socket runs reno from here on, and this
		 * private area is reno's (zeroed): leave it alone. */
		if (!bpf_setsockopt(sk, SOL_TCP, TCP_CONGESTION,
				    (void *)fallback_cc, sizeof(fallback_cc)))
			return;
		ca->fallback = 1;
		return;
	}
	ca->fallback = 0;
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->dctcp_alpha = min(alpha_on_init, DCTCP_MAX_ALPHA);
	ca->loss_cwnd = 0;
	ca->ce_state = 0;
	dctcp_reset(tp, ca);
}
KR_INIT(kr_dctcp_init, dctcp_init)

static __always_inline __u32 dctcp_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd;

	if (ca->fallback)
		return tcp_reno_ssthresh(sk);
	ca->loss_cwnd = cwnd;
	return max(cwnd - ((cwnd * ca->dctcp_alpha) >> 11), 2U);
}
KR_SSTHRESH(kr_dctcp_ssthresh, dctcp_ssthresh)

KR_CONG_AVOID(kr_dctcp_cong_avoid, tcp_reno_cong_avoid)

static __always_inline void dctcp_in_ack_event(struct sock *sk, __u32 flags)
{
	struct dctcp *ca = inet_csk_ca(sk);

	if (!ca->fallback)
		dctcp_update_alpha(sk);
}
KR_IN_ACK_EVENT(kr_dctcp_in_ack_event, dctcp_in_ack_event)

static __always_inline void dctcp_state(struct sock *sk, __u8 new_state)
{
	struct dctcp *ca = inet_csk_ca(sk);

	/* An RTO is handled in cwnd_event, so one loss reacts once. */
	if (!ca->fallback && new_state == TCP_CA_Recovery &&
	    new_state != icsk_ca_state(sk))
		dctcp_react_to_loss(sk);
}
KR_SET_STATE(kr_dctcp_state, dctcp_state)

static __always_inline void dctcp_cwnd_event(struct sock *sk, int ev)
{
	struct dctcp *ca = inet_csk_ca(sk);

	if (ca->fallback)
		return;
	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		dctcp_ece_ack_update(sk, ev, &ca->prior_rcv_nxt,
				     &ca->ce_state);
		break;
	case CA_EVENT_LOSS:
		dctcp_react_to_loss(sk);
		break;
	default:
		break;
	}
}
KR_CWND_EVENT(kr_dctcp_cwnd_event, dctcp_cwnd_event)

static __always_inline __u32 dctcp_cwnd_undo(struct sock *sk)
{
	const struct dctcp *ca = inet_csk_ca(sk);

	if (ca->fallback)
		return tcp_reno_undo_cwnd(sk);
	return max(tcp_sk(sk)->snd_cwnd, ca->loss_cwnd);
}
KR_UNDO_CWND(kr_dctcp_cwnd_undo, dctcp_cwnd_undo)

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_dctcp = {
	.init = (void *)kr_dctcp_init,
	.in_ack_event = (void *)kr_dctcp_in_ack_event,
	.cwnd_event = (void *)kr_dctcp_cwnd_event,
	.ssthresh = (void *)kr_dctcp_ssthresh,
	.cong_avoid = (void *)kr_dctcp_cong_avoid,
	.undo_cwnd = (void *)kr_dctcp_cwnd_undo,
	.set_state = (void *)kr_dctcp_state,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "kr_dctcp",
};
