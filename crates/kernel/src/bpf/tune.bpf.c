// SPDX-License-Identifier: GPL-2.0
/*
 * The tuner's sockops program (`kleinrock tune`, docs/TUNE.md): attached
 * to a cgroup v2, it sets the congestion control of the cgroup's TCP
 * connections per peer and reports what each connection showed.
 *
 * At establishment (active and passive, IPv4 and IPv6) it looks the peer
 * up in kr_tune_choices, which the daemon keeps current: the peer's own
 * entry, else its prefix's (a peer not yet seen in a known /24 or /48,
 * when the policy has priors). An entry names an algorithm as the kernel
 * registers it (`cubic`, `kr_cdg`) and the daemon's index for it; the
 * program sets it with bpf_setsockopt(SOL_TCP, TCP_CONGESTION), except
 * - in advise mode (`advise`), where it never sets anything;
 * - when the entry needs ECN (DCTCP) and the connection did not negotiate
 *   it: DCTCP without ECN is Reno that ignores nothing, and on a path
 *   that marks with another AQM it is unsafe.
 * When the peer's entry needs ECN it answers BPF_SOCK_OPS_NEEDS_ECN as
 * DCTCP's flag would: an active open asks for ECN with an ECT SYN, which
 * only a listener that needs ECN too accepts (DCTCP at both ends, or a
 * host whose tuner chose DCTCP for us), and a passive open accepts such
 * a SYN. A classic peer refuses an ECT SYN, so the connection gets no ECN
 * and is not switched: DCTCP runs only between hosts that both run it.
 *
 * Per socket (kr_tune_sk, socket-local storage) it keeps what it set,
 * whether the set failed, and what the connection's reports need; it
 * turns on the state callback, and the RTT callback when the daemon wants
 * reports of long connections. Each report is a kr_tune_rec in the ring
 * buffer: one at establishment, one every `report_ms` while the
 * connection runs (throttled in the RTT callback: a clock read and a
 * compare per RTT sample, one record per interval), and one at its end.
 *
 * The end is when our FIN is acknowledged (FIN_WAIT2), or the socket
 * closes (CLOSE: a passive close's last ACK, or a reset). bpftune learns
 * at FIN_WAIT1 and CLOSE_WAIT, when the application has just called
 * close() and its last data may still be in flight: its bytes and its
 * rate would be those of a transfer cut short. At FIN_WAIT2 everything
 * written has been acknowledged, so bytes_acked is the transfer's size.
 *
 * bpftune's retransmission rule (the `lossy` entry, for its policy only):
 * a connection nothing was chosen for whose retransmissions exceed
 * segs_out >> lossy_shift is switched to the entry's algorithm (BBR).
 *
 * No record is lost silently: a full ring makes the reservation fail,
 * and kr_tune_stats counts it. struct kr_tune_rec is mirrored by
 * crates/kernel/src/tune_record.rs; its first member is its size, so a
 * mismatch is refused, not misread.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load (read-only data: the verifier sees
 * constants). */
const volatile __u32 advise = 0;	/* record, never set */
const volatile __u32 priors = 0;	/* look prefixes up too */
const volatile __u32 prefix_v4 = 24;	/* bits of an IPv4 prefix */
const volatile __u32 prefix_v6 = 48;	/* bits of an IPv6 prefix */
const volatile __u32 report_ms = 0;	/* reports of long connections; 0: none */
const volatile __u32 lossy_shift = 6;	/* bpftune's DROP_SHIFT */

#define KR_TUNE_NONE		0xffffffff	/* no candidate */
#define KR_TUNE_NEEDS_ECN	1		/* kr_tune_choice.flags */
#define KR_NAME			16		/* TCP_CA_NAME_MAX */

/* A peer (prefix 128) or a prefix: the address, IPv4 mapped into IPv6
 * (::ffff:a.b.c.d), network order, host bits zero. */
struct kr_tune_key {
	__u32 addr[4];
	__u32 prefix;
};

