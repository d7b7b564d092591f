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
 * SEC("struct_ops") program that the kernel calls. Keeping the entry points
 * in one place is what lets trace mode (trace.bpf.h) record every call of
 * every port, and the thin wrappers of the kernel's own algorithms, with
 * the same code.
 *
 * Hooks a trace does not record (min_tso_segs, sndbuf_expand) are written
 * with SEC("struct_ops") directly.
 */
#ifndef __KLEINROCK_HOOKS_BPF_H__
#define __KLEINROCK_HOOKS_BPF_H__

#define KR_INIT(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk)					\
{									\
	fn(sk);								\
}

#define KR_RELEASE(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk)					\
{									\
	fn(sk);								\
}

#define KR_SSTHRESH(prog, fn)						\
SEC("struct_ops")							\
__u32 BPF_PROG(prog, struct sock *sk)					\
{									\
	return fn(sk);							\
}

#define KR_UNDO_CWND(prog, fn)						\
SEC("struct_ops")							\
__u32 BPF_PROG(prog, struct sock *sk)					\
{									\
	return fn(sk);							\
}

#define KR_CONG_AVOID(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u32 ack, __u32 acked)		\
{									\
	fn(sk, ack, acked);						\
}

#define KR_SET_STATE(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u8 new_state)			\
{									\
	fn(sk, new_state);						\
}

#define KR_CWND_EVENT(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, int event)				\
{									\
	fn(sk, event);							\
}

#define KR_IN_ACK_EVENT(prog, fn)					\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u32 flags)			\
{									\
	fn(sk, flags);							\
}

#define KR_PKTS_ACKED(prog, fn)						\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, const struct ack_sample *sample)	\
{									\
	fn(sk, sample);							\
}

#define KR_CONG_CONTROL(prog, fn)					\
SEC("struct_ops")							\
void BPF_PROG(prog, struct sock *sk, __u32 ack, int flag,		\
	      const struct rate_sample *rs)				\
{									\
	fn(sk, ack, flag, rs);						\
}

#endif /* __KLEINROCK_HOOKS_BPF_H__ */
