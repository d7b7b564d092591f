// SPDX-License-Identifier: GPL-2.0
/*
 * kn_reno: the kernel's own Reno (net/ipv4/tcp_cong.c) behind a struct_ops
 * of ours, so that its hook calls can be traced; see native_cubic.bpf.c for
 * why a wrapper is the only way on a kernel without kprobes or fentry.
 * Traces of kn_reno replay against the Rust reno.
 */
#include "sock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

KR_SSTHRESH(kn_reno_ssthresh, tcp_reno_ssthresh)
KR_CONG_AVOID(kn_reno_cong_avoid, tcp_reno_cong_avoid)
KR_UNDO_CWND(kn_reno_undo_cwnd, tcp_reno_undo_cwnd)

SEC(".struct_ops.link")
struct tcp_congestion_ops kn_reno = {
	.ssthresh = (void *)kn_reno_ssthresh,
	.cong_avoid = (void *)kn_reno_cong_avoid,
	.undo_cwnd = (void *)kn_reno_undo_cwnd,
	.name = "kn_reno",
};
