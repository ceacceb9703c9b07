package l3

import (
	"encoding/binary"
	"strings"
	"testing"
)

// maxOps is the most operations one fuzz input runs.
const maxOps = 128

// FuzzNeighbors runs a hostile sequence of operations on a small cache:
// the input chooses the hash key and every address (so the fuzzer may
// crowd any path it likes), MACs, ports, kinds of ARP, requests, static
// entries and the clock. After each step it checks the cache against a
// model of what must hold:
//
//   - every address the model holds bound (or static) is found with its
//     MAC and port; no other is;
//   - each result is one the model allows: a bound address is refreshed
//     only by its own binding and never moved; an unbound one is bound
//     only by a packet of a kind that may (a reply only if asked for
//     within the window), only within its port's budget, and refused as
//     full only when both its paths hold no free slot;
//   - Bound4 tells a binding of this MAC and port from another one and
//     from none, and refreshes only the first, as ARP does;
//   - ShouldRequest4 says yes at most once per interval per slot;
//   - no address has two entries, each is reachable on one of its paths;
//   - the counters equal the results.
func FuzzNeighbors(f *testing.F) {
	f.Add([]byte("0123456789abcdef\x02\x05\x03\x00\x05\x00\x03\x05\x00\x00\x06\x11\x01\x05\x00"))
	f.Add([]byte("fedcba9876543210\x05\x09\x21\x00\x09\x22\x04\x09\x31\x01\x30\x00\x00\x09\x22\x03\x09\x00"))
	seed := make([]byte, 16, 16+3*maxOps)
	for i := range maxOps { // a flood of requests for us from one port, with time passing
		seed = append(seed, []byte{8, 8, 8, 4}[i%4], byte(i), 0x04)
	}
	f.Add(seed)
	f.Fuzz(fuzzNeighbors)
}

func fuzzNeighbors(t *testing.T, in []byte) {
	if len(in) < 16 {
		return
	}
	const (
		ttl, window    = 400, 6
		rateN, ratePer = 8, 16
		rateT          = ratePer / rateN
		rateTol        = rateT * (rateN - 1)
		buckets        = 2
	)
	key := [2]uint64{binary.LittleEndian.Uint64(in), binary.LittleEndian.Uint64(in[8:])}
	if key == [2]uint64{} {
		return // NewNeighbors draws a random key: not reproducible
	}
	size := 32 << (key[0] & 1) // 32 slots: two paths that cover the table; 64: two of four places
	n := mustNeighbors(t, size, ttl, HashKey(key), ARPRate(rateN, ratePer), Ports(buckets), SolicitWindow(window))
	type entry struct {
		val    uint64
		seen   int64
		static bool
	}
	type request struct {
		ip uint32
		t  int64
	}
	model := map[uint32]entry{}
	reqs := map[uint64]request{}
	budget := [buckets]int64{never, never}
	var results [ARPContended + 1]uint64
	now := int64(0)
	bound := func(ip uint32) (entry, bool) {
		e, ok := model[ip]
		return e, ok && (e.static || now-e.seen <= ttl)
	}
	in = in[16:]
	if len(in) > 3*maxOps {
		in = in[:3*maxOps] // long inputs add little and make minimizing slow
	}
	for len(in) >= 3 {
		op, x, y := in[0], in[1], in[2]
		in = in[3:]
		ip := a4("10.0.0.0") | uint32(x&0x7f) | uint32(y&0xc0)<<8 // 512 addresses
		if x == 0x80 {
			ip = 0
		}
		m, port := mac(2, y&0x0f), uint16(y>>4&3)
		val := pack(m, port)
		switch op % 8 {
		case 0, 1, 2, 3: // an ARP packet
			kind := ARPKind(op / 8 % 4) // arpAny too: Learn4's rules
			room := hasRoom(n, ip, now)
			r := n.ARP4(ip, m, port, kind, now)
			results[r]++
			e, isBound := bound(ip)
			req, asked := reqs[n.reqIndex(ip)]
			may := kind == ARPRequestForUs || kind == arpAny ||
				kind == ARPReply && asked && req.ip == ip && now-req.t <= window && req.t-now <= window
			b := int(port) % buckets
			var want ARPResult
			switch {
			case ip == 0:
				want = ARPIgnored
			case isBound && e.val == val:
				want = ARPRefreshed
				if !e.static && now-e.seen > ttl/8 {
					model[ip] = entry{val: val, seen: now}
				}
			case isBound:
				want = ARPMoveRefused
			case !may:
				want = ARPUnsolicited
			case !room:
				want = ARPFull
			case max(budget[b], now)-now > rateTol:
				want = ARPRateLimited
			default:
				want = ARPLearnt
				budget[b] = max(budget[b], now) + rateT
				model[ip] = entry{val: val, seen: now}
			}
			if r != want {
				t.Fatalf("ARP4(%s, %x, %d, kind %d) at %d = %v, want %v (model %+v bound %v)", addr4(ip), m, port, kind, now, r, want, e, isBound)
			}
		case 4:
			now += int64(x % 8)
		case 5:
			iv := int64(1 + y%8)
			i := n.reqIndex(ip)
			req, asked := reqs[i]
			want := !asked || now-req.t >= iv
			if got := n.ShouldRequest4(ip, now, iv); got != want {
				t.Fatalf("ShouldRequest4(%s, %d, %d) = %v (last request %+v)", addr4(ip), now, iv, got, req)
			}
			if want {
				reqs[i] = request{ip, now}
			}
		case 6:
			e, isBound := bound(ip)
			if op/8%2 == 1 { // a source guard's question: Bound4, which refreshes as ARP does
				want := Unbound
				switch {
				case isBound && e.val == val:
					want = BoundHere
					if !e.static && now-e.seen > ttl/8 {
						model[ip] = entry{val: val, seen: now}
					}
				case isBound:
					want = BoundElsewhere
				}
				if got := n.Bound4(ip, m, port, now); got != want {
					t.Fatalf("Bound4(%s, %x, %d) at %d = %v, want %v (model %+v bound %v)", addr4(ip), m, port, now, got, want, e, isBound)
				}
				continue
			}
			got, p, ok := n.Lookup4(ip, now)
			if ok != isBound || ok && pack(got, p) != e.val {
				t.Fatalf("Lookup4(%s) at %d = %x %d %v; model %+v bound %v", addr4(ip), now, got, p, ok, e, isBound)
			}
		case 7:
			if ip == 0 {
				continue
			}
			e, known := model[ip]
			err := n.Static(addr4(ip), m, port)
			switch {
			case known && e.static && e.val != val:
				if err == nil || !strings.Contains(err.Error(), "already set") {
					t.Fatalf("Static(%s) over another static entry: %v", addr4(ip), err)
				}
			case err != nil && strings.Contains(err.Error(), "no room"):
				if hasStaticRoom(n, ip) {
					t.Fatalf("Static(%s): %v, but a path has a free slot", addr4(ip), err)
				}
			case err != nil:
				t.Fatalf("Static(%s): %v", addr4(ip), err)
			default:
				model[ip] = entry{val: val, static: true}
			}
		}
		checkNeighbors(t, n)
	}
	for ip := range model {
		e, isBound := bound(ip)
		got, p, ok := n.Lookup4(ip, now)
		if ok != isBound || ok && pack(got, p) != e.val {
			t.Fatalf("at the end: Lookup4(%s) = %x %d %v; model %+v", addr4(ip), got, p, ok, e)
		}
	}
	c := n.Counters()
	if c.Learnt != results[ARPLearnt] || c.MoveRefused != results[ARPMoveRefused] || c.Unsolicited != results[ARPUnsolicited] ||
		c.RateLimited != results[ARPRateLimited] || c.Full != results[ARPFull] || results[ARPContended] != 0 {
		t.Fatalf("counters %+v, results %v", c, results)
	}
}

