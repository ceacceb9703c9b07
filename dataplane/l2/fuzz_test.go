package l2

import (
	"encoding/binary"
	"testing"
)

// FuzzTable runs a hostile sequence of operations on a small table: the
// input chooses the hash key and every MAC (so the fuzzer may crowd any
// path it likes), ports, the clock, sweeps and flushes. After each step it
// checks the table against a model of what must hold (the structure every
// few steps, as it is the slow part):
//
//   - the structure (checkTable): one entry per MAC, each reachable on one
//     of its paths, port counts equal to the slots held and within the limit;
//   - every MAC the model holds live is found on its port; no other is;
//   - each result is one the model allows: TableFull only when both paths
//     are all live (no entry is lost while its paths have room), PortFull
//     only at the limit, Moved and MoveRefused only for a MAC live on
//     another port, MoveRefused only within MoveHold of its last move, or
//     always in a sticky table (half the keys make one), which never moves;
//   - the counters equal the results.
func FuzzTable(f *testing.F) {
	f.Add([]byte("0123456789abcdef\x00\x01\x02\x00\x01\x03\x01\x01\x00\x02\x05\x00"))
	f.Add([]byte("fedcba9876543210\x00\x07\x01\x00\x07\x02\x00\x07\x01\x02\x30\x00\x03\x00\x00\x01\x07\x00"))
	seed := make([]byte, 16, 16+3*maxOps)
	for i := range maxOps { // a flood from one port, with time passing and sweeps
		seed = append(seed, []byte{0, 0, 0, 4, 5}[i%5], byte(i), 1)
	}
	f.Add(seed)
	f.Fuzz(fuzzTable)
}

// maxOps is the most operations one fuzz input runs.
const maxOps = 128

func fuzzTable(t *testing.T, in []byte) {
	if len(in) < 16 {
		return
	}
	const (
		ports, limit = 3, 12
		aging, hold  = 200, 6
		refrsh       = aging / 8
	)
	key := [2]uint64{binary.LittleEndian.Uint64(in), binary.LittleEndian.Uint64(in[8:])}
	size := 32 << (key[0] & 1) // 32 slots: two paths that cover the table; 64: two of four places
	sticky := key[1]&1 != 0
	tb := mustNew(t, Config{Size: size, Aging: aging, Ports: ports, PortLimit: limit, MoveHold: hold, HashKey: key, Sticky: sticky})
	if key == [2]uint64{} {
		return // New draws a random key: not reproducible
	}
	type entry struct {
		port uint16
		seen int64
	}
	model := map[uint64]entry{}
	lastMove := map[uint64]int64{}
	var results [BadPort + 1]uint64
	now := int64(0)
	live := func(m uint64) (entry, bool) {
		e, ok := model[m]
		return e, ok && now-e.seen <= aging
	}
	in = in[16:]
	if len(in) > 3*maxOps {
		in = in[:3*maxOps] // long inputs add little and make minimizing slow
	}
	for step := 0; len(in) >= 3; step++ {
		op, x, y := in[0], in[1], in[2]
		in = in[3:]
		mac := uint64(x&0x7f) | uint64(y&0x80)<<40 // 256 MACs, some far apart
		switch op % 8 {
		case 0, 1, 2, 3: // a frame from mac on a port (rarely port 3, which does not exist)
			port := uint16(y % 3)
			if y == 0xff {
				port = 3
			}
			r := tb.Learn(mac, port, now)
			results[r]++
			e, isLive := live(mac)
			ok := true
			switch r {
			case BadPort:
				ok = port >= ports
			case Refreshed:
				ok = isLive && e.port == port
				if ok && now-e.seen > refrsh {
					model[mac] = entry{port, now}
				}
			case Learned:
				ok = !isLive
				model[mac] = entry{port, now}
			case Moved:
				ok = !sticky && isLive && e.port != port
				model[mac] = entry{port, now}
				lastMove[mac] = now
			case MoveRefused:
				mv, moved := lastMove[mac]
				ok = isLive && e.port != port && (sticky || moved && now-mv < hold)
			case PortFull:
				ok = !(isLive && e.port == port) && tb.held[port].n.Load() >= limit
			case TableFull:
				ok = !isLive && pathsFull(tb, mac, now)
			case Contended:
				ok = false // one goroutine: nothing to contend with
			}
			if !ok {
				t.Fatalf("Learn(%012x, %d) at %d = %v; model: %+v live %v", mac, port, now, r, e, isLive)
			}
		case 4:
			now += int64(x % 8)
		case 5:
			if x%4 != 0 {
				tb.Sweep(now)
			} else {
				port := uint16(y % ports)
				tb.Flush(port)
				for m, e := range model {
					if e.port == port {
						delete(model, m)
					}
				}
			}
		case 6, 7:
			e, isLive := live(mac)
			if p, ok := tb.Lookup(mac, now); ok != isLive || ok && p != e.port {
				t.Fatalf("Lookup(%012x) at %d = %d %v; model: %+v live %v", mac, now, p, ok, e, isLive)
			}
		}
		if step%8 == 0 {
			checkTable(t, tb, true)
		}
	}
	checkTable(t, tb, true)
	for m, e := range model {
		if p, ok := tb.Lookup(m, now); (now-e.seen <= aging) != ok || ok && p != e.port {
			t.Fatalf("at the end: Lookup(%012x) = %d %v; model: %+v at %d", m, p, ok, e, now)
		}
	}
	st := tb.Stats(now)
	if st.Learned != results[Learned] || st.Moves != results[Moved] || st.MoveRefused != results[MoveRefused] ||
		st.PortFull != results[PortFull] || st.TableFull != results[TableFull] || st.Contended != 0 {
		t.Fatalf("stats %+v, results %v", st, results)
	}
}

// pathsFull reports whether every slot on both of mac's paths holds a live
// entry at now.
func pathsFull(tb *Table, mac uint64, now int64) bool {
	a, b := tb.homes(mac)
	for _, home := range []uint64{a, b} {
		for p := uint64(0); p < tb.probe; p++ {
			s := &tb.slots[(home+p)&tb.mask]
			if k := s.key.Load(); k == 0 || uint16(k) >= special || now-s.seen.Load() > tb.aging {
				return false
			}
		}
	}
	return true
}
