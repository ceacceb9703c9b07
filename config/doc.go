// Package config reads and validates gswitchd's YAML configuration.
//
// # Typed once
//
// Every key decodes straight into a field of its own type: sizes, rates and
// durations into package units' types, the port's role into mech.Role,
// classify into sched.ClassifyBy, MACs into MAC, addresses and prefixes
// into net/netip values, a port's mechanisms into Mechanisms (each
// mechanism's settings decoded into the value its mech.Spec.Config made).
// No field holds the YAML text beside its value: what Parse returns is
// what gswitchd runs.
//
// What depends on several fields is computed by methods, never stored
// twice: Config.RouteTable and Config.NeighborTable resolve the routes'
// next hops and the static neighbours to the ports whose subnets hold them;
// Port.Classifier builds the port's classification map for the scheduler;
// Mechanisms.Names lists a port's mechanisms.
//
// # Defaults
//
// Each default has one owner. The switch's are in this package, in
// defaults.go: Parse starts from Defaults (and each port from its port
// defaults) and decodes the file over it, so a key the file leaves out
// keeps its default and a key the file sets to 0 means 0 (spin: 0 does not
// spin; catchup: 0 makes up no time). Where a key documents 0 or "" as
// "the default" (frames: 0, xdp_mode: ""), validation puts the default
// back. The scheduler's defaults belong to package sched (its name,
// sched.DefaultScheduler; its quantum and its buffer, in its sched.Spec),
// a mechanism's to its mech.Spec.Config. After Parse every field holds the
// value in force (a port's name, scheduler, queues, quantum, buffer and
// classification filled in), so that callers and a reload compare values,
// not spellings: 5000us is no change from the default 5ms. A config built
// in Go rather than read from a file is filled in and checked alike by
// Config.Complete (complete.go), so that its users default nothing again.
//
// # Timescale
//
// The timescale key, K (default 1), runs the switch as a scale model of a
// faster fabric (time dilation): the file gives every rate and time in the
// fabric's units (a 10Gbit link with a 4us delay), and Parse puts each on
// this machine's clock, every units.Rate divided by K and every
// units.Duration multiplied by K (10Mbit and 4ms at K = 1000). Byte counts
// (buffers, bursts, thresholds) are the same on both clocks, and so is
// every rate x time product. The scaling runs over the whole typed config
// by reflection, after decoding and before validation, so that it reaches
// the defaults the file left (a port's rtt, a mechanism's rtt) and every
// mechanism's config struct with no code in the mechanism; and so that
// every bound is checked on the value this machine runs, with errors that
// show both clocks:
//
//	ports[2].delay: 4ms at timescale 1000 is 4s on this machine, more than the 1s a delay line holds (lower timescale or delay)
//
// A field that is a property of this machine rather than of the fabric is
// tagged `timescale:"wall"` (units.TimescaleTag) and keeps the file's
// value. The wall keys are spin, slice and catchup (how a worker waits and
// the line time a shaper makes up after a late worker: this machine's
// lateness), mac_table.aging and mac_table.move_hold (learning paced by the
// hosts' own kernels, which run on the wall clock), and the fields a
// mechanism tags so in its own config (a switch's traversal time: its
// package says which). Every other Duration and Rate scales: ports' rate,
// rtt, delay and rx_delay, and every mechanism's durations and rates.
// Constants a mechanism keeps in its code get K through
// mech.PortInfo.Timescale and mech.Port.Timescale, and the mechanism's
// doc says which of them are fabric time and which wall time. The
// shaper's default burst, one millisecond of the port's rate, is wall time
// (it absorbs a late worker), so it is one millisecond of the rate this
// machine runs. docs/topology.md ("Timescale") has the whole list.
//
// Config.Timescale keeps K for whoever reports on both clocks
// (units.Timescale's RateClocks and DurationClocks write "10 Mbit/s wall =
// 10 Gbit/s fabric"). A reload refuses another timescale; gswitchctl set
// rate takes the fabric's rate, as the file does.
//
// # Checks
//
// Every check runs once, here: the keys and the values' shapes while
// decoding, the ranges and the relations between keys (a mechanism and
// its port's scheduler, routes and the ports' subnets) in validation,
// including each mechanism's own Validate with what it may know of its
// port (mech.PortInfo). Check adds the checks that need the host (do the
// interfaces exist).
//
// # Errors
//
// Every error names the key as a path like ports[1].rate, the value, and
// what would be accepted; errors found while decoding also give the line:
//
//	ports[1].mechanisms.bfc.hrtt: line 14: "5 us" is not a duration (write e.g. 50us, 2ms, 300s)
package config
