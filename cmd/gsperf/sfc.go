package main

import (
	"net"

	"github.com/gswitch/gswitch/perf/sfc"
	"github.com/gswitch/gswitch/perf/transport"
)

// sfcGate pauses each flow of the client on the BTS frames l receives.
func sfcGate(l *sfc.Listener) func(id uint64, conn *net.UDPConn, clock func() int64) (transport.Gate, func(), error) {
	return func(id uint64, conn *net.UDPConn, clock func() int64) (transport.Gate, func(), error) {
		g, done, err := l.Register(id, conn.LocalAddr().(*net.UDPAddr), conn.RemoteAddr().(*net.UDPAddr), clock)
		if err != nil {
			return nil, nil, err
		}
		return g, done, nil
	}
}
