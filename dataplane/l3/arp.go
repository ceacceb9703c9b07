package l3

import "fmt"

// ARPKind is what an ARP packet is, as far as ARP4's trust rules go. The
// forwarding stage classifies each packet from its operation and target.
type ARPKind uint8

const (
	// ARPReply is a reply (operation 2). It binds an unbound sender
	// address only if the switch asked for that address (ShouldRequest4
	// said to) within the solicit window.
	ARPReply ARPKind = iota
	// ARPRequestForUs is a request (operation 1) for one of the switch's
	// own addresses on the port it came in on, which the switch answers.
	// It binds an unbound sender address, as RFC 826 says a target
	// should: the host is about to send traffic whose answers go back to
	// it, and a host on the link could claim an unbound address just as
	// well by answering the switch's own request first.
	ARPRequestForUs
	// ARPOther is any other ARP packet: a gratuitous one, a request for
	// another host. It only refreshes a binding it agrees with.
	ARPOther
	// arpAny is Learn4's kind: any ARP may bind an unbound address.
	arpAny
)

// ARPResult says what ARP4 did with an ARP packet's sender.
type ARPResult uint8

const (
	ARPRefreshed   ARPResult = iota // the address was bound to this MAC and port already (or is static so)
	ARPLearnt                       // the address was unbound (new, or its binding had expired) and now is bound
	ARPIgnored                      // address 0.0.0.0 (a probe's sender): nothing done
	ARPUnsolicited                  // the address is unbound and this packet may not bind it: ignored
	ARPMoveRefused                  // the address is bound (or static) to another MAC or port: ignored
	ARPRateLimited                  // the port's budget of bindings is spent: not bound
	ARPFull                         // both of the address's probe paths hold live entries of others: not bound
	ARPContended                    // lost every race with other writers: not bound (the next packet tries again)
)

var arpResultNames = [...]string{"refreshed", "learnt", "ignored", "unsolicited", "move_refused", "rate_limited", "full", "contended"}

func (r ARPResult) String() string {
	if int(r) < len(arpResultNames) {
		return arpResultNames[r]
	}
	return fmt.Sprintf("ARPResult(%d)", uint8(r))
}

// ARPCounters counts what ARP4 (and Learn4) did and refused since
// NewNeighbors; each refusal is an attempt the table stopped.
type ARPCounters struct {
	Learnt      uint64 // bindings made (unbound addresses bound)
	MoveRefused uint64 // packets that would have moved a bound or static address to another MAC or port
	Unsolicited uint64 // packets for unbound addresses the switch had not asked for (replies, gratuitous ARP)
	RateLimited uint64 // bindings refused because their port's budget was spent
	Full        uint64 // bindings refused for want of a free slot on the address's two paths
}

// Counters reads the ARP counters.
func (n *Neighbors) Counters() ARPCounters {
	return ARPCounters{
		Learnt:      n.learnt.Load(),
		MoveRefused: n.moveRefused.Load(),
		Unsolicited: n.unsolicited.Load(),
		RateLimited: n.rateLimited.Load(),
		Full:        n.full.Load(),
	}
}

// ARP4 applies an ARP packet that came in on port at now, saying its
// sender ip (IPv4 as a big-endian uint32) is at mac, under these rules:
//
//   - A bound address (a learnt entry that has not expired) only ever
//     changes by expiring: an ARP packet that agrees with the binding (the
//     same MAC and port) refreshes it, whatever its kind; one that does
//     not is ignored and counted (ARPMoveRefused), so no host can take
//     over another's address, and a host that really moved or changed NIC
//     is reachable again once its old binding expired (ttl after the old
//     MAC last spoke). A static entry never changes.
//   - An unbound address is bound by a reply the switch asked for, or by a
//     request for the switch's own address (see ARPKind); any other packet
//     is ignored and counted (ARPUnsolicited).
//   - Each binding costs the port one unit of its budget (ARPRate): when
//     the budget is spent the binding is refused and counted
//     (ARPRateLimited). Refreshes cost nothing.
//
// It allocates nothing and takes no lock.
func (n *Neighbors) ARP4(ip uint32, mac [6]byte, port uint16, kind ARPKind, now int64) ARPResult {
	if ip == 0 {
		return ARPIgnored
	}
	val := pack(mac, port)
	for range maxAttempts {
		if r, again := n.arp(ip, val, port, kind, now); !again {
			return r
		}
	}
	return ARPContended
}

