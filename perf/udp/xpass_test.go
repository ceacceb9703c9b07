package udp

import (
	"strconv"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/xpass"
)

// TestXPassOverLoopback runs an xpass server and two xpass flows over the
// loopback: both complete with their bytes intact (the server checks the
// pattern), the data rate stays within what the credits allow (the host's
// NIC meters them to 84/1622 of -xp-link), and the server stops every
// flow's credits.
func TestXPassOverLoopback(t *testing.T) {
	conn, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv := NewServer(ServerConfig{})
	p := xpass.DefaultParams(200e6)
	p.MSS = MSS
	stop := make(chan struct{})
	done := make(chan XPassStats)
	go func() {
		st, err := ServeXPass(conn, srv, XPassConfig{Params: p, AckEvery: 4, Spin: 20 * time.Microsecond, Seed: 1}, stop, nil, 0)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	const size = 4 << 20
	plan := Plan{Src: "c", Dsts: []string{conn.LocalAddr().String()}, FixedSize: size, Flows: 2, RateBits: 200e6, Arrivals: "burst",
		Mode: transport.XPass, Timeout: 20 * time.Second, Timeline: 10 * time.Millisecond}
	start := time.Now()
	recs, err := Run(plan)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	st := <-done
	ss := srv.Stats()
	t.Logf("%v in %v; server: %v\n%v", summary(recs), took, ss, st)
	for _, r := range recs {
		if !r.Complete {
			t.Fatalf("flow %d incomplete", r.ID)
		}
	}
	if ss.Complete != 2 || ss.Corrupt != 0 || ss.Bytes != 2*size {
		t.Fatalf("server: %v", ss)
	}
	// At most 200 Mbit/s x 84/1622 of credits: 2 x 4 MiB of 1408-byte segments take at least 0.37 s.
	minTime := float64(2*size/MSS) / (float64(xpass.MaxCreditRate(200e6)) / 84)
	if took.Seconds() < minTime*0.95 {
		t.Fatalf("%v for %d segments: faster than the credits allow (%.3f s)", took, 2*size/MSS, minTime)
	}
	if st.Host.Active != 0 || st.Host.Stops < 2 {
		t.Fatalf("credits not stopped: %+v", st.Host)
	}
}

func summary(recs []results.Flow) string {
	s := ""
	for _, r := range recs {
		s += " " + time.Duration(r.FCTNs).String()
		if r.Mech != nil {
			s += " " + fmtMech(r.Mech)
		}
	}
	return s
}

func fmtMech(m map[string]uint64) string {
	return "credits " + itoa(m["credits"]) + " wasted " + itoa(m["wasted"]) + " requests " + itoa(m["requests"]) + " first credit after " + time.Duration(m["first_credit_ns"]).String()
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
