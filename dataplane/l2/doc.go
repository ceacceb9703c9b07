// Package l2 is the ingress stage's MAC learning table.
//
// # Model
//
// A fixed-size open-addressing hash table (linear probing over two probe
// paths of 16 slots per MAC, see Placement) of MAC -> port entries with
// aging, shared by all workers without locks. Each slot is four words (32
// bytes, two slots per cache line):
//
//	key:   MAC (48 bits) << 16 | port+1 (16 bits)
//	       0 = empty; port field 0xffff = retired, 0xfffe = being cleared
//	seen:  time of the last frame from MAC, in the table clock's units
//	moved: time of the MAC's last move to another port
//	over:  entries on their second path whose first path starts here
//
// A lookup loads the key word once, so it always sees a MAC and its port
// together; then it loads seen to tell a live entry from a dead one. An
// entry not seen for longer than the aging time is dead: invisible to
// lookups (the frame is flooded, as on any learning switch) and its slot may
// be taken by another MAC. Learning refreshes seen at most once per eighth
// of the aging time, so a steady flow does not write the shared cache line
// on every frame. Every change of a key word is a compare-and-swap.
//
// # Placement
//
// Where a MAC may go is decided by a keyed hash: a secret key per table,
// drawn from the system's secure random source by New (Config.HashKey sets
// a fixed one, for tests), mixed with the MAC. A host that chooses its
// source MACs cannot compute which of them share a probe path with another
// host's MAC. (With an unkeyed hash, 16 frames from MACs computed for the
// purpose filled a victim's path, far below any port limit, and kept the
// victim's MAC from being learnt: every frame to it was flooded, to the
// attacker's port too.)
//
// The hash is two rounds of a 64x64->128-bit multiply whose halves are
// folded together, under four 64-bit subkeys derived from the 128-bit key
// with SipHash-1-3. SipHash itself would be the textbook choice, but every
// frame hashes twice (its source is learnt, its destination looked up),
// and hashing MACs with SipHash-1-3 made a lookup about three times as
// costly (3.9 to 12.6 ns where we measured), while the mixer adds about
// 1.3 ns (3.3 to 4.6 ns). A pseudorandom function with a security proof is
// not needed here: no hash value ever leaves the switch, and all a host
// can observe is whether a MAC was learnt, which it fails to be only when
// both of its paths are full of live entries (below).
//
// Each MAC has two probe paths of 16 slots: the first from the slot the
// hash's low bits name, the second from a slot its high bits choose among
// those that keep the two paths apart (in a table of 32 slots or more;
// smaller ones have one path). A learner takes the first free slot of the
// first path, else of the second; a lookup that does not find the MAC on
// its first path looks at the second when the first path's start counts
// entries that overflowed (over), so a frame to an unknown MAC costs one
// path in a table that is not crowded. A MAC is refused only when all 32
// slots are live. Two paths make random crowding, not just computed
// collisions, harmless while the table has room: in a simulation of a
// table of 4096 slots half full of random MACs (what one port may hold by
// default), a new MAC found its one path full 0.34% of the time and both
// of its two 0.0015%; three-quarters full, 11% and 1.4%. We chose two
// paths over a stash (a small shared overflow area), which every lookup of
// an unknown MAC would have to search and which crowding fills for
// everyone, and over cuckoo hashing, which moves live entries and would
// need the lock-free protocol below to move them safely.
//
// # Bounds
//
// A flood of source MACs cannot push known hosts out: a MAC only takes an
// empty, retired or dead slot on its probe paths, never a live one. When
// all 32 slots on its two paths are live the MAC is not learnt (TableFull).
//
// Each port has a counter of the slots whose key names the port, live or
// dead. A learner adds one before it writes a key for the port and takes
// the one back if the write fails; whoever moves a key off a port (to
// another port, or retires it) subtracts one after the write. So the
// counter is never below the number of slots held by the port, and since a
// learner checks the value its own addition returned, a port never holds
// more than PortLimit slots, however many workers learn at once (concurrent
// learners may be refused a little early instead). A dead entry keeps
// counting against its port until Sweep retires it or a learner takes its
// slot (a learner retires a dead entry before it reuses the slot); once
// nothing is in flight the counter equals the slots held.
//
// A MAC seen on another port moves there, unless it already moved within
// MoveHold: then the move is refused (MoveRefused), the entry stays on its
// port, and the caller still forwards the frame. A flapping MAC (a loop, or
// a host spoofing another's address) thus changes port at most once per
// MoveHold, and lookups of it stay stable in between.
//
// # Housekeeping
//
// Sweep, called about once a second from one non-forwarding goroutine,
// retires dead entries (their key becomes the retired mark, which frees the
// port's count) and clears retired slots that end a probe chain back to
// empty, so lookups of unknown MACs stay short after a flood. A lookup stops
// at an empty slot, so clearing a slot must never cut a MAC off from the
// start of its probe path, even one a worker is inserting behind it at that
// instant. Sweep clears in two steps: it marks a retired slot whose successor
// is empty as being cleared, checks the successor again, and only then
// empties the slot, by compare-and-swap on the mark. A learner, after
// claiming a slot, walks its path back to the start: it turns any mark it
// meets back into retired (so that clear fails), and if it meets an empty
// slot its own slot may be cut off, so it gives the slot up and tries again.
// No learner ever waits for Sweep. On the same walk (and on to the path's
// end) it looks for a copy of its MAC inserted by another worker at the same
// time; the copy ranked first stays and the other is retired, so a MAC has
// one entry. Any place on the first path ranks before any on the second,
// and on one path the place nearer its start ranks first: a learner on the
// second path also looks along the whole first path, and one on the first
// path retires copies on the second. Each learner reads the other's slot
// after writing its own, so of two learners of one MAC at least one sees
// the other.
//
// The overflow count at a first path's start is raised before a learner
// writes its MAC on the second path and lowered after that entry is
// retired (by whoever retires it), so it is never below the entries it
// counts, and a lookup that reads zero may skip the second path.
//
// Flush retires every entry of a port at once (for a port that went down);
// its slots are reused and cleared like any other retired slot.
//
// Races that remain, all benign: a frame that revives a dead entry at the
// instant Sweep or another learner retires it is not learnt; a learn that
// loses every compare-and-swap it tries (Contended) is not learnt; the next
// frame from the MAC learns it in both cases.
package l2
