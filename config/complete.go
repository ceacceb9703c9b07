package config

import (
	"fmt"
	"reflect"

	"github.com/gswitch/gswitch/units"
)

// Complete fills in a config built in Go the way Parse fills in a file,
// and runs Parse's checks: what Parse returns and what Complete leaves are
// alike, so that the dataplane takes either and defaults nothing itself.
//
// A Go value cannot tell a key left out from a key set to 0, so a zero
// field reads as follows. Where 0 is no valid value (switch_id, frames,
// frame_size, the modes, metrics, mac_table's size and aging) it takes the
// key's default; where 0 means something (alpha: no dynamic threshold,
// catchup: none, spin: none, move_hold: none, capture_memory: no capture,
// a port's rtt: none) it keeps that meaning: start from Defaults for the
// file's defaults of those. A port's keys that validation fills in (name,
// scheduler, queues, quantum, buffer, classify) are filled in as for a
// file.
//
// A port built for a link in memory needs no interface: Complete checks
// it as if it had one of its own (named memN, N its index, which also
// names the port if it has no name) and leaves its interface empty.
func (c *Config) Complete() error {
	orDefault(&c.MACTable.Aging, units.Duration(DefaultAging))
	if c.Timescale == 0 {
		c.Timescale = 1 // no timescale: the values are this machine's
	}
	var mem []int
	for i := range c.Ports {
		if c.Ports[i].Interface == "" {
			c.Ports[i].Interface = fmt.Sprintf("mem%d", i)
			mem = append(mem, i)
		}
	}
	err := checkRanges(reflect.ValueOf(c).Elem(), "")
	if err == nil {
		err = c.validate()
	}
	for _, i := range mem {
		c.Ports[i].Interface = ""
	}
	return err
}
