// Package topo reads topology files and brings fabrics of gswitchd switches
// up and down on one Linux machine, or over several.
//
// A topology file (docs/topology.md) names switches, hosts and the links
// between them. The model has three steps:
//
//   - Parse/Load read the YAML and validate it: every error names the field
//     (links[3].b, hosts.h5.addr, ...) and nothing is made for a bad file.
//   - Topology.Plan derives everything that would be made, deterministically
//     from the file alone: one network namespace per host (<name>-<host>)
//     with eth0, one veth per link (switch ends in the root namespace, named
//     <name>-<switch#>p<port#>), locally administered MACs, in l3 mode the
//     addresses (each host port a subnet of its own, /31s from
//     fabric_pool on switch-switch links), the hosts' routes and each
//     switch's static routes (ECMP over every neighbour on a shortest path,
//     listed by the next-hop switch's id so that both directions of a flow
//     pick the same switches) and neighbours, and one gswitchd config per
//     switch. The per-switch and per-port gswitchd settings of the file are
//     opaque YAML maps merged over each other and emitted with the keys the
//     plan computes (among them each port's uplink: it faces a switch of a
//     higher tier); this package does not interpret them, and writes no
//     mechanism's keys. A timescale K (the top-level key timescale,
//     timescale.go) is written into each config as timescale: K, with the
//     file's rates and delays as they are: gswitchd runs them K times
//     slower. With timescale: auto the plan is at K = 1 until Up measures
//     this machine (package lateness) and plans again at the K it chose.
//   - Up makes the plan real (netlink for namespaces, links, addresses,
//     routes and neighbours; ethtool for offloads), starts one gswitchd per
//     switch (none with UpOptions.NoSwitches: the caller runs its own on the
//     ports) and records what it made in <state>/<name>/state.json as it goes.
//     It refuses to start when a namespace, interface or metrics port of the
//     topology already exists, and removes what it made when a step fails.
//     Down removes everything, from the state file and from the names the
//     file implies (links carry an alias that marks them as the topology's),
//     so it also works after a crash.
//
// A file's designs: (design.go) name ways of running its fabric: each
// gives port keys over defaults.port (its mechanisms map says exactly which
// mechanisms run), switch keys over defaults.switch, and the transport the
// hosts' gsperf runs (transport.go: -mode, -pfc and more flags, from the
// top-level transport:, then the design's, then the host's own).
// Topology.WithDesign puts a topology under one; without one the file runs
// as written. Up records the design in the state file (UpDesign reads it),
// and HostTransport gives a host's gsperf flags under the design.
//
// A file's machines: (machine.go, tunnel.go) spread the fabric over
// several machines: each switch and host runs on one, and a link between
// two machines is a VXLAN tunnel over their underlay network, stitched on
// each machine to the link's veth by tc (mirred, both ways), so that the
// switch's port stays what it is on one machine. Each machine brings up
// its own part (Topology.PlanFor, UpOptions.Machine); Up refuses tunnels
// the underlay cannot carry (address, route, MTU, VNI) before making
// anything, and Running.Tunnels reads the tunnels' counters.
//
// Topology and Plan are plain values: safe to read from any goroutine, not
// to modify concurrently. A Running belongs to the goroutine that called Up
// (or Attach); Exec may be called from any goroutine.
package topo
