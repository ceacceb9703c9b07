package netns

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/topo"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ExpressPass across gswitchd processes: topologies from
// topologies/expresspass/ (every port running ExpressPass), brought up
// under a random name and metrics base, gsperf -mode xpass on the hosts.

// xpRate is the line rate of every link in these tests: the 2-core machine
// times credits 26 µs apart at 200 Mbit/s (13 µs at 1 Gbit/s is below what
// its hosts and switches keep, see docs/results.md).
const xpRate = "200Mbit"

type xpFabric struct {
	t  *testing.T
	r  *topo.Running
	sw map[string]*Switch // by switch name, for Scrape
}

// upXP brings the topology file up under a name of its own (random) with
// every link at rate; Running.Down at cleanup removes it, also when the
// test fails.
func upXP(t *testing.T, file, rate string) *xpFabric {
	t.Helper()
	requireNetns(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "topologies", "expresspass", file))
	if err != nil {
		t.Fatal(err)
	}
	id := randID()
	base := 20000 + int(id[0]^id[1])*100 + int(id[2])%64*10
	s := regexp.MustCompile(`(?m)^name: \w+`).ReplaceAllString(string(b), "name: x"+id[:5])
	s = regexp.MustCompile(`(?m)^metrics_base: \d+`).ReplaceAllString(s, "metrics_base: "+strconv.Itoa(base))
	s = regexp.MustCompile(`rate: \w+`).ReplaceAllString(s, "rate: "+rate)
	tp, err := topo.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := topo.Up(ctx, tp, topo.UpOptions{Gswitchd: gswitchdBin, StateDir: t.TempDir(), Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := &xpFabric{t: t, r: r, sw: map[string]*Switch{}}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range r.Switches {
				if b, err := os.ReadFile(s.Log); err == nil {
					t.Logf("%s log:\n%s", s.Name, lastLines(string(b), 20))
				}
			}
		}
		if err := r.Down(); err != nil {
			t.Errorf("topology down: %v", err)
		}
	})
	for _, s := range r.Switches {
		f.sw[s.Name] = &Switch{t: t, Metrics: s.Metrics}
	}
	return f
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func (f *xpFabric) addr(host string) string {
	h := f.r.Host(host)
	if h == nil {
		f.t.Fatalf("no host %s", host)
	}
	return h.Addr.Addr().String()
}

// start runs a command in host; the returned function waits for it (or
// signals it first) and returns its output. The process is killed at
// cleanup if still running.
func (f *xpFabric) start(host string, sig os.Signal, name string, args ...string) func() string {
	f.t.Helper()
	var out bytes.Buffer
	cmd := f.r.Exec(context.Background(), host, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return func() string {
		if sig != nil {
			cmd.Process.Signal(sig)
		}
		cmd.Wait()
		return out.String()
	}
}

// scrapeAll returns every switch's samples, histogram buckets included
// (as name_bucket{le="...",labels...}).
func (f *xpFabric) scrapeAll() map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for name, s := range f.sw {
		m[name] = s.Scrape()
		for k, v := range f.histograms(s.Metrics) {
			m[name][k] = v
		}
	}
	return m
}

// histograms reads the histogram buckets of a metrics endpoint.
func (f *xpFabric) histograms(addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bufio.NewReader(resp.Body))
	if err != nil {
		f.t.Fatal(err)
	}
	m := map[string]float64{}
	for name, mf := range mfs {
		for _, s := range mf.Metric {
			if s.Histogram == nil {
				continue
			}
			var ls []string
			for _, l := range s.Label {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			for _, b := range s.Histogram.Bucket {
				m[fmt.Sprintf(`%s_bucket{le="%g",%s}`, name, b.GetUpperBound(), strings.Join(ls, ","))] = float64(b.GetCumulativeCount())
			}
			m[fmt.Sprintf(`%s_bucket{le="+Inf",%s}`, name, strings.Join(ls, ","))] = float64(s.Histogram.GetSampleCount())
		}
	}
	return m
}

// xpFlow is what a test asks of one sender: a flow from host to dst.
type xpFlow struct{ src, dst string }

// xpRun is a run's outcome: the flows' records and the switches' samples
// before and after.
type xpRun struct {
	flows         []results.Flow
	before, after map[string]map[string]float64
	servers       map[string]string // server output by receiver
}

