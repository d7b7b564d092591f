/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel types Kleinrock's BPF programs touch (the struct_ops ports,
 * and the tuner's sockops program), written by hand instead of generated
 * with `bpftool btf dump file /sys/kernel/btf/vmlinux format c`
 * (docs/KERNEL.md says why: the build needs neither bpftool nor a
 * BTF-enabled kernel, and this file lists every field an algorithm reads).
 *
 * Offsets here are not the kernel's and need not be (but for the sockops
 * context, below, which the verifier checks by offset): every struct carries
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

/* include/net/sock.h: the socket's identity (trace records name it). */
struct sock_common {
	__be32 skc_daddr;		/* remote IPv4 address */
	__be32 skc_rcv_saddr;		/* local IPv4 address */
	__be16 skc_dport;		/* remote port, network order */
	__u16 skc_num;			/* local port, host order */
	unsigned short skc_family;	/* AF_INET, AF_INET6 */
};

/* include/net/sock.h */
struct sock {
	struct sock_common __sk_common;
	unsigned long sk_pacing_rate;	/* bytes per second */
	unsigned long sk_max_pacing_rate; /* bytes per second, SO_MAX_PACING_RATE */
	__u32 sk_pacing_status;		/* enum sk_pacing */
	__u8 sk_pacing_shift;		/* TSQ budget: 2^-shift s at the pacing rate */
	unsigned int sk_gso_max_size;	/* bytes */
	__u16 sk_gso_max_segs;		/* segments */
};

/* include/net/inet_connection_sock.h: the algorithm's private area. */
struct inet_connection_sock {
	__u8 icsk_ca_state : 5;		/* enum tcp_ca_state */
	struct {
		__u8 pending;		/* ICSK_ACK_* bits (DCTCP writes NOW) */
	} icsk_ack;
	__u64 icsk_ca_priv[13];		/* ICSK_CA_PRIV_SIZE = 104 bytes */
};

/* include/linux/win_minmax.h: a windowed min or max of three samples. */
struct minmax_sample {
	__u32 t;			/* when the sample was taken */
	__u32 v;			/* its value */
};

struct minmax {
	struct minmax_sample s[3];	/* s[0] is the current min or max */
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
	__u32 packets_out;		/* segments in flight, SACKed included */
	__u32 sacked_out;		/* SACKed segments */
	__u32 lost_out;			/* segments marked lost */
	__u32 retrans_out;		/* retransmitted segments in flight */
	__u32 snd_una;			/* oldest unacknowledged sequence */
	__u32 snd_nxt;			/* next sequence to send */
	__u32 rcv_nxt;			/* next sequence expected */
	__u32 high_seq;			/* snd_nxt when recovery began */
	__u32 srtt_us;			/* smoothed RTT, us << 3 */
	struct minmax rtt_min;		/* windowed min RTT, us */
	__u32 lsndtime;			/* tcp_jiffies32 of the last send */
	__u64 tcp_mstamp;		/* this event's time, us */
	__u64 tcp_clock_cache;		/* this event's time, ns */
	__u64 tcp_wstamp_ns;		/* departure time of the next skb, ns */
	__u32 delivered;		/* segments delivered, ever */
	__u32 delivered_ce;		/* of which CE-marked */
	__u64 delivered_mstamp;		/* time of the last delivery, us */
	__u32 lost;			/* segments lost, ever */
	__u32 app_limited;		/* delivered count when app-limited, or 0 */
	__u8 rate_app_limited : 1;	/* the last rate sample was app-limited */
	__u32 mss_cache;		/* bytes */
	__u8 ecn_flags;			/* TCP_ECN_* */
	__u32 write_seq;		/* end of the data the application wrote */
};

/* include/linux/tcp.h: the RTT sample handed to pkts_acked. */
struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;			/* -1: no sample */
	__u32 in_flight;
};

/* include/net/tcp.h: the delivery-rate sample handed to cong_control. */
struct rate_sample {
	__u64 prior_mstamp;		/* start of the interval, us */
	__u32 prior_delivered;		/* tp->delivered at its start */
	__u32 prior_delivered_ce;
	__s32 delivered;		/* segments delivered in it */
	__s32 delivered_ce;
	long interval_us;		/* its length, or -1 */
	__u32 snd_interval_us;
	__u32 rcv_interval_us;
	long rtt_us;			/* RTT of the last segment (S)ACKed, or -1 */
	int losses;			/* segments newly marked lost */
	__u32 acked_sacked;		/* segments newly (S)ACKed */
	__u32 prior_in_flight;
	__u32 last_end_seq;
	bool is_app_limited;
	bool is_retrans;
	bool is_ack_delayed;
};

#pragma clang attribute pop

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

/* enum bpf_map_type: the map types the programs declare. */
enum bpf_map_type {
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_SK_STORAGE = 24,
	BPF_MAP_TYPE_RINGBUF = 27,
};

/*
 * include/net/tcp.h. An enum, not defines: the kernel's cwnd_event
 * functions take it, and a kfunc's declaration must match its type.
 */
