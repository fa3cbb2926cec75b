// SPDX-License-Identifier: GPL-2.0
// syn_rto: sets the initial retransmission timeout of SYNs (and, on a listener's cgroup,
// of SYN/ACKs) for the sockets of one cgroup, e.g. the 3 s of RFC 2988 (2.1) for the
// 2008-era stack. Minimal on purpose: the testbed's own copy until the host tuner
// (`shortflow tune`) generalises it.
//
// The kernel asks at BPF_SOCK_OPS_TIMEOUT_INIT (tcp_timeout_init()) and takes `reply` in
// jiffies when the program returns 1; reply <= 0 keeps TCP_TIMEOUT_INIT (1 s).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// Key 0: the SYN RTO in jiffies (0: leave the kernel's own). Written by the loader.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} syn_rto_jiffies SEC(".maps");

SEC("sockops")
int syn_rto(struct bpf_sock_ops *skops)
{
	__u32 key = 0;
	__u32 *jiffies;

	if (skops->op != BPF_SOCK_OPS_TIMEOUT_INIT)
		return 1;
	jiffies = bpf_map_lookup_elem(&syn_rto_jiffies, &key);
	if (jiffies && *jiffies)
		skops->reply = *jiffies;
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
