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
 * kleinrock.bpf.h. Reno keeps no private state.
 *
 * Not yet: reno:hystart=hspp (HyStart++, RFC 9406), which crates/cc has.
 */
#include "kleinrock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

SEC("struct_ops")
__u32 BPF_PROG(kr_reno_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(kr_reno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(kr_reno_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

/* The loader overwrites .name before load (see crates/kernel/src/load.rs). */
SEC(".struct_ops.link")
struct tcp_congestion_ops kr_reno = {
	.ssthresh = (void *)kr_reno_ssthresh,
	.cong_avoid = (void *)kr_reno_cong_avoid,
	.undo_cwnd = (void *)kr_reno_undo_cwnd,
	.name = "kr_reno",
};