struct kr_tune_choice {
	char name[KR_NAME];	/* as the kernel registers it */
	__u32 alg;		/* the daemon's index */
	__u32 flags;		/* KR_TUNE_NEEDS_ECN */
};

/* Report kinds. */
#define KR_TUNE_OPENED		1
#define KR_TUNE_SAMPLE		2
#define KR_TUNE_CLOSED		3

/* Report flags. */
#define KR_TUNE_F_ACTIVE	(1 << 0)	/* we connected */
#define KR_TUNE_F_ECN		(1 << 1)	/* ECN negotiated */
#define KR_TUNE_F_CHOSEN	(1 << 2)	/* the map held an entry */
#define KR_TUNE_F_SET		(1 << 3)	/* and it was set */
#define KR_TUNE_F_NO_ECN	(1 << 4)	/* not set: it needs ECN */
#define KR_TUNE_F_ADVISE	(1 << 5)	/* not set: advise mode */
#define KR_TUNE_F_SWITCHED	(1 << 6)	/* the retransmission rule fired */
#define KR_TUNE_F_COMPLETE	(1 << 7)	/* everything written was acked */

struct kr_tune_rec {
	__u32 size;		/* sizeof(struct kr_tune_rec) */
	__u8 kind;		/* KR_TUNE_OPENED, _SAMPLE, _CLOSED */
	__u8 pad;
	__u16 flags;		/* KR_TUNE_F_* */
	__u64 cookie;		/* bpf_get_socket_cookie(): the connection */
	__u32 addr[4];		/* the peer, as in kr_tune_key */
	char cc[KR_NAME];	/* the algorithm it runs now */
	__u32 alg;		/* the candidate the map held, or KR_TUNE_NONE */
	__s32 set_err;		/* bpf_setsockopt()'s result, if it was called */
	__u64 age_us;		/* since establishment */
	__u64 bytes_acked;	/* payload acknowledged (not the SYN, not the FIN) */
	__u64 max_rate;		/* bytes/s: the most of its rate samples */
	__u32 srtt_us;		/* mean smoothed RTT over its RTT samples */
	__u32 min_rtt_us;	/* windowed minimum RTT */
	__u32 rate_delivered;	/* segments, in the last rate sample... */
	__u32 rate_interval_us;	/* ...over this */
	__u32 mss;
	__u32 segs_out;
	__u32 total_retrans;
	__u32 delivered_ce;	/* segments delivered with CE echoed */
};

/* Per socket. */
struct kr_tune_sk {
	__u64 start_ns;
	__u64 acked_base;	/* bytes_acked at establishment (the SYN's) */
	__u64 last_ns;		/* the last report */
	__u64 srtt_sum;		/* us, over srtt_n RTT samples */
	__u64 max_rate;		/* bytes/s */
	__u32 srtt_n;
	__u32 alg;
	__s32 set_err;
	__u16 flags;		/* KR_TUNE_F_* */
	__u16 done;		/* its end was reported */
};

struct kr_tune_stats {
	__u64 records;		/* reports written */
	__u64 lost;		/* reports the full ring refused */
	__u64 no_storage;	/* connections without storage: not tuned */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);	/* the loader sets the daemon's capacity */
	__type(key, struct kr_tune_key);
	__type(value, struct kr_tune_choice);
} kr_tune_choices SEC(".maps");

