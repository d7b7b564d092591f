/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every struct_ops program of Kleinrock's shares, ports and wrappers
 * of the kernel's own algorithms alike: the kernel's accessors (tcp_sk,
 * inet_csk_ca, tcp_jiffies32, HZ, after/before), the hook entry points
 * with trace mode (hooks.bpf.h), and nothing of any algorithm.
 */
#ifndef __KLEINROCK_SOCK_BPF_H__
#define __KLEINROCK_SOCK_BPF_H__

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* The kernel's HZ, read by libbpf from the running kernel's config. */
extern unsigned long CONFIG_HZ __kconfig;
#define HZ CONFIG_HZ

/* tcp_jiffies32 is (u32)jiffies; jiffies_64 agrees with it in 32 bits. */
#define tcp_jiffies32 ((__u32)bpf_jiffies64())

#define USEC_PER_SEC	1000000UL
#define USEC_PER_MSEC	1000UL

/* The ssthresh of a connection that has not seen congestion. */
#define TCP_INFINITE_SSTHRESH	0x7fffffff

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
/* The smaller of two values, ignoring a zero (DCTCP's alpha, CDG's RTTs). */
#define min_not_zero(a, b) ((a) == 0 ? (b) : ((b) == 0 ? (a) : min(a, b)))

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* after(seq1, seq2): is seq1 later than seq2 in 32-bit wrapping order. */
static __always_inline bool after(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq2 - seq1) < 0;
}

static __always_inline bool before(__u32 seq1, __u32 seq2)
{
	return after(seq2, seq1);
}

/* between(seq1, seq2, seq3): seq2 <= seq1 <= seq3 in wrapping order. */
static __always_inline bool between(__u32 seq1, __u32 seq2, __u32 seq3)
{
	return seq3 - seq2 >= seq1 - seq2;
}

/*
 * inet_csk(sk)->icsk_ca_state, the TCP core's recovery state (TCP_CA_*),
 * before the change a set_state hook is told of. A bitfield: read by
 * relocation.
 */
static __always_inline __u8 icsk_ca_state(const struct sock *sk)
{
	const struct inet_connection_sock *icsk = (const void *)sk;

	return BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

/*
 * usecs_to_jiffies(), rounding up: the kernel's formula for every HZ that
 * divides one million (100, 250, 1000), as crates/cc's sock.rs computes it.
 */
static __always_inline __u64 usecs_to_jiffies(__u32 us)
{
	return ((__u64)us * HZ + USEC_PER_SEC - 1) / USEC_PER_SEC;
}

static __always_inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/*
 * tcp_is_cwnd_limited(): may the window grow? In slow start it may while
 * cwnd is below twice what was recently in flight. is_cwnd_limited is a
 * bitfield whose position differs between kernels: read it by relocation.
 */
static __always_inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

/* tcp_min_rtt(): the windowed minimum RTT, us. */
static __always_inline __u32 tcp_min_rtt(const struct tcp_sock *tp)
{
	return tp->rtt_min.s[0].v;
}

/* The entry-point macros, with trace mode; they use the accessors above. */
#include "hooks.bpf.h"

#endif /* __KLEINROCK_SOCK_BPF_H__ */
