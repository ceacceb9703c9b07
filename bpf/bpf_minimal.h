/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The few definitions xdp.c needs, so that regenerating it needs only clang
 * and not the kernel or libbpf headers. Values from include/uapi/linux/bpf.h. */
#ifndef GSWITCH_BPF_MINIMAL_H
#define GSWITCH_BPF_MINIMAL_H

typedef unsigned int __u32;
typedef unsigned long long __u64;

enum xdp_action { XDP_ABORTED = 0, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT };

#define BPF_MAP_TYPE_XSKMAP 17

struct xdp_md {
	__u32 data;
	__u32 data_end;
	__u32 data_meta;
	__u32 ingress_ifindex;
	__u32 rx_queue_index;
	__u32 egress_ifindex;
};

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

/* long bpf_redirect_map(void *map, __u64 key, __u64 flags), helper 51 */
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)51;

#endif
