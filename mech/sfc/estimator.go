package sfc

import (
	"net/netip"
	"sync/atomic"
)

// estimator is the optional incast estimator of section 3.4 on one egress
// port: for each configured destination ("proactively created entries for
// potential incast destinations") a discounting rate estimator (DRE) of the
// bytes local senders sent toward it in the last tau: every tau/8 the count
// is multiplied by 7/8, and each packet adds its length, so in steady state
// it holds rate x tau. The remote queue the senders build is estimated as
// the count minus what the destination's link drains in tau (tau x R), and
// the pause that drains it to the target depth is
//
//	local_estimate = max(0, bytes - tau*R - Q_Tg) / R
//
// with tau = rtt, R = estimator_rate (default the port's rate) and Q_Tg one
// BDP at R. It sees only this switch's senders (and, behind ECMP uplinks,
// only this port's share of them), so it can underestimate the remote queue
// but not overestimate it, as the paper says.
//
// Owned by the port's egress worker (Admit); the counts are published for
// metrics.
type estimator struct {
	dsts  map[uint32]*dre // read-only after New
	step  int64           // tau/8
	tau   int64
	rate  uint64 // bits/s
	drain float64
	qtg   float64
}

type dre struct {
	ip    netip.Addr
	bytes float64
	at    int64 // decay step of bytes
	pub   atomic.Uint64
}

func newEstimator(dsts []netip.Addr, tau int64, rateBits uint64) *estimator {
	e := &estimator{dsts: map[uint32]*dre{}, step: max(tau/8, 1), tau: tau, rate: rateBits}
	e.drain = float64(tau) * float64(rateBits) / 8e9
	e.qtg = e.drain
	for _, a := range dsts {
		b := a.As4()
		e.dsts[be32(b)] = &dre{ip: a}
	}
	return e
}

func be32(b [4]byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// decay7of8 holds (7/8)^i.
var decay7of8 = func() (t [64]float64) {
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 7 / 8
	}
	return t
}()

// observe counts a packet of n bytes toward dst at now and returns the
// pause (ns) the estimate asks for, 0 if dst has no entry or no queue is
// expected.
func (e *estimator) observe(dst uint32, n uint32, now int64) int64 {
	d := e.dsts[dst]
	if d == nil {
		return 0
	}
	st := now / e.step
	if k := st - d.at; k > 0 {
		if k >= int64(len(decay7of8)) {
			d.bytes = 0
		} else {
			d.bytes *= decay7of8[k]
		}
		d.at = st
	}
	d.bytes += float64(n)
	d.pub.Store(uint64(d.bytes))
	excess := d.bytes - e.drain - e.qtg
	if excess <= 0 {
		return 0
	}
	return int64(excess * 8e9 / float64(e.rate))
}