enum tcp_ca_event {
	CA_EVENT_TX_START = 0,		/* first transmit when nothing in flight */
	CA_EVENT_CWND_RESTART = 1,	/* cwnd restart after idle */
	CA_EVENT_COMPLETE_CWR = 2,	/* end of CWR with cwnd reduced */
	CA_EVENT_LOSS = 3,		/* RTO */
	CA_EVENT_ECN_NO_CE = 4,		/* ECT set, not CE marked */
	CA_EVENT_ECN_IS_CE = 5,		/* CE marked */
};

/* enum tcp_ca_state */
#define TCP_CA_Open		0
#define TCP_CA_Disorder		1
#define TCP_CA_CWR		2
#define TCP_CA_Recovery		3
#define TCP_CA_Loss		4

/* in_ack_event flags (enum tcp_ca_ack_event_flags) */
#define CA_ACK_SLOWPATH		(1 << 0)
#define CA_ACK_WIN_UPDATE	(1 << 1)
#define CA_ACK_ECE		(1 << 2)

/* enum inet_csk_ack_state_t: icsk_ack.pending bits. */
#define ICSK_ACK_TIMER		2	/* a delayed ACK is scheduled */
#define ICSK_ACK_NOW		16	/* send the next ACK at once */

/* tcp_congestion_ops.flags */
#define TCP_CONG_NEEDS_ECN	0x2	/* negotiate ECN, set ECT on every segment */

/* tcp_sock.ecn_flags */
#define TCP_ECN_OK		1
#define TCP_ECN_QUEUE_CWR	2
#define TCP_ECN_DEMAND_CWR	4
#define TCP_ECN_SEEN		8

/* enum sk_pacing */
#define SK_PACING_NONE		0
#define SK_PACING_NEEDED	1
#define SK_PACING_FQ		2

/* include/uapi/linux/bpf.h: socket-local storage (CDG's gradient window). */
#define BPF_MAP_TYPE_SK_STORAGE		24	/* enum bpf_map_type */
#define BPF_F_NO_PREALLOC		1	/* required of sk_storage maps */
#define BPF_SK_STORAGE_GET_F_CREATE	1	/* bpf_sk_storage_get(): allocate */

/* include/uapi/linux/tcp.h, for bpf_setsockopt(). */
#define SOL_TCP			6
#define TCP_CONGESTION		13

/*
 * include/uapi/linux/bpf.h: the context of a sockops program (tune.bpf.c).
 * A program's context is not relocated: the verifier checks each access
 * against this layout, the UAPI's, which the kernel keeps stable; so it
 * is declared as is, outside the CO-RE attribute above, up to the last
 * member read.
 */
struct bpf_sock;

struct bpf_sock_ops {
	__u32 op;			/* BPF_SOCK_OPS_* */
	union {
		__u32 args[4];		/* the op's arguments */
		__u32 reply;		/* what the program answers */
		__u32 replylong[4];
	};
	__u32 family;
	__u32 remote_ip4;		/* network order */
	__u32 local_ip4;		/* network order */
	__u32 remote_ip6[4];		/* network order */
	__u32 local_ip6[4];		/* network order */
	__u32 remote_port;		/* network order */
	__u32 local_port;		/* host order */
	__u32 is_fullsock;
	__u32 snd_cwnd;
	__u32 srtt_us;			/* us << 3 */
	__u32 bpf_sock_ops_cb_flags;
	__u32 state;
	__u32 rtt_min;			/* us */
	__u32 snd_ssthresh;
	__u32 rcv_nxt;
	__u32 snd_nxt;
	__u32 snd_una;
	__u32 mss_cache;
	__u32 ecn_flags;
	__u32 rate_delivered;		/* segments, over rate_interval_us */
	__u32 rate_interval_us;
	__u32 packets_out;
	__u32 retrans_out;
	__u32 total_retrans;
	__u32 segs_in;
	__u32 data_segs_in;
	__u32 segs_out;
	__u32 data_segs_out;
	__u32 lost_out;
	__u32 sacked_out;
	__u32 sk_txhash;
	__u64 bytes_received;
	__u64 bytes_acked;
	union {
		struct bpf_sock *sk;
		__u64 :64;
	} __attribute__((aligned(8)));
};

/* enum: the sockops callbacks (op) tune.bpf.c handles. */
#define BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB	4
#define BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB	5
#define BPF_SOCK_OPS_NEEDS_ECN			6
#define BPF_SOCK_OPS_RETRANS_CB			9
#define BPF_SOCK_OPS_STATE_CB			10
#define BPF_SOCK_OPS_RTT_CB			12

/* The callbacks a program turns on per socket (bpf_sock_ops_cb_flags_set). */
#define BPF_SOCK_OPS_RETRANS_CB_FLAG		(1 << 1)
#define BPF_SOCK_OPS_STATE_CB_FLAG		(1 << 2)
#define BPF_SOCK_OPS_RTT_CB_FLAG		(1 << 3)

/* The TCP states STATE_CB reports (args[0] the old, args[1] the new). */
#define BPF_TCP_FIN_WAIT1	4
#define BPF_TCP_FIN_WAIT2	5
#define BPF_TCP_CLOSE		7
#define BPF_TCP_LAST_ACK	9
#define BPF_TCP_CLOSING		11

#define AF_INET			2
#define AF_INET6		10

#endif /* __KLEINROCK_VMLINUX_H__ */
