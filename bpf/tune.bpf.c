// SPDX-License-Identifier: GPL-2.0
// tune: the start-up tuner behind `shortflow tune`. A sock_ops program attached to a cgroup
// that sets, for the connections it matches (by port, and per destination prefix through
// LPM tries), the SYN RTO, the initial window, the minimum RTO and the delayed-ACK maximum,
// and optionally approximates Super Fast Retransmit (document 001): a minimum RTO of
// handshake RTT x factor until the cut-out of acknowledged bytes.
//
// Where the kernel takes each knob (measured on this machine, ../shared/kernel-facts.md):
// SYN RTO at TIMEOUT_INIT (reply in jiffies, also asked for a listener's SYN/ACK);
// TCP_BPF_IW and TCP_BPF_DELACK_MAX at *_ESTABLISHED_CB; TCP_BPF_RTO_MIN only at
// TCP_CONNECT_CB or TCP_LISTEN_CB (set later it did not change the connection's RTO).
//
// Why Super Fast Retransmit is set where it is (tcp_rtt_estimator(), net/ipv4/tcp_input.c):
// the minimum RTO acts on a connection's timer only through rttvar. The first RTT sample
// sets rttvar = max(2 x RTT, rto_min) (Linux's "rto = 3 x rtt" start); later samples only
// let rttvar sink, a quarter of the way per round trip, towards the rto_min of the moment;
// nothing raises it again. For the side that answers (passive open) that first sample is the
// handshake's, taken before PASSIVE_ESTABLISHED_CB, with the rto_min the child copied from
// its listener. So SFR lowers the floor at TCP_CONNECT_CB / TCP_LISTEN_CB (to factor x the
// RTT last measured to that destination when known, else to the kernel's smallest,
// 2 jiffies: the first sample then gives rttvar = 2 x handshake RTT), and at *_ESTABLISHED_CB
// sets factor x the handshake RTT, the level rttvar may sink to until the cut-out. The
// restore after the cut-out only stops that sinking: the kernel offers no way to raise a
// connection's rttvar again (measured: BENCHMARKS.md).
//
// All maps are written by the loader (python/shortflow/tune/) and can be rewritten while
// the program stays attached.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define SOL_TCP 6
#define AF_INET 2
#define AF_INET6 10

// Global settings; 0 means "leave the kernel's own".
struct config {
	__u32 syn_rto_jiffies;
	__u32 iw_segments;
	__u32 rto_min_us;
	__u32 delack_max_us;
	__u32 sfr_factor_pct;    // Super Fast Retransmit: min RTO = srtt * factor / 100
	__u32 sfr_cutout_bytes;  // ... until this many bytes are acknowledged
	__u32 sfr_restore_us;    // the minimum RTO to go back to after the cut-out
	__u32 port;              // 0: every port; else local or remote port must equal it
	__u32 timer_min_us;      // TCP_TIMEOUT_MIN (2 jiffies): the least bpf_setsockopt takes
};

// What a destination prefix overrides (0: the global value).
struct prefix_value {
	__u32 iw_segments;
	__u32 syn_rto_jiffies;
};

struct key4 {
	__u32 prefixlen;
	__u32 addr;  // network order
};

struct key6 {
	__u32 prefixlen;
	__u32 addr[4];  // network order
};

// Super Fast Retransmit's memory: the smoothed RTT (µs) last measured to a remote address
// (IPv4 in the first word), written at the handshake and at the cut-out. Document 001: a
// path's RTT is nearly constant over days, so the next connection to it can start from it.
struct sfr_key {
	__u32 family;
	__u32 addr[4];  // network order
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sfr_key);
	__type(value, __u32);
} tune_sfr_rtt SEC(".maps");

// What the program counts, per CPU: one u64 each. The loader reads the names and their
// order from this struct's BTF (the counters map's value type), so nothing copies them.
struct counters {
	__u64 matched;               // callbacks for matching connections
	__u64 syn_rto_set;           // TIMEOUT_INIT answered
	__u64 iw_set;                // initial window set
	__u64 rto_min_set;           // minimum RTO set at connect/listen
	__u64 delack_max_set;        // delayed-ACK maximum set
	__u64 prefix_hits;           // a prefix entry decided a value
	__u64 sfr_set;               // Super Fast Retransmit minimum RTO set (after the handshake)
	__u64 sfr_restored;          // ... and restored after the cut-out
	__u64 setsockopt_errors;     // bpf_setsockopt refused (any knob; per knob below)
	__u64 sfr_floor_set;         // SFR floor set at connect/listen (before the handshake's RTT sample)
	__u64 sfr_from_known_rtt;    // ... from the RTT last measured to that destination
	__u64 sfr_no_handshake_rtt;  // no handshake RTT (a resent SYN or SYN/ACK, Karn): SFR skipped
	__u64 iw_refused;            // the kernel refused TCP_BPF_IW
	__u64 rto_min_refused;       // ... TCP_BPF_RTO_MIN (--rto-min or SFR)
	__u64 delack_max_refused;    // ... TCP_BPF_DELACK_MAX
};

