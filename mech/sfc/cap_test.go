package sfc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/sfc"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

// injectBTS sends sw1 a cacheable BTS about h1's flow from sw2 (on sw1's
// uplink) carrying pause microseconds: what a fabric neighbour, or a
// forged BTS that got into the fabric, delivers.
func injectBTS(t *testing.T, d *dumbbell, pause uint32) {
	t.Helper()
	b := make([]byte, wire.MaxBTSFrameLen)
	n, err := wire.BuildBTS(b, wire.MACs{Dst: mac6(portMAC(sw1, pUp)), Src: mac6(portMAC(sw2, pDown))}, wire.DefaultBTSDSCP,
		fromH1(4000, 77), 14, 34, wire.BTS{Flags: wire.BTSCacheable, Pause: pause, Switch: 2})
	if err != nil {
		t.Fatal(err)
	}
	d.a.Links[pUp].Inject(b[:n])
	d.f.Settle()
}

// TestCacheCapsAnHour: a cacheable BTS with a pause of an hour reaches
// sw1 from the fabric. sw1's cache keeps at most max_pause (default 256 x
// rtt: 2.56 s at the tests' rtt of 10 ms), and the BTS it then sends a
// local sender toward that destination carries no more. Before the cap
// the cache kept the hour and paused every local sender toward r for it.
func TestCacheCapsAnHour(t *testing.T) {
	d := newDumbbell(t, conf("ingress_cache"), conf("ingress_cache"))
	injectBTS(t, d, 3600e6)
	const most = 256 * 10 * time.Millisecond
	if rem := time.Duration(d.s1.CacheRemaining(r, 0)); rem == 0 || rem > most {
		t.Fatalf("sw1 caches a pause of %v for r after a BTS of an hour, want at most %v", rem, most)
	}
	d.a.Links[pH2].Sent = nil
	d.a.Links[pH2].Inject(fromH2(6001, 89, 0))
	d.f.Settle()
	bts, _ := btsOf(t, d.a.Links[pH2].Sent)
	if len(bts) != 1 || time.Duration(bts[0].Pause)*time.Microsecond > most {
		t.Fatalf("h2's packet toward r got %+v, want one BTS of at most %v", bts, most)
	}
}

// TestCongestedSwitchCapsThePause: at rtt 100 us (max_pause 256 x rtt =
// 25.6 ms) a queue that would take 39 ms to drain sends BTS of at most
// 25.6 ms. Before the cap the pause was the whole drain time, however
// long.
func TestCongestedSwitchCapsThePause(t *testing.T) {
	c2 := conf("ingress")
	c2.RTT = units.Duration(100 * time.Microsecond)
	d := newDumbbell(t, conf("ingress"), c2)
	for i := 0; i < 40; i++ {
		d.a.Links[pH1].Inject(fromH1(uint16(1000+i), uint64(i)))
	}
	d.f.Settle()
	bts, _ := btsOf(t, d.a.Links[pH1].Sent)
	const most = 25600 // us
	longest := uint32(0)
	for _, m := range bts {
		longest = max(longest, m.Pause)
	}
	if len(bts) < 30 || longest != most {
		t.Fatalf("%d BTS, the longest %d us; want the longest cut to %d us", len(bts), longest, most)
	}
}

// TestMaxPauseKey: a max_pause set in the config is what the cache keeps
// of a longer BTS, and the cut is counted on the port it arrived on; a
// BTS within it is kept as it came.
func TestMaxPauseKey(t *testing.T) {
	c1 := conf("ingress_cache")
	c1.MaxPause = units.Duration(5 * time.Millisecond)
	d := newDumbbell(t, c1, conf("ingress_cache"))
	injectBTS(t, d, 3000)
	if rem := d.s1.CacheRemaining(r, 0); rem != 3e6 {
		t.Fatalf("a pause within max_pause: cached %d ns, want 3 ms", rem)
	}
	injectBTS(t, d, 3600e6)
	if rem := d.s1.CacheRemaining(r, 0); rem != 5e6 {
		t.Fatalf("cached %d ns after a BTS of an hour, want max_pause, 5 ms", rem)
	}
	if sent, rx := d.s1.Capped(pUp); sent != 0 || rx != 1 {
		t.Fatalf("capped on sw1's uplink: sent %d, received %d; want 0, 1", sent, rx)
	}
}

// TestMaxPauseValidation: max_pause is checked against its range, and the
// error names the key, the value and the bounds.
func TestMaxPauseValidation(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{500 * time.Nanosecond, "max_pause: 500ns out of range (1us to 1h11m34.967295s"},
		{2 * time.Hour, "max_pause: 2h0m0s out of range"},
	} {
		cf := sfc.NewConfig()
		cf.MaxPause = units.Duration(c.d)
		err := cf.Validate(mech.PortInfo{RateBits: 1e9})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("max_pause %v: %v, want %q...", c.d, err, c.want)
		}
	}
	cf := sfc.NewConfig()
	cf.RTT = units.Duration(time.Second) // the default max_pause, 256 s, is within the range
	if err := cf.Validate(mech.PortInfo{RateBits: 1e9}); err != nil {
		t.Fatal(err)
	}
	if sfc.MaxPauseFor(450*time.Microsecond) != 115200*time.Microsecond {
		t.Fatal("the default is not 256 rtt")
	}
}
