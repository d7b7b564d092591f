/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace mode: one record per hook call, with the connection state and the
 * algorithm's private area before and after, the call's arguments and its
 * return value: a row of docs/TRACE_FORMAT.md in binary.
 *
 * This kernel has no kprobes and refuses fentry/fexit, so the recording
 * happens inside the struct_ops programs themselves: every hook entry point
 * (hooks.bpf.h) brackets the algorithm's function with kr_trace_begin() and
 * kr_trace_end(). Tracing is switched on and off at run time through the
 * kr_trace_on map, which the loader pins beside the link, so an algorithm
 * already carrying traffic can be traced without reloading it; when off, a
 * hook pays one array lookup and a branch.
 *
 * No record is lost silently: a full ring buffer makes the reservation
 * fail, and each failure is counted in kr_trace_stats.lost, which
 * `kleinrock kernel trace` reports. Only the programs write the counters
 * and only userspace writes kr_trace_on, so neither clobbers the other.
 *
 * struct kr_trace_rec is mirrored field for field by
 * crates/kernel/src/record.rs; its first member carries sizeof() so that a
 * mismatch is refused, not misread.
 */
#ifndef __KLEINROCK_TRACE_BPF_H__
#define __KLEINROCK_TRACE_BPF_H__

/* Hook numbers in records; record.rs maps them to the format's names. */
#define KR_HOOK_INIT		0
#define KR_HOOK_RELEASE		1
#define KR_HOOK_SSTHRESH	2
#define KR_HOOK_CONG_AVOID	3
#define KR_HOOK_PKTS_ACKED	4
#define KR_HOOK_SET_STATE	5
#define KR_HOOK_CWND_EVENT	6
#define KR_HOOK_IN_ACK_EVENT	7
#define KR_HOOK_UNDO_CWND	8
#define KR_HOOK_CONG_CONTROL	9

/* The private area, in 64-bit words (ICSK_CA_PRIV_SIZE / 8). */
#define KR_CA_WORDS		13

/* The connection fields of crates/cc's Sock, in the kernel's units. */
struct kr_sock_state {
	__u64 tcp_mstamp;		/* us */
	__u64 tcp_clock_cache;		/* ns */
	__u64 tcp_wstamp_ns;		/* ns */
	__u64 delivered_mstamp;		/* us */
	__u64 pacing_rate;		/* bytes/s */
	__u64 max_pacing_rate;		/* bytes/s */
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 snd_cwnd_cnt;
	__u32 snd_cwnd_clamp;
	__u32 snd_cwnd_stamp;
	__u32 prior_cwnd;
	__u32 srtt_us;			/* us << 3 */
	__u32 min_rtt_us;		/* tcp_min_rtt() */
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 max_packets_out;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 rcv_nxt;
	__u32 high_seq;
	__u32 lsndtime;			/* jiffies */
	__u32 delivered;
	__u32 delivered_ce;
	__u32 lost;
	__u32 app_limited;
	__u32 mss_cache;
	__u32 gso_max_size;
	__u32 gso_max_segs;
	__u32 jiffies;			/* tcp_jiffies32 when read */
	__u8 is_cwnd_limited;
	__u8 icsk_ca_state;
	__u8 rate_app_limited;
	__u8 pacing_status;
	__u8 pacing_shift;
	__u8 ecn_flags;
	__u8 icsk_ack_pending;
	__u8 pad;
};

struct kr_trace_rec {
	__u32 size;			/* sizeof(struct kr_trace_rec) */
	__u32 hook;			/* KR_HOOK_* */
	__u64 ts_ns;			/* bpf_ktime_get_ns() at entry */
	/* The connection: IPv4 addresses (0 for IPv6) and ports. */
	__u32 saddr;			/* network order */
	__u32 daddr;			/* network order */
	__u16 sport;			/* host order */
	__u16 dport;			/* host order */
	__u32 ret;			/* ssthresh and undo_cwnd; 0 otherwise */
	/* Arguments. */
	__u32 arg_ack;
	__u32 arg_acked;
	__u32 arg_u;			/* new state, event, or in_ack flags */
	__s32 arg_flag;
	__u32 as_pkts_acked;
	__s32 as_rtt_us;
	__u32 as_in_flight;
	__u32 pad0;
	/* struct rate_sample, for cong_control. */
	__u64 rs_prior_mstamp;
	__s64 rs_interval_us;
	__s64 rs_rtt_us;
	__u32 rs_prior_delivered;
	__s32 rs_delivered;
	__u32 rs_snd_interval_us;
	__u32 rs_rcv_interval_us;
	__s32 rs_losses;
	__u32 rs_acked_sacked;
	__u32 rs_prior_in_flight;
	__u32 rs_last_end_seq;
	__u8 rs_is_app_limited;
	__u8 rs_is_retrans;
	__u8 rs_is_ack_delayed;
	__u8 pad1[5];
	struct kr_sock_state pre;
	struct kr_sock_state post;
	__u64 pre_ca[KR_CA_WORDS];
	__u64 post_ca[KR_CA_WORDS];
};

_Static_assert(sizeof(struct kr_trace_rec) == 656,
	       "record.rs decodes exactly this layout");

struct kr_trace_stats {
	__u64 recorded;			/* records submitted */
	__u64 lost;			/* records the full ring refused */
};

/* The pid of the `kleinrock kernel trace` recording, 0 when off. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} kr_trace_on SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kr_trace_stats);
} kr_trace_stats SEC(".maps");

/* 4 MiB, about 5,000 records: the loader may resize it before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} kr_trace_ring SEC(".maps");

/*
 * KR_CA_TYPE(bictcp): names the struct that an algorithm keeps in its
 * private area, so that its type reaches the object's BTF (clang emits BTF
 * only for types that globals and non-inline functions use) and the trace
 * decoder can name each member of the raw 104 bytes (record.rs, ca.rs).
 * The pointer itself is never used.
 */
