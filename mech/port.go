package mech

import (
	"fmt"
	"github.com/gswitch/gswitch/units"
	"net"
)

// Validator is implemented by config values that check themselves against
// the port they are for. The config loader runs Validate after decoding
// (with what the config says of the port), and a mechanism's New runs it
// again (Port.Info: what the switch built). Errors name the key (the
// loader prefixes ports[i].mechanisms.NAME.), the value, and the fix;
// Validate may fill in defaults that depend on the port.
type Validator interface {
	Validate(PortInfo) error
}

// PortInfo is what a mechanism's config validation may know of the port.
// A field the caller does not know is zero (a tool checking a mechanism's
// defaults passes only some).
type PortInfo struct {
	Name        string
	Role        Role
	RateBits    uint64 // egress line rate in bit/s (0: unlimited)
	Scheduler   string
	Queues      int    // data queues of the port's scheduler
	BufferBytes uint64 // the port's egress buffer
	DelayNs     int64  // the one-way delay of the port's link (its delay key)
	RTTNs       int64  // the port's base round-trip time (its rtt key)
	// Uplink says the port faces a higher tier of the fabric (leaf to
	// spine; the port's uplink key): mechanisms whose pauses must stay
	// up-down (BFC) take it as their default.
	Uplink bool
	// Timescale is the switch's time dilation K (its timescale key; 0 or
	// 1: none). The config loader has already put the mechanism's config
	// on this machine's clock (every units.Duration x K, every units.Rate
	// / K, except the fields tagged `timescale:"wall"`), and RateBits is
	// the machine's rate: a mechanism uses K only for the fabric times it
	// keeps as constants of its own (BFC's bitmap-period clamp). A default
	// given in the value Spec.Config returns scales with the file's
	// values; a fabric time Validate fills in must be multiplied by K.
	Timescale units.Timescale
}

// Role says what a port faces.
type Role uint8

// Roles.
const (
	// RoleHost faces end hosts: control frames of link-local types and BTS
	// arriving on it are forged and dropped.
	RoleHost Role = iota
	// RoleFabric faces another switch of the fabric: control frames are
	// handed to their mechanism.
	RoleFabric
)

func (r Role) String() string {
	if r == RoleFabric {
		return "fabric"
	}
	return "host"
}

// ParseRole reads host or fabric.
func ParseRole(s string) (Role, error) {
	switch s {
	case "", "host":
		return RoleHost, nil
	case "fabric":
		return RoleFabric, nil
	}
	return RoleHost, fmt.Errorf("%q is not a role (use host or fabric)", s)
}

// UnmarshalText implements encoding.TextUnmarshaler (the config's role
// key), as ParseRole.
func (r *Role) UnmarshalText(t []byte) error {
	v, err := ParseRole(string(t))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Port is a port of the switch as a mechanism sees it when it is built.
type Port struct {
	Index       int
	Name        string
	Role        Role
	MAC         net.HardwareAddr
	RateBits    uint64 // egress line rate (0 = unlimited)
	Queues      int    // data queues of the port's scheduler
	Scheduler   string
	BufferBytes uint64 // the port's egress buffer
	DelayNs     int64  // the link's configured one-way delay
	RTTNs       int64  // the port's base round-trip time (0: the switch was not told)
	Uplink      bool   // the port faces a higher tier (see PortInfo.Uplink)
	// Timescale is the switch's time dilation K (see PortInfo.Timescale).
	Timescale units.Timescale
	// View is the port's PortView, the one its egress-side hooks get, for
	// the switch's life.
	View   *PortView
	Config any // the mechanism's decoded config for this port; nil if not enabled here
}

// Info is what a Validator may know of the port.
func (p *Port) Info() PortInfo {
	return PortInfo{Name: p.Name, Role: p.Role, RateBits: p.RateBits, Scheduler: p.Scheduler, Queues: p.Queues,
		BufferBytes: p.BufferBytes, DelayNs: p.DelayNs, RTTNs: p.RTTNs, Uplink: p.Uplink, Timescale: p.Timescale}
}
