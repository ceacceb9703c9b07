package sfc

import (
	"net/netip"

	"github.com/gswitch/gswitch/mech"
)

// Flows lists, for a port in mode ingress_cache, the live entries of the
// switch's pause cache, at most max: the destinations (and DSCP) whose
// local senders are answered from the cache, with the pause left. The
// cache is switch-wide, so every such port lists the same entries; other
// ports list none (any goroutine: the cache's slots are atomics).
func (s *SFC) Flows(port, max int) []mech.FlowInfo {
	if port < 0 || port >= len(s.ports) || s.ports[port] == nil || s.ports[port].mode != ModeIngressCache || s.cache == nil || max <= 0 {
		return nil
	}
	now := s.sw.Now()
	var out []mech.FlowInfo
	s.cache.each(now, func(key uint64, end int64) bool {
		ip, dscp := cacheKeyParts(key)
		out = append(out, mech.FlowInfo{Dst: netip.AddrPortFrom(netip.AddrFrom4(ip), 0),
			State: map[string]any{"dscp": dscp, "pause_left_us": pauseUs(end - now)}})
		return len(out) < max
	})
	return out
}

// cacheKeyParts is the inverse of cacheKey.
func cacheKeyParts(k uint64) ([4]byte, uint8) {
	return [4]byte{byte(k >> 32), byte(k >> 24), byte(k >> 16), byte(k >> 8)}, uint8(k & 63)
}

var _ mech.FlowLister = (*SFC)(nil)