#define KR_CA_TYPE(type)						\
	struct type *const volatile kr_ca_type = 0

static __always_inline void kr_snapshot(struct kr_sock_state *s,
					struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct inet_connection_sock *icsk = (void *)sk;

	s->tcp_mstamp = tp->tcp_mstamp;
	s->tcp_clock_cache = tp->tcp_clock_cache;
	s->tcp_wstamp_ns = tp->tcp_wstamp_ns;
	s->delivered_mstamp = tp->delivered_mstamp;
	s->pacing_rate = sk->sk_pacing_rate;
	s->max_pacing_rate = sk->sk_max_pacing_rate;
	s->snd_cwnd = tp->snd_cwnd;
	s->snd_ssthresh = tp->snd_ssthresh;
	s->snd_cwnd_cnt = tp->snd_cwnd_cnt;
	s->snd_cwnd_clamp = tp->snd_cwnd_clamp;
	s->snd_cwnd_stamp = tp->snd_cwnd_stamp;
	s->prior_cwnd = tp->prior_cwnd;
	s->srtt_us = tp->srtt_us;
	s->min_rtt_us = tcp_min_rtt(tp);
	s->packets_out = tp->packets_out;
	s->sacked_out = tp->sacked_out;
	s->lost_out = tp->lost_out;
	s->retrans_out = tp->retrans_out;
	s->max_packets_out = tp->max_packets_out;
	s->snd_una = tp->snd_una;
	s->snd_nxt = tp->snd_nxt;
	s->rcv_nxt = tp->rcv_nxt;
	s->high_seq = tp->high_seq;
	s->lsndtime = tp->lsndtime;
	s->delivered = tp->delivered;
	s->delivered_ce = tp->delivered_ce;
	s->lost = tp->lost;
	s->app_limited = tp->app_limited;
	s->mss_cache = tp->mss_cache;
	s->gso_max_size = sk->sk_gso_max_size;
	s->gso_max_segs = sk->sk_gso_max_segs;
	s->jiffies = tcp_jiffies32;
	s->is_cwnd_limited = BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
	s->icsk_ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	s->rate_app_limited = BPF_CORE_READ_BITFIELD(tp, rate_app_limited);
	s->pacing_status = sk->sk_pacing_status;
	s->pacing_shift = sk->sk_pacing_shift;
	s->ecn_flags = tp->ecn_flags;
	s->icsk_ack_pending = icsk->icsk_ack.pending;
}

static __always_inline void kr_copy_ca(__u64 *dst, struct sock *sk)
{
	struct inet_connection_sock *icsk = (void *)sk;

#pragma unroll
	for (int i = 0; i < KR_CA_WORDS; i++)
		dst[i] = icsk->icsk_ca_priv[i];
}

/*
 * Starts a record if tracing is on: the connection, the time, the state
 * before the call. NULL when off or when the ring is full (counted).
 */
static __always_inline struct kr_trace_rec *kr_trace_begin(struct sock *sk,
							   __u32 hook)
{
	__u32 zero = 0;
	__u32 *on = bpf_map_lookup_elem(&kr_trace_on, &zero);
	struct kr_trace_stats *stats;
	struct kr_trace_rec *r;

	if (!on || !*on)
		return NULL;
	r = bpf_ringbuf_reserve(&kr_trace_ring, sizeof(*r), 0);
	if (!r) {
		stats = bpf_map_lookup_elem(&kr_trace_stats, &zero);
		if (stats)
			__sync_fetch_and_add(&stats->lost, 1);
		return NULL;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->hook = hook;
	r->ts_ns = bpf_ktime_get_ns();
	r->saddr = sk->__sk_common.skc_rcv_saddr;
	r->daddr = sk->__sk_common.skc_daddr;
	r->sport = sk->__sk_common.skc_num;
	r->dport = __builtin_bswap16(sk->__sk_common.skc_dport);
	kr_snapshot(&r->pre, sk);
	kr_copy_ca(r->pre_ca, sk);
	return r;
}

/* Completes a record with the state after the call and submits it. */
static __always_inline void kr_trace_end(struct sock *sk,
					 struct kr_trace_rec *r, __u32 ret)
{
	__u32 zero = 0;
	struct kr_trace_stats *stats;

	if (!r)
		return;
	r->ret = ret;
	kr_snapshot(&r->post, sk);
	kr_copy_ca(r->post_ca, sk);
	bpf_ringbuf_submit(r, 0);
	stats = bpf_map_lookup_elem(&kr_trace_stats, &zero);
	if (stats)
		__sync_fetch_and_add(&stats->recorded, 1);
}

static __always_inline void kr_trace_rate_sample(struct kr_trace_rec *r,
						 const struct rate_sample *rs)
{
	r->rs_prior_mstamp = rs->prior_mstamp;
	r->rs_interval_us = rs->interval_us;
	r->rs_rtt_us = rs->rtt_us;
	r->rs_prior_delivered = rs->prior_delivered;
	r->rs_delivered = rs->delivered;
	r->rs_snd_interval_us = rs->snd_interval_us;
	r->rs_rcv_interval_us = rs->rcv_interval_us;
	r->rs_losses = rs->losses;
	r->rs_acked_sacked = rs->acked_sacked;
	r->rs_prior_in_flight = rs->prior_in_flight;
	r->rs_last_end_seq = rs->last_end_seq;
	r->rs_is_app_limited = rs->is_app_limited;
	r->rs_is_retrans = rs->is_retrans;
	r->rs_is_ack_delayed = rs->is_ack_delayed;
}

#endif /* __KLEINROCK_TRACE_BPF_H__ */