// runXP starts an xpass server in every receiver (-xp-naive if naive) and
// one client per flow, all starting at the same instant, each sending
// size bytes, and waits for them.
func (f *xpFabric) runXP(flows []xpFlow, size int64, naive bool) xpRun {
	f.t.Helper()
	stops := map[string]func() string{}
	for _, fl := range flows {
		if stops[fl.dst] != nil {
			continue
		}
		args := []string{"server", "-mode", "xpass", "-bind", f.addr(fl.dst) + ":5500", "-xp-link", xpRate, "-report", "0"}
		if naive {
			args = append(args, "-xp-naive")
		}
		stops[fl.dst] = f.start(fl.dst, syscall.SIGTERM, gsperfBin, args...)
	}
	time.Sleep(300 * time.Millisecond)
	run := xpRun{before: f.scrapeAll(), servers: map[string]string{}}
	dir := f.t.TempDir()
	at := time.Now().Add(3 * time.Second).UnixNano() // process start-up on a busy 2-core machine takes a while
	var waits []func() string
	for i, fl := range flows {
		waits = append(waits, f.start(fl.src, nil, gsperfBin, "client", "-mode", "xpass", "-src", fl.src,
			"-to", f.addr(fl.dst)+":5500", "-size", strconv.FormatInt(size, 10), "-flows", "1", "-arrivals", "burst",
			"-rate", xpRate, "-timeline", "100ms", "-timeout", "40s", "-id-base", strconv.Itoa((i+1)*1000),
			"-at", strconv.FormatInt(at, 10), "-out", filepath.Join(dir, fmt.Sprintf("f%d.json", i))))
	}
	var outs []string
	for _, w := range waits {
		outs = append(outs, w())
	}
	time.Sleep(200 * time.Millisecond)
	run.after = f.scrapeAll()
	for dst, stop := range stops {
		run.servers[dst] = stop()
	}
	for i := range flows {
		r, err := results.ReadJSON(filepath.Join(dir, fmt.Sprintf("f%d.json", i)))
		if err != nil || len(r.Flows) != 1 {
			f.t.Fatalf("flow %d (%v): %v\n%s", i, flows[i], err, outs[i])
		}
		run.flows = append(run.flows, r.Flows[0])
	}
	return run
}

// delta is after - before of one switch's sample.
func (r xpRun) delta(sw, key string) float64 { return r.after[sw][key] - r.before[sw][key] }

// dataDrops sums every drop on every switch but the credit lanes' (lane_full).
func (r xpRun) dataDrops() (float64, []string) {
	var n float64
	var where []string
	for sw, m := range r.after {
		for k, v := range m {
			if strings.HasPrefix(k, "gswitch_drops_total{") && !strings.Contains(k, `reason="lane_full"`) {
				if d := v - r.before[sw][k]; d > 0 {
					n += d
					where = append(where, fmt.Sprintf("%s %s %.0f", sw, k, d))
				}
			}
		}
	}
	return n, where
}

// creditDrops sums the credits the switches' credit lanes dropped.
func (r xpRun) creditDrops() float64 {
	var n float64
	for sw, m := range r.after {
		for k := range m {
			if strings.HasPrefix(k, "gswitch_expresspass_credits_dropped_total{") {
				n += r.delta(sw, k)
			}
		}
	}
	return n
}

