package udp

import (
	"net"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
)

// The server counts datagrams that are not gsperf segments, and still
// acknowledges the flow that arrives among them.
func TestServeCountsMalformedAndAcks(t *testing.T) {
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	var st ServerStats
	go func() { Serve(srv, stop, &st); close(done) }()
	c, err := net.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("not a gsperf segment"))
	c.Write(make([]byte, proto.HeaderLen)) // zeros: bad magic
	seg := make([]byte, proto.HeaderLen+100)
	(&proto.Header{Type: proto.TypeData, Flow: 9, Size: 100, Flags: proto.FlagFIN}).Encode(seg)
	transport.Fill(seg[proto.HeaderLen:], 9, 0)
	c.Write(seg)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no ack: %v", err)
	}
	h, _, err := proto.Decode(buf[:n])
	if err != nil || h.Type != proto.TypeAck || h.Ack != 100 {
		t.Fatalf("ack %+v, %v", h, err)
	}
	close(stop)
	<-done
	if st.Malformed != 2 || st.Flows != 1 || st.Complete != 1 || st.Bytes != 100 {
		t.Fatalf("server stats %+v", st)
	}
}
