// SPDX-License-Identifier: GPL-2.0
/*
 * kr_reno: Linux's built-in "reno" as a BPF struct_ops program.
 *
 * Jacobson's slow start and congestion avoidance (SIGCOMM '88, RFC 5681):
 * cwnd doubles per round trip below ssthresh, grows by one segment per
 * round trip above it, and halves on loss; loss recovery itself (NewReno,
 * SACK, RACK) is the TCP core's. This is net/ipv4/tcp_cong.c's
 * tcp_reno_cong_avoid / tcp_reno_ssthresh / tcp_reno_undo_cwnd, ported
 * line by line from crates/cc/src/reno.rs through the shared helpers of
 * kleinrock.bpf.h.
 *
 * Kleinrock adds one option the kernel lacks: reno:hystart=hspp replaces
 * the initial slow start with HyStart++ (RFC 9406), whose state is reno's
 * only private data.
 */
#include "kleinrock.bpf.h"
#include "hystart_pp.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Reno's private state: HyStart++'s, used with hystart=hspp. */
struct reno {
	struct hystart_pp hspp;
};
KR_CA_TYPE(reno);

/* Set by the loader before load: SS_EXIT_HSPP for reno:hystart=hspp. */
const volatile __u32 hystart = SS_EXIT_OFF;

static __always_inline void reno_init(struct sock *sk)
{
	struct reno *ca = inet_csk_ca(sk);

	hspp_reset(&ca->hspp);
}
KR_INIT(kr_reno_init, reno_init)

static __always_inline __u32 reno_ssthresh(struct sock *sk)
{
	struct reno *ca = inet_csk_ca(sk);

	hspp_on_loss(&ca->hspp);
	return tcp_reno_ssthresh(sk);
}
KR_SSTHRESH(kr_reno_ssthresh, reno_ssthresh)

static __always_inline void reno_cong_avoid(struct sock *sk, __u32 ack,
					    __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct reno *ca = inet_csk_ca(sk);

	if (hystart != SS_EXIT_HSPP) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!tcp_is_cwnd_limited(sk))
		return;
	if (tcp_in_slow_start(tp)) {
		acked = hspp_slow_start(sk, &ca->hspp, acked);
		if (!acked)
			return;
	}
	tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}
KR_CONG_AVOID(kr_reno_cong_avoid, reno_cong_avoid)

static __always_inline void reno_acked(struct sock *sk,
				       const struct ack_sample *sample)
{
	struct reno *ca = inet_csk_ca(sk);

	if (hystart == SS_EXIT_HSPP)
		hspp_on_ack(sk, &ca->hspp, sample->rtt_us);
}
KR_PKTS_ACKED(kr_reno_acked, reno_acked)

KR_UNDO_CWND(kr_reno_undo_cwnd, tcp_reno_undo_cwnd)

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_reno = {
	.init = (void *)kr_reno_init,
	.ssthresh = (void *)kr_reno_ssthresh,
	.cong_avoid = (void *)kr_reno_cong_avoid,
	.pkts_acked = (void *)kr_reno_acked,
	.undo_cwnd = (void *)kr_reno_undo_cwnd,
	.name = "kr_reno",
};