// Learn4 is ARP4 for a caller that does not tell the kind of packet: any
// ARP packet may bind an unbound address (as every packet could before
// ARP4), but bound addresses stay bound and the rate limit holds. It
// reports whether the cache now holds that binding: false for address 0,
// a refused move (a bound or static address at another MAC or port), a
// spent budget, no room, or lost races.
func (n *Neighbors) Learn4(ip uint32, mac [6]byte, port uint16, now int64) bool {
	r := n.ARP4(ip, mac, port, arpAny, now)
	return r == ARPLearnt || r == ARPRefreshed
}

// may reports whether a packet of kind may bind unbound ip at now.
func (n *Neighbors) may(ip uint32, kind ARPKind, now int64) bool {
	switch kind {
	case ARPRequestForUs, arpAny:
		return true
	case ARPReply:
		return n.solicited(ip, now)
	}
	return false
}

// arp is one attempt of ARP4; again means it met a concurrent write.
func (n *Neighbors) arp(ip uint32, val uint64, port uint16, kind ARPKind, now int64) (r ARPResult, again bool) {
	a, b := n.homes(ip)
	var cand *nslot
	var ck, chome, cp uint64
	for path := range n.paths() {
		home := a
		if path == 1 {
			home = b
		}
		for p := uint64(0); p < n.probe; p++ {
			s := &n.slots[(home+p)&n.mask]
			k := s.key.Load()
			if k == 0 {
				if cand == nil {
					cand, ck, chome, cp = s, k, home, p
				}
				break
			}
			st := k & stMask
			if uint32(k) == ip && st != stFree {
				switch st {
				case stBusy:
					return 0, true
				case stStatic:
					v := s.val.Load()
					if s.key.Load() != k {
						return 0, true
					}
					if v == val {
						return ARPRefreshed, false
					}
					n.moveRefused.Add(1)
					return ARPMoveRefused, false
				}
				return n.known(s, k, ip, val, port, kind, now)
			}
			if cand == nil && (st == stFree || st == stLearnt && now-s.seen.Load() > n.ttl) {
				// A reusable slot, or a dead entry of another address. If
				// that entry is learnt again before our compare-and-swap
				// below, its learner sees the key change and learns it
				// elsewhere.
				cand, ck, chome, cp = s, k, home, p
			}
		}
	}
	if !n.may(ip, kind, now) {
		n.unsolicited.Add(1)
		return ARPUnsolicited, false
	}
	if cand == nil {
		n.full.Add(1)
		return ARPFull, false
	}
	if !n.allow(port, now) {
		n.rateLimited.Add(1)
		return ARPRateLimited, false
	}
	if !n.write(cand, ck, ip, val, now, stLearnt) {
		return 0, true
	}
	if writtenHook != nil {
		writtenHook(cand)
	}
	// Another writer may have put ip on a path at the same time. The copy
	// ranked first (the first path before the second, on one path the
	// place nearer its start) stays: ours yields to an earlier one, and
	// later ones yield to ours. (A writer of an earlier copy that passed
	// our slot before we wrote it removes ours on its own walk forward:
	// each walk reads the other's slot after writing its own.)
	second := n.span != 0 && chome == b
	if n.has(ip, chome, 0, cp) || second && n.has(ip, a, 0, n.probe) {
		n.free(cand, ip)
		return 0, true // the next attempt finds the other copy
	}
	n.freeLater(ip, chome, cp+1)
	if n.span != 0 && !second {
		n.freeLater(ip, b, 0)
	}
	n.learnt.Add(1)
	return ARPLearnt, false
}

// has reports whether the path from home holds an entry of ip (in any
// state but free) at a position from from up to (not including) to.
func (n *Neighbors) has(ip uint32, home, from, to uint64) bool {
	for p := from; p < to; p++ {
		k := n.slots[(home+p)&n.mask].key.Load()
		if k == 0 {
			return false
		}
		if uint32(k) == ip && k&stMask != stFree {
			return true
		}
	}
	return false
}

// freeLater frees the learnt entries of ip on the path from home from
// position from on.
func (n *Neighbors) freeLater(ip uint32, home, from uint64) {
	for p := from; p < n.probe; p++ {
		s := &n.slots[(home+p)&n.mask]
		k := s.key.Load()
		if k == 0 {
			return
		}
		if uint32(k) == ip && k&stMask == stLearnt {
			n.free(s, ip)
		}
	}
}

