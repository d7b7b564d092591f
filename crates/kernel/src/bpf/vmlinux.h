/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel types Kleinrock's struct_ops ports touch, written by hand
 * instead of generated with `bpftool btf dump file /sys/kernel/btf/vmlinux
 * format c` (docs/KERNEL.md says why: the build needs neither bpftool nor a
 * BTF-enabled kernel, and this file lists every field an algorithm reads).
 *
 * Offsets here are not the kernel's and need not be: every struct carries
 * preserve_access_index, so clang records each access as a CO-RE relocation
 * by field name and libbpf rewrites it against the running kernel's BTF at
 * load time. Only names and types must match. A field missing from the
 * running kernel fails the load, not the socket.
 */
#ifndef __KLEINROCK_VMLINUX_H__
#define __KLEINROCK_VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u32 __wsum;

typedef __u8 u8;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;

typedef _Bool bool;
enum { false = 0, true = 1 };

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

/* include/net/sock.h */
struct sock {
	unsigned long sk_pacing_rate;	/* bytes per second */
	__u32 sk_pacing_status;		/* enum sk_pacing */
	unsigned int sk_gso_max_size;	/* bytes */
};

/* include/net/inet_connection_sock.h: the algorithm's private area. */
struct inet_connection_sock {
	__u64 icsk_ca_priv[13];		/* ICSK_CA_PRIV_SIZE = 104 bytes */
};

/* include/linux/tcp.h: what congestion control reads and writes. */
struct tcp_sock {
	__u32 snd_cwnd;			/* segments */
	__u32 snd_cwnd_cnt;		/* ACKed segments not yet cwnd */
	__u32 snd_cwnd_clamp;		/* upper bound on snd_cwnd */
	__u32 snd_cwnd_stamp;		/* tcp_jiffies32 */
	__u32 snd_ssthresh;		/* segments */
	__u32 prior_cwnd;		/* cwnd before the last reduction */
	__u32 max_packets_out;		/* largest flight in the last window */
	__u8 is_cwnd_limited : 1;	/* last flight limited by cwnd */
	__u32 snd_una;			/* oldest unacknowledged sequence */
	__u32 snd_nxt;			/* next sequence to send */
	__u32 srtt_us;			/* smoothed RTT, us << 3 */
	__u32 lsndtime;			/* tcp_jiffies32 of the last send */
	__u64 tcp_mstamp;		/* this event's time, us */
};

/* include/linux/tcp.h: the RTT sample handed to pkts_acked. */
struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;			/* -1: no sample */
	__u32 in_flight;
};

#pragma clang attribute pop

struct rate_sample;
union tcp_cc_info;

/*
 * include/net/tcp.h. libbpf matches this to the kernel's type member by
 * member name when it builds the struct_ops map, so the members the kernel
 * has and we do not fill (owner, list, key) may be left out.
 */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag,
			     const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	__u32 (*sndbuf_expand)(struct sock *sk);
	char name[16];			/* TCP_CA_NAME_MAX, NUL included */
	__u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

/* enum tcp_ca_event and enum tcp_ca_state: values fixed by the ABI. */
#define CA_EVENT_TX_START	0
#define TCP_CA_Loss		4

/* enum sk_pacing */
#define SK_PACING_NONE		0

#endif /* __KLEINROCK_VMLINUX_H__ */