// queueP99 is the 99th percentile (a histogram bucket's bound) and the
// largest bucket bound of the data-queue depths that data packets found on
// sw's port during the run, and how many packets arrived.
func (r xpRun) queueP99(sw, port string) (p99, most, count float64) {
	prefix := fmt.Sprintf(`gswitch_expresspass_data_queue_packets_bucket{le="`)
	type bucket struct{ le, n float64 }
	var bs []bucket
	for k := range r.after[sw] {
		if !strings.HasPrefix(k, prefix) || !strings.HasSuffix(k, fmt.Sprintf(`",port=%q}`, port)) {
			continue
		}
		le := strings.TrimSuffix(strings.TrimPrefix(k, prefix), fmt.Sprintf(`",port=%q}`, port))
		v := math.Inf(1)
		if le != "+Inf" {
			v, _ = strconv.ParseFloat(le, 64)
		}
		bs = append(bs, bucket{v, r.delta(sw, k)})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 {
		return 0, 0, 0
	}
	count = bs[len(bs)-1].n
	p99, most = math.NaN(), 0
	prev := 0.0
	for _, b := range bs {
		if math.IsNaN(p99) && b.n >= 0.99*count {
			p99 = b.le
		}
		if b.n > prev {
			most = b.le
		}
		prev = b.n
	}
	return p99, most, count
}

// windowRates is each flow's goodput (bit/s) between from and to after the
// common start, from the clients' timelines (100 ms steps).
func windowRates(flows []results.Flow, from, to time.Duration) []float64 {
	var out []float64
	for _, fl := range flows {
		at := func(d time.Duration) float64 {
			i := int(d/(100*time.Millisecond)) - 1
			if len(fl.Timeline) == 0 {
				return 0
			}
			return float64(fl.Timeline[min(max(i, 0), len(fl.Timeline)-1)])
		}
		out = append(out, (at(to)-at(from))*8/(to-from).Seconds())
	}
	return out
}

// tcpRun runs one iperf3 TCP flow per sender to dst for secs seconds and
// returns the switches' samples before and after.
func (f *xpFabric) tcpRun(srcs []string, dst string, secs int) xpRun {
	f.t.Helper()
	for i := range srcs {
		f.start(dst, syscall.SIGTERM, "iperf3", "-s", "-B", f.addr(dst), "-p", strconv.Itoa(5201+i))
	}
	time.Sleep(500 * time.Millisecond)
	run := xpRun{before: f.scrapeAll()}
	var wg sync.WaitGroup
	outs := make([]string, len(srcs))
	for i, s := range srcs {
		wg.Add(1)
		go func(i int, s string) {
			defer wg.Done()
			out, _ := f.r.Exec(context.Background(), s, "iperf3", "-c", f.addr(dst), "-p", strconv.Itoa(5201+i), "-t", strconv.Itoa(secs)).CombinedOutput()
			outs[i] = string(out)
		}(i, s)
	}
	wg.Wait()
	run.after = f.scrapeAll()
	return run
}

// xpIncast: N senders, one flow each, into one receiver behind a second
// switch; every link at xpRate. ExpressPass: no data drop anywhere, the
// senders share fairly (Jain >= 0.95 over a second in the middle), the
// data queues at the two bottleneck ports stay a few packets deep (p99),
// and credits were dropped (the switches' meters did their job). The same
// senders with iperf3 TCP fill the shared port's queue.
func xpIncast(t *testing.T, n int) {
	f := upXP(t, "incast.yaml", xpRate)
	var flows []xpFlow
	var srcs []string
	for i := 1; i <= n; i++ {
		flows = append(flows, xpFlow{fmt.Sprintf("s%d", i), "r1"})
		srcs = append(srcs, fmt.Sprintf("s%d", i))
	}
	// Each flow's fair share for about 3 s: 200 Mbit/s x 1408/1538 of payload x 95% (5% goes to credits).
	size := int64(200e6 / 8 * 1408 / 1538 * 0.95 * 3 / float64(n))
	run := f.runXP(flows, size, false)
	for i, fl := range run.flows {
		if !fl.Complete {
			t.Errorf("flow %d from %s did not complete: %+v", i, flows[i].src, fl.Mech)
		}
	}
	drops, where := run.dataDrops()
	rates := windowRates(run.flows, 500*time.Millisecond, 1500*time.Millisecond)
	jain := fairness.Jain(rates)
	var sum float64
	for _, r := range rates {
		sum += r
	}
	p99a, maxa, na := run.queueP99("sw1", "sw2")
	p99b, maxb, nb := run.queueP99("sw2", "r1")
	t.Logf("%d senders: goodput %.1f Mbit/s in [0.5 s, 1.5 s], Jain %.3f; data drops %.0f; credit drops %.0f; "+
		"data queue sw1->sw2 p99 %.0f max %.0f (%.0f packets), sw2->r1 p99 %.0f max %.0f (%.0f packets)",
		n, sum/1e6, jain, drops, run.creditDrops(), p99a, maxa, na, p99b, maxb, nb)
	t.Logf("receiver: %s", lastLines(run.servers["r1"], 2))
	tcp := f.tcpRun(srcs, "r1", 3)
	tp99, tmax, tn := tcp.queueP99("sw1", "sw2")
	tdrops, _ := tcp.dataDrops()
	t.Logf("TCP (cubic), the same %d senders for 3 s: data queue sw1->sw2 p99 %.0f max %.0f (%.0f packets), %.0f drops", n, tp99, tmax, tn, tdrops)
	if drops != 0 {
		t.Errorf("ExpressPass dropped data: %v", where)
	}
	if jain < 0.95 {
		t.Errorf("Jain %.3f over the senders' rates %v", jain, rates)
	}
	if run.creditDrops() == 0 {
		t.Error("no credit was dropped: the meters did not bind")
	}
	if p99a > 16 || p99b > 16 {
		t.Errorf("data queue p99 %.0f and %.0f packets: want a few", p99a, p99b)
	}
	if tp99 < 4*max(p99a, 4) {
		t.Errorf("TCP's p99 queue %.0f is not well above ExpressPass's %.0f", tp99, p99a)
	}
}

func TestXPassIncast8(t *testing.T)  { xpIncast(t, 8) }
func TestXPassIncast16(t *testing.T) { xpIncast(t, 16) }

// TestXPassParkingLot (the paper's Fig. 4b): the long flow crosses both
// links, p1 link 1, p2 link 2. Naive credits leave link 2 under-used (the
// long flow gets about a third of it); the feedback loop brings link 2's
// use up.
func TestXPassParkingLot(t *testing.T) {
	f := upXP(t, "parking-lot.yaml", xpRate)
	flows := []xpFlow{{"long_s", "long_r"}, {"p1_s", "p1_r"}, {"p2_s", "p2_r"}}
	line := 200e6 * 1408 / 1538 * 1522 / 1622 // payload of a link whose credits take their 84/1622
	size := int64(line / 8 * 2.5)             // every flow busy for at least the 2.5 s the window covers
	share := func(run xpRun) []float64 {
		r := windowRates(run.flows, 500*time.Millisecond, 2000*time.Millisecond)
		for i := range r {
			r[i] /= line
		}
		return r
	}
	naive := share(f.runXP(flows, size, true))
	fb := share(f.runXP(flows, size, false))
	t.Logf("shares of a link (long, p1, p2): naive %.3f %.3f %.3f (link 1 %.3f, link 2 %.3f); feedback %.3f %.3f %.3f (link 1 %.3f, link 2 %.3f)",
		naive[0], naive[1], naive[2], naive[0]+naive[1], naive[0]+naive[2], fb[0], fb[1], fb[2], fb[0]+fb[1], fb[0]+fb[2])
	if naive[0] > 0.45 || naive[0]+naive[2] > 0.92 {
		t.Errorf("naive: long flow %.3f, link 2 %.3f: want the long flow starved at link 1 and link 2 under-used", naive[0], naive[0]+naive[2])
	}
	if fb[0]+fb[2] < naive[0]+naive[2]+0.05 {
		t.Errorf("feedback did not raise link 2's use: %.3f against naive %.3f", fb[0]+fb[2], naive[0]+naive[2])
	}
}

// TestXPassMultiBottleneck (the paper's Fig. 4a): three flows from one
// sender; f1 and f2 also cross the swl-swr link. Naive credits give f0
// about twice f1's and f2's share; feedback about the same.
func TestXPassMultiBottleneck(t *testing.T) {
	f := upXP(t, "multi-bottleneck.yaml", xpRate)
	flows := []xpFlow{{"snd", "r0"}, {"snd", "r1"}, {"snd", "r2"}}
	line := 200e6 * 1408 / 1538 * 1522 / 1622
	size := int64(line / 8 * 2.5 / 2)
	ratio := func(run xpRun) (float64, []float64) {
		r := windowRates(run.flows, 500*time.Millisecond, 2000*time.Millisecond)
		return r[0] * 2 / (r[1] + r[2]), r
	}
	rn, naive := ratio(f.runXP(flows, size, true))
	rf, fb := ratio(f.runXP(flows, size, false))
	t.Logf("Mbit/s (f0, f1, f2): naive %.1f %.1f %.1f (f0 %.2f x the others); feedback %.1f %.1f %.1f (f0 %.2f x, Jain %.3f)",
		naive[0]/1e6, naive[1]/1e6, naive[2]/1e6, rn, fb[0]/1e6, fb[1]/1e6, fb[2]/1e6, rf, fairness.Jain(fb))
	if rn < 1.4 {
		t.Errorf("naive: f0 gets %.2f x the others, want ~2", rn)
	}
	if rf > 1.4 || rf < 0.7 || fairness.Jain(fb) < 0.9 {
		t.Errorf("feedback: f0 gets %.2f x the others (Jain %.3f), want ~1", rf, fairness.Jain(fb))
	}
}
