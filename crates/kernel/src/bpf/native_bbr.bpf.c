// SPDX-License-Identifier: GPL-2.0
/*
 * kn_bbr: the kernel's own BBR (net/ipv4/tcp_bbr.c, BBR v1, built in)
 * behind a struct_ops of ours, so that its hook calls can be traced; see
 * native_cubic.bpf.c for why a wrapper is the only way on a kernel without
 * kprobes or fentry. Traces of kn_bbr replay against the Rust bbr, with the
 * kernel's random draw of cycle_idx taken from the trace.
 */
#include "sock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

extern void bbr_init(struct sock *sk) __ksym;
extern void bbr_main(struct sock *sk, __u32 ack, int flag,
		     const struct rate_sample *rs) __ksym;
extern __u32 bbr_sndbuf_expand(struct sock *sk) __ksym;
extern __u32 bbr_undo_cwnd(struct sock *sk) __ksym;
extern void bbr_cwnd_event(struct sock *sk,
				enum tcp_ca_event event) __ksym;
extern __u32 bbr_ssthresh(struct sock *sk) __ksym;
extern __u32 bbr_min_tso_segs(struct sock *sk) __ksym;
extern void bbr_set_state(struct sock *sk, __u8 new_state) __ksym;

KR_INIT(kn_bbr_init, bbr_init)
KR_CONG_CONTROL(kn_bbr_main, bbr_main)
KR_UNDO_CWND(kn_bbr_undo_cwnd, bbr_undo_cwnd)
KR_CWND_EVENT(kn_bbr_cwnd_event, bbr_cwnd_event)
KR_SSTHRESH(kn_bbr_ssthresh, bbr_ssthresh)
KR_SET_STATE(kn_bbr_set_state, bbr_set_state)

/* Not hooks a trace records: plain calls through. */
SEC("struct_ops")
__u32 BPF_PROG(kn_bbr_sndbuf_expand, struct sock *sk)
{
	return bbr_sndbuf_expand(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(kn_bbr_min_tso_segs, struct sock *sk)
{
	return bbr_min_tso_segs(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops kn_bbr = {
	.init = (void *)kn_bbr_init,
	.cong_control = (void *)kn_bbr_main,
	.sndbuf_expand = (void *)kn_bbr_sndbuf_expand,
	.undo_cwnd = (void *)kn_bbr_undo_cwnd,
	.cwnd_event = (void *)kn_bbr_cwnd_event,
	.ssthresh = (void *)kn_bbr_ssthresh,
	.min_tso_segs = (void *)kn_bbr_min_tso_segs,
	.set_state = (void *)kn_bbr_set_state,
	.name = "kn_bbr",
};
