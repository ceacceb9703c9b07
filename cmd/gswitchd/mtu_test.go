package main

import (
	"strings"
	"testing"
)

// TestCheckMTU: an MTU whose frames fit a UMEM frame passes; a larger one
// is refused with the port, the MTU and the fix named.
func TestCheckMTU(t *testing.T) {
	for _, c := range []struct {
		mtu, frame int
		want       string // "" = accepted
	}{
		{1500, 2048, ""},
		{1774, 2048, ""},
		{1775, 2048, "set frame_size: 4096 (MTUs up to 3822)"},
		{3000, 2048, "set frame_size: 4096"},
		{3822, 4096, ""},
		{3823, 4096, "multi-buffer"},
		{9000, 2048, "ip link set veth0 mtu 1774"},
		{9000, 4096, "ip link set veth0 mtu 3822); larger MTUs need AF_XDP multi-buffer"},
	} {
		err := checkMTU(3, "veth0", c.mtu, c.frame)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("MTU %d, frame %d: %v", c.mtu, c.frame, err)
		case c.want != "" && err == nil:
			t.Errorf("MTU %d, frame %d: accepted", c.mtu, c.frame)
		case c.want != "" && (!strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ports[3].interface: veth0 has MTU")):
			t.Errorf("MTU %d, frame %d: %v (want it to name the port and say %q)", c.mtu, c.frame, err, c.want)
		}
	}
}
