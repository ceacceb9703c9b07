// Package l2 is the ingress stage's MAC learning table.
//
// # Model
//
// A fixed-size open-addressing hash table (linear probing, at most 16 slots
// per MAC) of MAC -> port entries with aging, shared by all workers without
// locks. Each slot is four words (32 bytes, two slots per cache line):
//
//	key:   MAC (48 bits) << 16 | port+1 (16 bits)
//	       0 = empty; port field 0xffff = retired, 0xfffe = being cleared
//	seen:  time of the last frame from MAC, in the table clock's units
//	moved: time of the MAC's last move to another port
//
// A lookup loads the key word once, so it always sees a MAC and its port
// together; then it loads seen to tell a live entry from a dead one. An
// entry not seen for longer than the aging time is dead: invisible to
// lookups (the frame is flooded, as on any learning switch) and its slot may
// be taken by another MAC. Learning refreshes seen at most once per eighth
// of the aging time, so a steady flow does not write the shared cache line
// on every frame. Every change of a key word is a compare-and-swap.
//
// # Bounds
//
// A flood of source MACs cannot push known hosts out: a MAC only takes an
// empty, retired or dead slot on its probe path, never a live one. When all
// 16 slots on the path are live the MAC is not learnt (TableFull).
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
// time; the copy nearer the path's start stays and the other is retired, so
// a MAC has one entry.
//
// Flush retires every entry of a port at once (for a port that went down);
// its slots are reused and cleared like any other retired slot.
//
// Races that remain, all benign: a frame that revives a dead entry at the
// instant Sweep or another learner retires it is not learnt; a learn that
// loses every compare-and-swap it tries (Contended) is not learnt; the next
// frame from the MAC learns it in both cases.
package l2