// hasRoom reports whether one of ip's paths has a slot ARP4 may take at
// now: empty, free, or an expired learnt entry.
func hasRoom(n *Neighbors, ip uint32, now int64) bool {
	return n.anySlot(ip, func(s *nslot, k uint64) bool {
		return k&stMask == stFree || k&stMask == stLearnt && now-s.seen.Load() > n.ttl
	})
}

// hasStaticRoom reports whether one of ip's paths has a slot Static may
// take: empty or free.
func hasStaticRoom(n *Neighbors, ip uint32) bool {
	return n.anySlot(ip, func(_ *nslot, k uint64) bool { return k&stMask == stFree })
}

// anySlot reports whether ok holds for a slot on one of ip's paths, up to
// the first empty one on each (for which it holds).
func (n *Neighbors) anySlot(ip uint32, ok func(*nslot, uint64) bool) bool {
	a, b := n.homes(ip)
	for _, home := range []uint64{a, b} {
		for p := uint64(0); p < n.probe; p++ {
			s := &n.slots[(home+p)&n.mask]
			if k := s.key.Load(); k == 0 || ok(s, k) {
				return true
			}
		}
	}
	return false
}

// checkNeighbors checks the structure: no address in two slots that are
// not free, none busy (nothing is in flight), each reachable from the
// start of one of its paths.
func checkNeighbors(t *testing.T, n *Neighbors) {
	t.Helper()
	at := map[uint32]int{}
	for i := range n.slots {
		k := n.slots[i].key.Load()
		st := k & stMask
		if k == 0 || st == stFree {
			continue
		}
		ip := uint32(k)
		if st == stBusy {
			t.Fatalf("slot %d (%s) busy with nothing in flight", i, addr4(ip))
		}
		if j, dup := at[ip]; dup {
			t.Fatalf("%s in slots %d and %d", addr4(ip), j, i)
		}
		at[ip] = i
		a, b := n.homes(ip)
		reach := false
		for _, home := range []uint64{a, b} {
			d := (uint64(i) - home) & n.mask
			if d >= n.probe {
				continue
			}
			reach = true
			for q := uint64(0); q < d; q++ {
				if n.slots[(home+q)&n.mask].key.Load() == 0 {
					reach = false
				}
			}
			if reach {
				break
			}
		}
		if !reach {
			t.Fatalf("%s in slot %d is not reachable from its homes %d, %d", addr4(ip), i, a, b)
		}
	}
}