/* bpftune's retransmission rule: the algorithm, if the rule is on. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kr_tune_choice);
} kr_tune_lossy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kr_tune_sk);
} kr_tune_sk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} kr_tune_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kr_tune_stats);
} kr_tune_stats SEC(".maps");

static __always_inline struct kr_tune_stats *stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&kr_tune_stats, &zero);
}

/* The peer's key. */
static __always_inline void peer_key(struct bpf_sock_ops *skops, struct kr_tune_key *k)
{
	/* Every field is read at its own constant offset, and kept from the
	 * compiler: merged into one load through a computed pointer, the
	 * reads would be refused ("dereference of modified ctx ptr"). */
	__u32 family = skops->family, ip4 = skops->remote_ip4;
	__u32 a0 = skops->remote_ip6[0], a1 = skops->remote_ip6[1];
	__u32 a2 = skops->remote_ip6[2], a3 = skops->remote_ip6[3];

	barrier_var(ip4);
	barrier_var(a0);
	barrier_var(a1);
	barrier_var(a2);
	barrier_var(a3);
	if (family == AF_INET) {
		k->addr[0] = 0;
		k->addr[1] = 0;
		k->addr[2] = bpf_htonl(0xffff);
		k->addr[3] = ip4;
	} else {
		k->addr[0] = a0;
		k->addr[1] = a1;
		k->addr[2] = a2;
		k->addr[3] = a3;
	}
	k->prefix = 128;
}

/* The key of the peer's prefix: IPv4-mapped addresses by prefix_v4
 * (past the 96 bits of ::ffff:), others by prefix_v6. */
static __always_inline void prefix_key(struct kr_tune_key *k)
{
	bool v4 = k->addr[0] == 0 && k->addr[1] == 0 && k->addr[2] == bpf_htonl(0xffff);
	__u32 len = v4 ? 96 + prefix_v4 : prefix_v6;
	int i;

	for (i = 0; i < 4; i++) {
		__s32 bits = (__s32)len - 32 * i;
		__u32 m = bits >= 32 ? 0xffffffff : bits <= 0 ? 0 : ~0U << (32 - bits);

		k->addr[i] &= bpf_htonl(m);
	}
	k->prefix = len;
}

/* What the map holds for the peer or, with priors, its prefix. */
static __always_inline struct kr_tune_choice *choice_for(struct bpf_sock_ops *skops)
{
	struct kr_tune_choice *c;
	struct kr_tune_key k = {};

	peer_key(skops, &k);
	c = bpf_map_lookup_elem(&kr_tune_choices, &k);
	if (c || !priors)
		return c;
	prefix_key(&k);
	return bpf_map_lookup_elem(&kr_tune_choices, &k);
}

/* Has everything the application wrote (its FIN included, once queued)
 * been acknowledged? `una` is snd_una, read by the caller (a context
 * field read here through a pointer the compiler computes would be
 * refused). */
static __always_inline bool all_acked(struct bpf_sock_ops *skops, __u32 una)
{
	struct tcp_sock *tp = skops->sk ? bpf_skc_to_tcp_sock(skops->sk) : NULL;

	return tp && tp->write_seq == una;
}

/* The rate of the last delivery-rate sample, bytes/s. */
static __always_inline __u64 rate_of(struct bpf_sock_ops *skops)
{
	__u64 interval = skops->rate_interval_us;

	if (!interval)
		return 0;
	return (__u64)skops->rate_delivered * skops->mss_cache * 1000000 / interval;
}

/* `fin`: our FIN has been acknowledged, and bytes_acked counts its
 * sequence number, as it counts the SYN's (acked_base): a report counts
 * the payload only. */
