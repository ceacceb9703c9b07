//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// xdp_redirect_xsk hands every frame that arrives on a switch port to the
// AF_XDP socket that gswitchd bound to the frame's receive queue. A queue
// with no socket in the map passes the frame to the kernel stack
// (bpf_redirect_map's fallback action), so a port keeps working for the
// host while gswitchd restarts.
//
// Built by bpf2go (see gen.go); the generated object files are committed.

#include "bpf_minimal.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

SEC("xdp")
int xdp_redirect_xsk(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
