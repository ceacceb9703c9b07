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
// # Neighbours
//
// Neighbors maps an IPv4 address to the MAC and port to send to. Static
// entries are set at start (Static) and never change or expire; learnt
// entries come from ARP (Learn4, on any worker) and expire ttl after they
// were last learnt. Learn4 updates the MAC and port of a learnt entry (a
// host that changed NIC or moved) but never touches a static one. IPv6
// neighbours are static only, in a map replaced whole on each Static call.
//
// The IPv4 table is a fixed array of slots, shared by all workers without
// locks: Lookup4, Learn4 and ShouldRequest4 may run on every worker at
// once, and allocate nothing. A slot is a key word (address, state,
// generation), a value word (MAC and port) and a last-learnt time; each
// change goes through a busy state with a new generation, and a reader
// re-reads the key after the value, so it never returns a MAC or port
// with another address's key (see Neighbors). The table is bounded: an
// address may go only in the 16 slots of its probe path, taking an empty
// or reusable slot or the slot of an expired entry, never a live one; when
// all 16 are live, Learn4 refuses it and counts it (Stats' full). A flood
// of ARP from made-up addresses thus fills the table at worst; it cannot
// evict live neighbours or grow memory.
//
// ShouldRequest4 limits the ARP requests the stage sends for next hops it
// cannot resolve: at most one per interval per address, and, since
// addresses share its size slots by hash, at most size per interval in
// all.
//
// Stats and Entries scan the whole table (for metrics and operator tools,
// not the hot path; Entries allocates).
package l3
