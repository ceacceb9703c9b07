// Package l3 holds the tables of the L3 forwarding stage: the routing
// table, the ECMP flow hash, and the neighbour (ARP/ND) cache. The stage
// itself (ARP handling, TTL, MAC rewrite) is in package dataplane; this
// package reads no frames.
//
// # Routes
//
// gswitchd builds a Table once at start from its config with NewTable,
// which checks every route and refuses bad ones with an error naming the
// route and the fix. The Table never changes after that: every worker
// calls Lookup4 and Lookup6 on it at once, without locks, and a lookup
// allocates nothing and returns the route's own next hops (no copy). To
// change routes, build a new Table and publish it with an atomic pointer.
//
// A lookup is a longest-prefix match done as a binary search: NewTable
// flattens each family's prefixes into the sorted starts of the address
// ranges over which the longest match stays the same (at most 2n+1 for n
// prefixes), so a lookup costs about log2(2n) comparisons whatever the
// prefix lengths, with no per-length probing and no pointers to chase.
//
// # ECMP
//
// A route with several next hops is an ECMP group. The stage hashes the
// packet's flow with SymHash4 or SymHash6 and chooses with Pick, so all
// packets of a flow take the same next hop.
//
// The hash is symmetric: it puts the two (address, port) endpoints of the
// flow in order before it mixes them, so a flow and its reverse hash to
// the same value, and, since it is unseeded, they do so on every switch.
// So when the routes of both directions at a tier list the same next hops
// in the same order (the spines of a leaf-spine fabric, say), both
// directions of a flow cross the same switches, and a mechanism or a
// middlebox that watches both directions sees them. Symmetry of paths does
// not hold when the two directions' groups list different next hops, or
// the same ones in another order or number: Pick then maps the one hash to
// different paths.
//
// The price of an unseeded hash is correlation between tiers (hash
// polarization): Pick uses the hash's top bits, so a switch that receives
// the flows a switch before it picked for it sees only hash values from one
// part of the range, and with equal group sizes on both tiers sends them
// all to one next hop. No topology we run has ECMP on two tiers in a row
// yet; one that does will need other bits per tier or a per-switch seed,
// at the cost of symmetry across switches.
//
// Unlike the neighbour table's slot hash (see Placement), the ECMP hash
// is unkeyed on purpose: a key would differ between switches and break
// that symmetry. What a host gains from knowing it is the choice of next
// hop for its own flows, which it has anyway by choosing its ports.
//
// # Neighbours
//
// Neighbors maps an IPv4 address to the MAC and port to send to. Static
// entries are set at start (Static) and never change or expire; learnt
// entries come from ARP (ARP4, on any worker) and expire ttl after they
// were last learnt. IPv6 neighbours are static only, in a map replaced
// whole on each Static call.
//
// The IPv4 table is a fixed array of slots, shared by all workers without
// locks: Lookup4, ARP4 and ShouldRequest4 may run on every worker at once,
// and allocate nothing. A slot is a key word (address, state, generation),
// a value word (MAC and port) and a last-learnt time; each change goes
// through a busy state with a new generation, and a reader re-reads the
// key after the value, so it never returns a MAC or port with another
// address's key (see Neighbors). The table is bounded: an address may go
// only in the 16 slots of each of its two probe paths, taking an empty or
// reusable slot or the slot of an expired entry, never a live one; when
// all 32 are live, ARP4 refuses it and counts it (ARPFull). A flood of ARP
// from made-up addresses thus fills the table at worst; it cannot evict
// live neighbours or grow memory.
//
// # Placement
//
// Where an address may go is decided by a keyed hash, unlike the ECMP
// hash above: a per-table secret key, drawn from the system's secure
// random source by NewNeighbors (HashKey sets a fixed one, for tests),
// mixed with the address. With an unkeyed hash a host on a large subnet
// could compute which addresses share a path with the gateway's or a
// server's, and 17 gratuitous ARPs for them made that address
// unlearnable (its packets dropped as no_neighbor). The hash, and the
// choice of two disjoint paths over a stash, are as in the MAC table, and
// for the same reasons (see package l2's doc): the first free slot of the
// first path, else of the second; of two copies of an address written at
// once by two workers, the one on the first path (or nearer its path's
// start) stays. A lookup that misses on the first path always looks at
// the second: unlike the MAC table's, this table keeps no overflow counts,
// since a miss here is a packet dropped for want of a neighbour anyway.
//
// # Trust
//
// ARP carries no proof of who sent it, so ARP4 trusts it only as far as
// the switch can check it (the forwarding stage says what each packet is,
// ARPKind):
//
//   - A bound address (a learnt entry that has not expired) changes only
//     by expiring. An ARP packet that agrees with the binding refreshes
//     it; one with another MAC or port is ignored and counted
//     (MoveRefused), so a host cannot take over another's address. The
//     price is that a host that really changed NIC or port is reachable
//     again only once its old binding expired (ttl after it last spoke
//     with the old MAC).
//   - An unbound address is bound only by a reply to a request the switch
//     sent (ShouldRequest4 records each request it allows; a reply counts
//     within the solicit window), or by a request for the switch's own
//     address (RFC 826: the switch answers it, and the traffic that
//     follows needs the way back). Replies nobody asked for and gratuitous
//     ARP are ignored and counted (Unsolicited).
//   - Each binding costs its port one unit of a budget (ARPRate, default
//     100 a second, a burst of 100), so a host cannot fill the table
//     faster than that; refusals are counted (RateLimited). Refreshes cost
//     nothing.
//
// A host on a port's subnet can still claim an address nobody holds: by
// asking for the switch's address with it, or by answering the switch's
// request before the owner does. It then holds it until it falls silent
// for ttl. ARP cannot do better without configuration: addresses that
// matter (gateways, servers) can be made static.
//
// Learn4 is ARP4 for a caller that does not say what kind of packet it
// has: any packet may then bind an unbound address, as before ARP4, while
// bound addresses stay bound and the rate limit holds.
//
// ShouldRequest4 limits the ARP requests the stage sends for next hops it
// cannot resolve: at most one per interval per address, and, since
// addresses share its size slots by hash, at most size per interval in
// all. Counters reads what ARP4 did and refused.
//
// Stats and Entries scan the whole table (for metrics and operator tools,
// not the hot path; Entries allocates).
package l3