static __always_inline void report(struct bpf_sock_ops *skops, struct kr_tune_sk *s,
				   __u8 kind, bool fin)
{
	struct kr_tune_stats *st = stats();
	struct kr_tune_key k = {};
	struct kr_tune_rec *r;
	struct tcp_sock *tp;
	char cc[KR_NAME] = {};
	__u16 flags = s->flags;
	__u32 una = skops->snd_una;

	barrier_var(una);
	r = bpf_ringbuf_reserve(&kr_tune_ring, sizeof(*r), 0);
	if (!r) {
		if (st)
			st->lost++;
		return;
	}
	peer_key(skops, &k);
	bpf_getsockopt(skops, SOL_TCP, TCP_CONGESTION, cc, sizeof(cc));
	if (skops->ecn_flags & TCP_ECN_OK)
		flags |= KR_TUNE_F_ECN;
	r->delivered_ce = 0;
	tp = skops->sk ? bpf_skc_to_tcp_sock(skops->sk) : NULL;
	if (tp)
		r->delivered_ce = tp->delivered_ce;
	if (all_acked(skops, una))
		flags |= KR_TUNE_F_COMPLETE;
	r->size = sizeof(*r);
	r->kind = kind;
	r->pad = 0;
	r->flags = flags;
	r->cookie = bpf_get_socket_cookie(skops);
	__builtin_memcpy(r->addr, k.addr, sizeof(r->addr));
	__builtin_memcpy(r->cc, cc, sizeof(r->cc));
	r->alg = s->alg;
	r->set_err = s->set_err;
	r->age_us = (bpf_ktime_get_ns() - s->start_ns) / 1000;
	r->bytes_acked = skops->bytes_acked - s->acked_base - (fin ? 1 : 0);
	r->max_rate = s->max_rate;
	r->srtt_us = s->srtt_n ? s->srtt_sum / s->srtt_n : skops->srtt_us >> 3;
	r->min_rtt_us = skops->rtt_min;
	r->rate_delivered = skops->rate_delivered;
	r->rate_interval_us = skops->rate_interval_us;
	r->mss = skops->mss_cache;
	r->segs_out = skops->segs_out;
	r->total_retrans = skops->total_retrans;
	bpf_ringbuf_submit(r, 0);
	if (st)
		st->records++;
}

static __always_inline int established(struct bpf_sock_ops *skops, bool active)
{
	struct kr_tune_choice *c;
	struct kr_tune_sk *s;
	int flags = BPF_SOCK_OPS_STATE_CB_FLAG;

	if (skops->family != AF_INET && skops->family != AF_INET6)
		return 1;
	if (!skops->sk)
		return 1;
	s = bpf_sk_storage_get(&kr_tune_sk, skops->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!s) {
		struct kr_tune_stats *st = stats();

		if (st)
			st->no_storage++;
		return 1;
	}
	s->start_ns = bpf_ktime_get_ns();
	s->last_ns = s->start_ns;
	s->acked_base = skops->bytes_acked;
	s->alg = KR_TUNE_NONE;
	s->set_err = 0;
	s->flags = active ? KR_TUNE_F_ACTIVE : 0;
	c = choice_for(skops);
	if (c) {
		char name[KR_NAME];

		s->alg = c->alg;
		s->flags |= KR_TUNE_F_CHOSEN;
		if (advise) {
			s->flags |= KR_TUNE_F_ADVISE;
		} else if ((c->flags & KR_TUNE_NEEDS_ECN) && !(skops->ecn_flags & TCP_ECN_OK)) {
			s->flags |= KR_TUNE_F_NO_ECN;
		} else {
			__builtin_memcpy(name, c->name, sizeof(name));
			name[KR_NAME - 1] = 0;
			s->set_err = bpf_setsockopt(skops, SOL_TCP, TCP_CONGESTION, name,
						    sizeof(name));
			if (!s->set_err)
				s->flags |= KR_TUNE_F_SET;
		}
	} else {
		__u32 zero = 0;
		struct kr_tune_choice *lossy = bpf_map_lookup_elem(&kr_tune_lossy, &zero);

		if (lossy && lossy->name[0] && !advise)
			flags |= BPF_SOCK_OPS_RETRANS_CB_FLAG;
	}
	if (report_ms)
		flags |= BPF_SOCK_OPS_RTT_CB_FLAG;
	bpf_sock_ops_cb_flags_set(skops, flags);
	report(skops, s, KR_TUNE_OPENED, false);
	return 1;
}

/* An RTT sample: what the end's report averages, and, at most once per
 * report_ms, a report of the connection so far. */
static __always_inline int rtt_sampled(struct bpf_sock_ops *skops)
{
	struct kr_tune_sk *s;
	__u64 now, rate;

	if (!skops->sk)
		return 1;
	s = bpf_sk_storage_get(&kr_tune_sk, skops->sk, 0, 0);
	if (!s || s->done)
		return 1;
	s->srtt_sum += skops->srtt_us >> 3;
	s->srtt_n++;
	rate = rate_of(skops);
	if (rate > s->max_rate)
		s->max_rate = rate;
	now = bpf_ktime_get_ns();
	if (now - s->last_ns >= (__u64)report_ms * 1000000) {
		s->last_ns = now;
		report(skops, s, KR_TUNE_SAMPLE, false);
	}
	return 1;
}

