// Package pfabric is the switch side of pFabric's ranking (Alizadeh et al.,
// SIGCOMM 2013, sections 3 and 4.1; seed 002) as a gswitch mechanism.
//
// pFabric's switch serves the packet with the best priority first and, when
// its tiny buffer is full, drops the worst; that is the pfabric scheduler
// (sched.PFabric: priority scheduling and dropping with starvation
// prevention). The priority itself comes from the packet. This mechanism
// puts it into p.Rank at admission, on the port's egress worker, from one of
// two sources (config key rank):
//
//   - gsperf (default): the priority field of a gsperf header (wire/gsperf,
//     UDP payload offset 40: the flow's remaining bytes, set by the sender
//     as pFabric's hosts do, section 4.1). Packets that are not gsperf
//     segments rank 0 (best): ARP, acks and probes are small and should
//     not wait.
//   - las: least attained service, estimated in the switch: the bytes the
//     flow has sent through this port so far, from a count-min sketch (2 x
//     4096 counters, halved every 64 MB so old flows fade). New and short
//     flows go first without any host support (section 6, "pFabric with
//     unmodified hosts" discusses the trade-off).
//
// # Hosts' reach
//
//   - rank: gsperf trusts hosts, as the paper does: a host writes any
//     priority in its gsperf header, and the best ranks leave first and,
//     when the buffer is full, push the others' packets out
//     (gswitch_drops_total{reason="evicted"}). Traffic without a gsperf
//     header ranks 0, the best, too. The port's
//     gswitch_pfabric_ranked_bytes_total{source="gsperf"|"unmarked"} shows
//     how much traffic took a host's word, or carried none. On ports whose hosts are not trusted, use
//     rank: las.
//   - rank: las estimates attained service in the switch. A host resets
//     its own by opening new flows (a new 5-tuple starts at 0), as the
//     paper discusses; it cannot push another host's flow down: the
//     sketch is keyed (package internal/keyhash) and mixes in the source
//     address.
//   - The pfabric scheduler's flow table is keyed too: no host can make its
//     probe chains long.
//   - pFabric has one queue. On prio and drr ports the DSCP picks the queue
//     (classify: dscp, the default), so a host picks its own, the highest
//     priority included.
//
// The config requires `scheduler: pfabric` on the port. Its default buffer
// is two bandwidth-delay products (the port's rtt key).
package pfabric