// A counter's index; C_COUNT (one past the last) counts nothing.
#define C(field) (__builtin_offsetof(struct counters, field) / sizeof(__u64))
#define C_COUNT (sizeof(struct counters) / sizeof(__u64))
#define C_MATCHED C(matched)
#define C_SYN_RTO C(syn_rto_set)
#define C_IW C(iw_set)
#define C_RTO_MIN C(rto_min_set)
#define C_DELACK C(delack_max_set)
#define C_PREFIX_HIT C(prefix_hits)
#define C_SFR_SET C(sfr_set)
#define C_SFR_RESTORED C(sfr_restored)
#define C_ERRORS C(setsockopt_errors)
#define C_SFR_FLOOR C(sfr_floor_set)
#define C_SFR_KNOWN C(sfr_from_known_rtt)
#define C_SFR_NO_RTT C(sfr_no_handshake_rtt)
#define C_ERR_IW C(iw_refused)
#define C_ERR_RTO_MIN C(rto_min_refused)
#define C_ERR_DELACK C(delack_max_refused)

// The errno of the kernel's last refusal, per knob (slot: the C_ERR_* counter - C_ERR_IW).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __s32);
} tune_last_error SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} tune_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct key4);
	__type(value, struct prefix_value);
} tune_prefix4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct key6);
	__type(value, struct prefix_value);
} tune_prefix6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} tune_counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&tune_counters, &zero);

	if (n && which < C_COUNT)
		n[which] += 1;
}

static __always_inline int set_int(struct bpf_sock_ops *skops, int opt, int value, __u32 which)
{
	int err = bpf_setsockopt(skops, SOL_TCP, opt, &value, sizeof(value));

	if (err) {
		__u32 knob = opt == TCP_BPF_IW ? C_ERR_IW : opt == TCP_BPF_RTO_MIN ? C_ERR_RTO_MIN : C_ERR_DELACK;
		__u32 slot = knob - C_ERR_IW;
		__s32 *last = bpf_map_lookup_elem(&tune_last_error, &slot);

		if (last)
			*last = err;
		count(C_ERRORS);
		count(knob);
		return -1;
	}
	count(which);
	return 0;
}

// The remote address's prefix entry, if any.
static __always_inline struct prefix_value *prefix_of(struct bpf_sock_ops *skops)
{
	if (skops->family == AF_INET) {
		struct key4 k = { .prefixlen = 32, .addr = skops->remote_ip4 };

		return bpf_map_lookup_elem(&tune_prefix4, &k);
	}
	if (skops->family == AF_INET6) {
		struct key6 k = { .prefixlen = 128 };

		k.addr[0] = skops->remote_ip6[0];
		k.addr[1] = skops->remote_ip6[1];
		k.addr[2] = skops->remote_ip6[2];
		k.addr[3] = skops->remote_ip6[3];
		return bpf_map_lookup_elem(&tune_prefix6, &k);
	}
	return 0;
}

static __always_inline int port_matches(struct bpf_sock_ops *skops, __u32 port)
{
	// local_port is in host order, remote_port in network order (upper half of 32 bits).
	return !port || skops->local_port == port || bpf_ntohl(skops->remote_port) == port;
}

static __always_inline int sfr_key_of(struct bpf_sock_ops *skops, struct sfr_key *k)
{
	k->family = skops->family;
	if (skops->family == AF_INET) {
		k->addr[0] = skops->remote_ip4;
		return 1;
	}
	if (skops->family == AF_INET6) {
		k->addr[0] = skops->remote_ip6[0];
		k->addr[1] = skops->remote_ip6[1];
		k->addr[2] = skops->remote_ip6[2];
		k->addr[3] = skops->remote_ip6[3];
		return 1;
	}
	return 0;
}