/* bpftune's rule: a lossy connection nothing was chosen for goes to the
 * `lossy` algorithm, once. */
static __always_inline int retransmitted(struct bpf_sock_ops *skops)
{
	struct kr_tune_choice *lossy;
	struct kr_tune_sk *s;
	__u32 zero = 0;
	char name[KR_NAME];

	if (!skops->sk)
		return 1;
	s = bpf_sk_storage_get(&kr_tune_sk, skops->sk, 0, 0);
	if (!s || (s->flags & (KR_TUNE_F_CHOSEN | KR_TUNE_F_SWITCHED)))
		return 1;
	if (skops->total_retrans <= (skops->segs_out >> lossy_shift))
		return 1;
	lossy = bpf_map_lookup_elem(&kr_tune_lossy, &zero);
	if (!lossy || !lossy->name[0])
		return 1;
	__builtin_memcpy(name, lossy->name, sizeof(name));
	name[KR_NAME - 1] = 0;
	if (!bpf_setsockopt(skops, SOL_TCP, TCP_CONGESTION, name, sizeof(name))) {
		s->flags |= KR_TUNE_F_SWITCHED;
		s->alg = lossy->alg;
	}
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags &
					 ~BPF_SOCK_OPS_RETRANS_CB_FLAG);
	return 1;
}

static __always_inline int state_changed(struct bpf_sock_ops *skops)
{
	__u32 old = skops->args[0], state = skops->args[1];
	__u32 una = skops->snd_una;
	struct kr_tune_sk *s;
	bool fin;
	__u64 rate;

	barrier_var(una);
	if (state != BPF_TCP_FIN_WAIT2 && state != BPF_TCP_CLOSE)
		return 1;
	if (!skops->sk)
		return 1;
	s = bpf_sk_storage_get(&kr_tune_sk, skops->sk, 0, 0);
	if (!s || s->done)
		return 1;
	s->done = 1;
	rate = rate_of(skops);
	if (rate > s->max_rate)
		s->max_rate = rate;
	/* Our FIN was sent if we left FIN_WAIT1, CLOSING or LAST_ACK, and
	 * acknowledged if everything written (it included) was. */
	fin = (state == BPF_TCP_FIN_WAIT2 || old == BPF_TCP_FIN_WAIT1 ||
	       old == BPF_TCP_CLOSING || old == BPF_TCP_LAST_ACK) &&
	      all_acked(skops, una);
	report(skops, s, KR_TUNE_CLOSED, fin);
	/* Nothing more to report: no more callbacks for this socket. */
	bpf_sock_ops_cb_flags_set(skops, 0);
	return 1;
}

/* Asked whether the SYN should ask for ECN (at connect), or a SYN that
 * does may have it (a request socket): yes when the peer's entry needs
 * it (and we would set it). */
static __always_inline int needs_ecn(struct bpf_sock_ops *skops)
{
	struct kr_tune_choice *c;

	if (advise || (skops->family != AF_INET && skops->family != AF_INET6))
		return 1;
	c = choice_for(skops);
	if (c && (c->flags & KR_TUNE_NEEDS_ECN))
		skops->reply = 1;
	return 1;
}

SEC("sockops")
int kr_tune(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		return established(skops, true);
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		return established(skops, false);
	case BPF_SOCK_OPS_RTT_CB:
		return rtt_sampled(skops);
	case BPF_SOCK_OPS_RETRANS_CB:
		return retransmitted(skops);
	case BPF_SOCK_OPS_STATE_CB:
		return state_changed(skops);
	case BPF_SOCK_OPS_NEEDS_ECN:
		return needs_ecn(skops);
	}
	return 1;
}
