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
// The config requires `scheduler: pfabric` on the port. Its default buffer
// is two bandwidth-delay products (the port's rtt key).
package pfabric