// factor x rtt, within what TCP_BPF_RTO_MIN takes (TCP_TIMEOUT_MIN to TCP_RTO_MIN): below
// the kernel's floor the floor is the closest it can do, and asking less would be refused.
static __always_inline __u32 sfr_rto_us(struct config *c, __u32 rtt_us)
{
	__u64 v = (__u64)rtt_us * c->sfr_factor_pct / 100;

	if (v < c->timer_min_us)
		v = c->timer_min_us;
	if (v > 200000)
		v = 200000;
	return (__u32)v;
}

static __always_inline void sfr_remember(struct bpf_sock_ops *skops, __u32 srtt_us)
{
	struct sfr_key k = {};

	if (srtt_us && sfr_key_of(skops, &k))
		bpf_map_update_elem(&tune_sfr_rtt, &k, &srtt_us, BPF_ANY);
}

// Before the handshake's RTT sample (connect, listen): the floor that sample meets.
static __always_inline void sfr_floor(struct bpf_sock_ops *skops, struct config *c)
{
	struct sfr_key k = {};
	__u32 *known = 0;
	__u32 v = c->timer_min_us;

	if (skops->op == BPF_SOCK_OPS_TCP_CONNECT_CB && sfr_key_of(skops, &k))
		known = bpf_map_lookup_elem(&tune_sfr_rtt, &k);
	if (known) {
		v = sfr_rto_us(c, *known);
		count(C_SFR_KNOWN);
	}
	set_int(skops, TCP_BPF_RTO_MIN, v, C_SFR_FLOOR);
}

// Document 001's Super Fast Retransmit: after the handshake, a minimum RTO of handshake RTT
// x factor, watched on every RTT sample until the cut-out.
static __always_inline void sfr_start(struct bpf_sock_ops *skops, struct config *c)
{
	__u32 srtt_us = skops->srtt_us >> 3;  // the kernel keeps srtt << 3

	if (!srtt_us) {
		// Karn: a resent SYN or SYN/ACK gives no handshake RTT. The first data sample will
		// meet the floor set at connect/listen, so put back the ordinary minimum first.
		count(C_SFR_NO_RTT);
		set_int(skops, TCP_BPF_RTO_MIN, c->sfr_restore_us, C_COUNT);
		return;
	}
	sfr_remember(skops, srtt_us);
	if (!set_int(skops, TCP_BPF_RTO_MIN, sfr_rto_us(c, srtt_us), C_SFR_SET))
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
}

static __always_inline void sfr_check(struct bpf_sock_ops *skops, struct config *c)
{
	if (skops->bytes_acked < c->sfr_cutout_bytes)
		return;
	sfr_remember(skops, skops->srtt_us >> 3);
	set_int(skops, TCP_BPF_RTO_MIN, c->sfr_restore_us, C_SFR_RESTORED);
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags & ~BPF_SOCK_OPS_RTT_CB_FLAG);
}

SEC("sockops")
int tune(struct bpf_sock_ops *skops)
{
	__u32 zero = 0;
	struct config *c = bpf_map_lookup_elem(&tune_config, &zero);
	struct prefix_value *p;
	__u32 v;

	if (!c || !port_matches(skops, c->port))
		return 1;
	switch (skops->op) {
	case BPF_SOCK_OPS_TIMEOUT_INIT:
		p = prefix_of(skops);
		v = (p && p->syn_rto_jiffies) ? p->syn_rto_jiffies : c->syn_rto_jiffies;
		if (p && p->syn_rto_jiffies)
			count(C_PREFIX_HIT);
		count(C_MATCHED);
		if (v) {
			skops->reply = v;
			count(C_SYN_RTO);
		}
		return 1;
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		count(C_MATCHED);
		if (c->sfr_factor_pct)
			sfr_floor(skops, c);  // --rto-min is then what the cut-out restores
		else if (c->rto_min_us)
			set_int(skops, TCP_BPF_RTO_MIN, c->rto_min_us, C_RTO_MIN);
		return 1;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		count(C_MATCHED);
		p = prefix_of(skops);
		v = (p && p->iw_segments) ? p->iw_segments : c->iw_segments;
		if (p && p->iw_segments)
			count(C_PREFIX_HIT);
		if (v)
			set_int(skops, TCP_BPF_IW, v, C_IW);
		if (c->delack_max_us)
			set_int(skops, TCP_BPF_DELACK_MAX, c->delack_max_us, C_DELACK);
		if (c->sfr_factor_pct)
			sfr_start(skops, c);
		return 1;
	case BPF_SOCK_OPS_RTT_CB:
		if (c->sfr_factor_pct)
			sfr_check(skops, c);
		return 1;
	}
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
