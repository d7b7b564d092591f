/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The struct_ops entry points of every Kleinrock port, declared through one
 * macro per tcp_congestion_ops hook:
 *
 *	static __always_inline void cubic_cong_avoid(struct sock *sk,
 *						     __u32 ack, __u32 acked);
 *	KR_CONG_AVOID(kr_cubic_cong_avoid, cubic_cong_avoid)
 *
 * An algorithm writes each hook as a plain function; the macro makes the
 * SEC("struct_ops") program that the kernel calls, which in trace mode
 * (trace.bpf.h) records the call's arguments and the state around it.
 * Keeping the entry points in one place is what lets every port, and the
 * thin wrappers of the kernel's own algorithms, be traced by the same code.
 *
 * Hooks a trace does not record (min_tso_segs, sndbuf_expand) are written
 * with SEC("struct_ops") directly.
 */
#ifndef __KLEINROCK_HOOKS_BPF_H__
#define __KLEINROCK_HOOKS_BPF_H__

#include "trace.bpf.h"

#define KR_INIT(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk)					\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_INIT);	\
									\
	fn(sk);								\
	kr_trace_end(sk, r, 0);						\
}

#define KR_RELEASE(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk)					\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_RELEASE);	\
									\
	fn(sk);								\
	kr_trace_end(sk, r, 0);						\
}

#define KR_SSTHRESH(prog, fn)						\
SEC("struct_ops")							\
__u32 BPF_PROG(prog, struct sock *sk)					\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_SSTHRESH);	\
	__u32 ret;							\
									\
	ret = fn(sk);							\
	kr_trace_end(sk, r, ret);					\
	return ret;							\
}

#define KR_UNDO_CWND(prog, fn)						\
SEC("struct_ops")							\
__u32 BPF_PROG(prog, struct sock *sk)					\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_UNDO_CWND);	\
	__u32 ret;							\
									\
	ret = fn(sk);							\
	kr_trace_end(sk, r, ret);					\
	return ret;							\
}

#define KR_CONG_AVOID(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u32 ack, __u32 acked)		\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_CONG_AVOID); \
									\
	if (r) {							\
		r->arg_ack = ack;					\
		r->arg_acked = acked;					\
	}								\
	fn(sk, ack, acked);						\
	kr_trace_end(sk, r, 0);						\
}

#define KR_SET_STATE(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u8 new_state)			\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_SET_STATE);	\
									\
	if (r) {							\
		r->arg_u = new_state;					\
	}								\
	fn(sk, new_state);						\
	kr_trace_end(sk, r, 0);						\
}

#define KR_CWND_EVENT(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, int event)				\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_CWND_EVENT); \
									\
	if (r) {							\
		r->arg_u = event;					\
	}								\
	fn(sk, event);							\
	kr_trace_end(sk, r, 0);						\
}

#define KR_IN_ACK_EVENT(prog, fn)					\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u32 flags)			\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_IN_ACK_EVENT); \
									\
	if (r) {							\
		r->arg_u = flags;					\
	}								\
	fn(sk, flags);							\
	kr_trace_end(sk, r, 0);						\
}

#define KR_PKTS_ACKED(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, const struct ack_sample *sample)	\
{									\
	struct kr_trace_rec *r = kr_trace_begin(sk, KR_HOOK_PKTS_ACKED); \
									\
	if (r) {							\
		r->as_pkts_acked = sample->pkts_acked;			\
		r->as_rtt_us = sample->rtt_us;				\
		r->as_in_flight = sample->in_flight;			\
	}								\
	fn(sk, sample);							\
	kr_trace_end(sk, r, 0);						\
}

#define KR_CONG_CONTROL(prog, fn)					\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u32 ack, int flag,		\
	      const struct rate_sample *rs)				\
{									\
	struct kr_trace_rec *r =					\
		kr_trace_begin(sk, KR_HOOK_CONG_CONTROL);		\
									\
	if (r) {							\
		r->arg_ack = ack;					\
		r->arg_flag = flag;					\
		kr_trace_rate_sample(r, rs);				\
	}								\
	fn(sk, ack, flag, rs);						\
	kr_trace_end(sk, r, 0);						\
}

#endif /* __KLEINROCK_HOOKS_BPF_H__ */
