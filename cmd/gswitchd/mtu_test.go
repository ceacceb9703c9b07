package main

import (
	"strings"
	"testing"
)

// TestCheckMTU: an MTU whose frames fit a UMEM frame needs no chains; a
// larger one up to what a jumbo slot may hold travels as multi-buffer
// chains; beyond that it is refused with the port, the MTU and the fix.
func TestCheckMTU(t *testing.T) {
	for _, c := range []struct {
		mtu, frame int
		sg         bool
		want       string // "" = accepted
	}{
		{1500, 2048, false, ""},
		{1774, 2048, false, ""},
		{1775, 2048, true, ""},
		{3822, 4096, false, ""},
		{3823, 4096, true, ""},
		{9000, 2048, true, ""},
		{9000, 4096, true, ""},
		{9198, 2048, true, ""},
		{9199, 2048, false, "ip link set veth0 mtu 9198"},
	} {
		sg, err := checkMTU(3, "veth0", c.mtu, c.frame)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("MTU %d, frame %d: %v", c.mtu, c.frame, err)
		case c.want == "" && sg != c.sg:
			t.Errorf("MTU %d, frame %d: multi-buffer %v, want %v", c.mtu, c.frame, sg, c.sg)
		case c.want != "" && err == nil:
			t.Errorf("MTU %d, frame %d: accepted", c.mtu, c.frame)
		case c.want != "" && (!strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ports[3].interface: veth0 has MTU")):
			t.Errorf("MTU %d, frame %d: %v (want it to name the port and say %q)", c.mtu, c.frame, err, c.want)
		}
	}
}
