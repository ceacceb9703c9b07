// Package netns holds gswitchd's integration tests: real gswitchd
// processes forwarding real frames between hosts in network namespaces,
// driven by ping and iperf3 and checked through the metrics endpoint.
//
// They need root (namespaces, veths, XDP) and skip with the reason
// otherwise. Every test makes its own namespaces and interfaces with a
// random prefix, so tests cannot collide, and removes them (and the
// processes it started) in t.Cleanup, also when it fails. Tests run one at
// a time: on a 2-core machine, concurrent iperf3 runs would measure each
// other.
//
// Hosts and links are brought up by package topo, the code behind
// gswitchctl topo and the scripts: NewTopo is an l2 star of hosts brought up
// without its switch (topo.UpOptions.NoSwitches), for the tests that start,
// stop and kill gswitchd themselves with configs of their own; the fabric
// tests (fabric_test.go) bring up topology files, the shipped ones under a
// name of their own, with one gswitchd per switch.
package netns