// free makes slot s reusable if it holds a learnt entry of ip. It tries a
// few times when other writers change the slot meanwhile, then leaves it:
// a copy of an address ranked after another is never found by lookups,
// and its slot is reused once it expires.
func (n *Neighbors) free(s *nslot, ip uint32) {
	for range maxAttempts {
		k := s.key.Load()
		switch {
		case uint32(k) != ip || k&stMask == stFree || k&stMask == stStatic:
			return
		case k&stMask == stBusy:
			continue
		}
		if s.key.CompareAndSwap(k, (k&^(genOne-1))+genOne|stFree) {
			return
		}
	}
}

// known handles ip found learnt in slot s with key k.
func (n *Neighbors) known(s *nslot, k uint64, ip uint32, val uint64, port uint16, kind ARPKind, now int64) (r ARPResult, again bool) {
	v := s.val.Load()
	seen := s.seen.Load()
	if s.key.Load() != k {
		return 0, true
	}
	if knownHook != nil {
		knownHook()
	}
	if now-seen <= n.ttl {
		if v != val {
			n.moveRefused.Add(1)
			return ARPMoveRefused, false
		}
		if now-seen > n.refresh {
			// A compare-and-swap, not a store: should the slot have gone
			// to another address since we read it, its new seen is left
			// alone and the key check below sends us round again.
			s.seen.CompareAndSwap(seen, now)
			if s.key.Load() != k {
				return 0, true
			}
		}
		return ARPRefreshed, false
	}
	// The binding expired: the address is unbound, and this packet binds
	// it (to the same MAC and port or others) under the same rules as a
	// new one. Through busy, so that no reader pairs the old key with the
	// new value.
	if !n.may(ip, kind, now) {
		n.unsolicited.Add(1)
		return ARPUnsolicited, false
	}
	if !n.allow(port, now) {
		n.rateLimited.Add(1)
		return ARPRateLimited, false
	}
	if !n.write(s, k, ip, val, now, stLearnt) {
		return 0, true
	}
	n.learnt.Add(1)
	return ARPLearnt, false
}

// knownHook and lookupHook, if set (by tests only), run in ARP4 after it
// read an existing entry and before it writes it, and in Lookup4 after it
// matched a key and before it reads the value: tests use them to play
// another worker rewriting the slot at that instant.
var knownHook, lookupHook func()

// writtenHook, if set (by tests only), runs in ARP4 after it wrote a new
// entry into slot s and before it looks for other copies of the address.
var writtenHook func(s *nslot)

// allow takes one binding from port's budget at now, if there is one
// (a generic cell rate algorithm: the budget's state is the time at which
// it is full again, and a binding pushes that rateT further, up to rateTol
// ahead of now).
func (n *Neighbors) allow(port uint16, now int64) bool {
	if n.rateT == 0 {
		return true
	}
	b := &n.rate[int(port)%len(n.rate)].next
	for range maxAttempts {
		t := b.Load()
		base := max(t, now)
		if base-now > n.rateTol {
			return false
		}
		if b.CompareAndSwap(t, base+n.rateT) {
			return true
		}
	}
	return false
}

// ShouldRequest4 reports whether the caller should send an ARP request for
// ip (IPv4 as a big-endian uint32) at now: true at most once per interval
// for each address. A true answer also records the request, so that a
// reply from ip within the solicit window binds it (see ARP4). It
// allocates nothing and takes no lock.
//
// The limiter is a table of size last-request times, one per keyed hash of
// the address, claimed by compare-and-swap, so of several callers at once
// only one gets true. Addresses that share a slot share its limit: a
// second unresolved address in the same slot within an interval waits for
// the next one. So whatever the number of unresolved addresses (a scan of
// a connected subnet, say), the switch sends at most size ARP requests per
// interval, and a request's record stays for at least an interval.
func (n *Neighbors) ShouldRequest4(ip uint32, now, interval int64) bool {
	s := &n.req[n.reqIndex(ip)]
	l := s.t.Load()
	if l != never && now-l < interval {
		return false
	}
	if !s.t.CompareAndSwap(l, now) {
		return false
	}
	// Between the compare-and-swap and this store, a reply from the
	// slot's previous address is taken as solicited at the new time: that
	// address was asked for too, an interval or more ago.
	s.ip.Store(ip)
	return true
}

// solicited reports whether the switch asked for ip within the solicit
// window of now.
func (n *Neighbors) solicited(ip uint32, now int64) bool {
	s := &n.req[n.reqIndex(ip)]
	if s.ip.Load() != ip {
		return false
	}
	t := s.t.Load()
	return t != never && now-t <= n.window && t-now <= n.window
}
