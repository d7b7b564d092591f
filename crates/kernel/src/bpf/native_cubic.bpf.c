// SPDX-License-Identifier: GPL-2.0
/*
 * kn_cubic: the kernel's own CUBIC (net/ipv4/tcp_cubic.c, built in) behind
 * a struct_ops of ours, so that its hook calls can be traced.
 *
 * This kernel has no kprobes and refuses fentry/fexit programs, so the only
 * way to see what the built-in cubic does on each call is to be the
 * congestion control that calls it: every hook here is the kernel's
 * cubictcp_* function, called as a kfunc, inside the entry points of
 * hooks.bpf.h that record the state before and after. The private area is
 * the socket's, so the kernel's struct bictcp lives there exactly as it
 * does under "cubic". Traces of kn_cubic replay against the Rust cubic.
 */
#include "sock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

extern void cubictcp_init(struct sock *sk) __ksym;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack,
				__u32 acked) __ksym;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk,
				enum tcp_ca_event event) __ksym;
extern void cubictcp_acked(struct sock *sk,
			   const struct ack_sample *sample) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

KR_INIT(kn_cubic_init, cubictcp_init)
KR_SSTHRESH(kn_cubic_recalc_ssthresh, cubictcp_recalc_ssthresh)
KR_CONG_AVOID(kn_cubic_cong_avoid, cubictcp_cong_avoid)
KR_SET_STATE(kn_cubic_state, cubictcp_state)
KR_CWND_EVENT(kn_cubic_cwnd_event, cubictcp_cwnd_event)
KR_PKTS_ACKED(kn_cubic_acked, cubictcp_acked)
KR_UNDO_CWND(kn_cubic_undo_cwnd, tcp_reno_undo_cwnd)

SEC(".struct_ops.link")
struct tcp_congestion_ops kn_cubic = {
	.init = (void *)kn_cubic_init,
	.ssthresh = (void *)kn_cubic_recalc_ssthresh,
	.cong_avoid = (void *)kn_cubic_cong_avoid,
	.set_state = (void *)kn_cubic_state,
	.undo_cwnd = (void *)kn_cubic_undo_cwnd,
	.cwnd_event = (void *)kn_cubic_cwnd_event,
	.pkts_acked = (void *)kn_cubic_acked,
	.name = "kn_cubic",
};
