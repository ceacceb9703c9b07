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
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/perf/xpass"
	"github.com/gswitch/gswitch/topo"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
)

// ExpressPass across gswitchd processes: the topologies of
// topologies/expresspass/ (every port running ExpressPass), the paper's
// fabric in its own units (10 Gbit/s links, 250-packet buffers, 8-credit
// queues) at the file's timescale, brought up under a random name and
// metrics base; gsperf -mode xpass on the hosts at the same -timescale,
// every rate and time flag in the fabric's units. Every figure below is in
// the fabric's time unless it says wall.
//
// Each scenario runs once. A fidelity verdict over it (fidelity_test.go)
// fails the test with its figures when the switches did not keep time
// (lateness p99 or delay error above a frame time, more than 1% of a
// port's line time lost), so a bar
// that misses is not the switches' timing: there are no retries and no
// skips for a busy machine. The hosts' gsperf runs as ordinary processes,
// which no verdict judges; each run logs how late a thread of their kind
// woke up meanwhile (xpHostSpread says why it matters).
//
// Knobs (none is set in the suite):
//   - GSWITCH_TEST_XPASS_OFF=1: the mechanism off, for the A/B: the
//     switches' credit class moves to DSCP 11 (credit_dscp) while the
//     hosts' credits carry 10, so no switch port classifies, meters or
//     drops a credit: credits cross the switches as data, as on ports
//     without ExpressPass, and the data-queue histograms still count.
//     A receiver's NIC meters its credits to its flows' links together
//     (-xp-link N x the link for N flows), not to its own link. Every
//     test fails so (what each shows is next to its bars);
//   - GSWITCH_XPASS_CREDIT_DROP=tail|random: every credit lane drops so,
//     whatever the topology file says;
//   - GSWITCH_XPASS_TIMESCALE=K: run at K instead of the file's (how the
//     files' K was chosen);
//   - GSWITCH_XPASS_SWITCH="{workers: 1, nice: -10}": the switches' keys
//     instead of the file's defaults.switch (realtime against nice);
//   - GSWITCH_XPASS_TRACE=DIR: each feedback receiver writes a line per
//     rate update into DIR (gsperf -xp-trace);
//   - GSWITCH_XPASS_SERVER_ARGS: more gsperf server flags, e.g.
//     "-xp-nic-burst 1";
//   - GSWITCH_XPASS_HOSTS_RT=N: the hosts' gsperf under SCHED_FIFO N
//     (xpHostSched says why not by default).

// xpStep is the clients' timeline step (fabric): 100 ms of wall time at
// the files' timescale of 1000.
const xpStep = 100 * time.Microsecond

// xpPayload is the share of a link's line rate that credits let through
// as gsperf payload. A credit (84 bytes on the wire) releases one data
// frame of 1538 bytes on the wire that carries udp.MSS = 1408 bytes of
// payload (1514 less 14 of Ethernet, 20 of IPv4, 8 of UDP and 64 of
// gsperf header); a meter passes 84/(84+1538) of the line in credits, so
// data arrive at 1538/1622 of the line (the paper's "remaining 95%") and
// payload at 1408/1622 = 86.8% of it.
const xpPayload = float64(udp.MSS) / (xpass.CreditWire + xpass.DataWire)

type xpFabric struct {
	t           *testing.T
	r           *topo.Running
	sw          map[string]*Switch // by switch name, for Scrape
	k           float64            // the timescale
	rate        string             // every link's rate as the file writes it (fabric)
	rateBits    float64            // the same in bit/s
	creditQueue int                // the ports' credit_queue
	creditBurst int                // the ports' credit_burst
	off         bool               // GSWITCH_TEST_XPASS_OFF
}

// upXP brings the topology file up under a name of its own (random), as
// the knobs say and with the edits given applied to its text in turn;
// Running.Down at cleanup removes it, also when the test fails.
func upXP(t *testing.T, file string, edits ...func(string) string) *xpFabric {
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
	// The file's own links all run at one rate (rate, rateBits); an edit
	// may then change some (a test that does reads their rates itself).
	orig, err := topo.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		s = e(s)
	}
	if d := os.Getenv("GSWITCH_XPASS_CREDIT_DROP"); d != "" {
		s = regexp.MustCompile(`, credit_drop: \w+`).ReplaceAllString(s, "")
		s = regexp.MustCompile(`credit_queue: (\d+)`).ReplaceAllString(s, "credit_queue: $1, credit_drop: "+d)
	}
	off := os.Getenv("GSWITCH_TEST_XPASS_OFF") == "1"
	if off {
		s = regexp.MustCompile(`credit_queue: (\d+)`).ReplaceAllString(s, "credit_queue: $1, credit_dscp: 11")
		t.Log("GSWITCH_TEST_XPASS_OFF=1: the switches' credit class is DSCP 11, the hosts' credits carry 10: no switch meters a credit")
	}
	if k := os.Getenv("GSWITCH_XPASS_TIMESCALE"); k != "" {
		s = regexp.MustCompile(`(?m)^timescale: .*$`).ReplaceAllString(s, "timescale: "+k)
	}
	if sw := os.Getenv("GSWITCH_XPASS_SWITCH"); sw != "" {
		s = regexp.MustCompile(`(?m)^  switch: .*$`).ReplaceAllString(s, "  switch: "+sw)
	}
	tp, err := topo.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	f := &xpFabric{t: t, sw: map[string]*Switch{}, rate: orig.Defaults.Link.Rate, creditQueue: 8, creditBurst: 2, off: off}
	for _, l := range orig.Links {
		if l.Rate != f.rate {
			t.Fatalf("%s: link %s-%s at %s, the others at %s: these tests take every link at one rate", file, l.A, l.B, l.Rate, f.rate)
		}
		f.rateBits = float64(l.RateBits)
	}
	if m := regexp.MustCompile(`credit_queue: (\d+)`).FindStringSubmatch(s); m != nil {
		f.creditQueue, _ = strconv.Atoi(m[1])
	}
	if m := regexp.MustCompile(`credit_burst: (\d+)`).FindStringSubmatch(s); m != nil {
		f.creditBurst, _ = strconv.Atoi(m[1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := topo.Up(ctx, tp, topo.UpOptions{Gswitchd: gswitchdBin, StateDir: t.TempDir(), Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.r, f.k = r, r.Timescale.K()
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
	t.Logf("%s: every link %s at timescale %g (%.4g Mbit/s on this machine), credit_queue %d, credit_burst %d",
		file, f.rate, f.k, f.rateBits/f.k/1e6, f.creditQueue, f.creditBurst)
	return f
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// wall is a fabric duration on this machine's clock.
func (f *xpFabric) wall(d time.Duration) time.Duration { return time.Duration(float64(d) * f.k) }

// frame is the time a full frame (1538 bytes on the wire) takes on a link (fabric).
func (f *xpFabric) frame() time.Duration {
	return time.Duration(xpass.DataWire * 8 * 1e9 / f.rateBits)
}

// payloadBits is the payload rate (fabric bit/s) credits let through a link.
func (f *xpFabric) payloadBits() float64 { return f.rateBits * xpPayload }

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

// xpRun is a run's outcome: the flows' records, the switches' samples
// before and after, the receivers' reports and the fidelity verdict.
type xpRun struct {
	flows         []results.Flow
	before, after map[string]map[string]float64
	marks         []map[string]map[string]float64 // the scrapes runHosts was asked for, in order
	servers       map[string]string               // server output by receiver
	params        []map[string]string             // each client's run params (its host's counters), by flow
	verdict       fidelity.Verdict
	// hostLate and hostMost are how late a thread like the hosts' woke up
	// during the run (wall): time-weighted p99, and the most.
	hostLate, hostMost time.Duration
}

// xpHostSched is what runs the hosts' gsperf: an ordinary process, or
// under SCHED_FIFO at GSWITCH_XPASS_HOSTS_RT=N (below the switches' 10),
// for A/B runs. Ordinary processes are the default: the hosts are the
// machine's ordinary load, as a user's own senders would be; their
// lateness is logged with every run (xpRun.hostLate).
func xpHostSched() []string {
	if p := os.Getenv("GSWITCH_XPASS_HOSTS_RT"); p != "" && p != "0" {
		return []string{"-f", p, gsperfBin}
	}
	return []string{"-o", "0", gsperfBin}
}

// xpHostSpread is the paper's testbed's hosts' delay spread (fabric time,
// section 3.1 and Fig. 5: "delta d_host = 5.1 us reflect our testbed
// setting"). ExpressPass's data queue is bounded by the spread of the
// delay from a credit to its data (Eq. 1), the hosts' part included: a
// sender that runs late answers the credits that came meanwhile at once.
// The fidelity verdict judges the switches' timing only; the hosts' gsperf
// runs as ordinary processes, and runXP logs how late a thread of the same
// kind woke up during the run, in frame times, beside this spread: the
// figure that explains a data queue beyond the credit queue's 8 packets.
const xpHostSpread = 5100 * time.Nanosecond

// runXP starts an xpass server in every receiver (-xp-naive if naive) and
// one client per flow, all starting at the same instant, each sending
// size bytes or giving up after timeout (fabric time), and waits for
// them. The fidelity verdict covers the clients' run; an invalid run has
// failed the test when runXP returns.
func (f *xpFabric) runXP(flows []xpFlow, size int64, naive bool, timeout time.Duration) xpRun {
	f.t.Helper()
	k := strconv.FormatFloat(f.k, 'g', -1, 64)
	perDst := map[string]int{}
	for _, fl := range flows {
		perDst[fl.dst]++
	}
	server := func(dst string) []string {
		link := f.rate
		if f.off {
			// The receiver's NIC meters its credits to as much as its
			// flows could take on links of their own, not to its link:
			// with ExpressPass off there is no per-link meter anywhere.
			link = fmt.Sprintf("%dMbit", int64(float64(perDst[dst])*f.rateBits/1e6))
		}
		args := []string{"server", "-mode", "xpass", "-bind", f.addr(dst) + ":5500", "-timescale", k, "-xp-link", link, "-report", "0"}
		if naive {
			args = append(args, "-xp-naive")
		}
		if a := os.Getenv("GSWITCH_XPASS_SERVER_ARGS"); a != "" {
			args = append(args, strings.Fields(a)...)
		}
		if d := os.Getenv("GSWITCH_XPASS_TRACE"); d != "" && !naive {
			// A line per feedback update, for studying the loop.
			args = append(args, "-xp-trace", filepath.Join(d, fmt.Sprintf("%s-%d.txt", dst, time.Now().UnixNano())))
		}
		return args
	}
	return f.runHosts(flows, server, []string{"-mode", "xpass"}, size, timeout)
}

// runHosts starts a gsperf server in every receiver (server gives its
// arguments, which bind it to port 5500 of the receiver's address) and one
// client per flow, with the mode arguments given, all starting at the same
// instant, each sending size bytes or giving up after timeout (fabric
// time), paced at the links' rate, and waits for them. The fidelity
// verdict covers the clients' run; an invalid run has failed the test when
// runHosts returns. The switches are also scraped at each of the instants
// marks gives (fabric time after the clients' start), into xpRun.marks.
func (f *xpFabric) runHosts(flows []xpFlow, server func(dst string) []string, mode []string, size int64, timeout time.Duration, marks ...time.Duration) xpRun {
	f.t.Helper()
	return f.runHostsAt(flows, nil, server, mode, size, timeout, marks...)
}

// runHostsAt is runHosts with flow i starting starts[i] (fabric) after
// the common start (0 if starts is shorter); the marks count from the
// common start.
func (f *xpFabric) runHostsAt(flows []xpFlow, starts []time.Duration, server func(dst string) []string, mode []string, size int64, timeout time.Duration, marks ...time.Duration) xpRun {
	f.t.Helper()
	k := strconv.FormatFloat(f.k, 'g', -1, 64)
	stops := map[string]func() string{}
	for _, fl := range flows {
		if stops[fl.dst] == nil {
			stops[fl.dst] = f.start(fl.dst, syscall.SIGTERM, "chrt", append(xpHostSched(), server(fl.dst)...)...)
		}
	}
	time.Sleep(300 * time.Millisecond)
	run := xpRun{before: f.scrapeAll(), servers: map[string]string{}}
	dir := f.t.TempDir()
	// Process start-up on a busy 2-core machine takes a while: the clients
	// start together 3 s (wall) from now.
	at := time.Now().Add(3 * time.Second)
	var waits []func() string
	for i, fl := range flows {
		args := append(append(xpHostSched(), "client"), mode...)
		start := at
		if i < len(starts) {
			start = at.Add(f.wall(starts[i]))
		}
		waits = append(waits, f.start(fl.src, nil, "chrt", append(args, "-src", fl.src,
			"-to", f.addr(fl.dst)+":5500", "-size", strconv.FormatInt(size, 10), "-flows", "1", "-arrivals", "burst",
			"-timescale", k, "-rate", f.rate, "-pace", f.rate, "-timeline", xpStep.String(), "-timeout", timeout.String(),
			"-id-base", strconv.Itoa((i+1)*1000), "-at", strconv.FormatInt(start.UnixNano(), 10), "-out", filepath.Join(dir, fmt.Sprintf("f%d.json", i)))...))
	}
	// The verdict's window starts just before the clients do, so that
	// the idle lead does not dilute the line time lost.
	time.Sleep(time.Until(at.Add(-250 * time.Millisecond)))
	watch := watchFidelity(f.t, f.r)
	scraped := make(chan []map[string]map[string]float64, 1)
	go func() {
		var ms []map[string]map[string]float64
		defer func() { scraped <- ms }() // also if a scrape fails the test
		for _, m := range marks {
			time.Sleep(time.Until(at.Add(f.wall(m))))
			ms = append(ms, f.scrapeAll())
		}
	}()
	stop := make(chan struct{})
	probe := make(chan [2]time.Duration, 1)
	go func() {
		p99, most := lateness(stop)
		probe <- [2]time.Duration{p99, most}
	}()
	var outs []string
	for _, w := range waits {
		outs = append(outs, w())
	}
	run.marks = <-scraped
	run.verdict = watch.require()
	close(stop)
	late := <-probe
	run.hostLate, run.hostMost = late[0], late[1]
	f.t.Logf("hosts: a thread like the hosts' woke up %v late or more 1%% of the time, at most %v (%.1f frame times; the paper's hosts' spread: %v, %.1f)",
		late[0].Round(10*time.Microsecond), late[1].Round(10*time.Microsecond), float64(late[1])/float64(f.wall(f.frame())),
		xpHostSpread, float64(xpHostSpread)/float64(f.frame()))
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
		run.params = append(run.params, r.Params)
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
	sort.Strings(where)
	return n, where
}

// lanes says, per switch port whose credit lane saw credits in the run,
// how many it forwarded and dropped.
func (r xpRun) lanes() string {
	var out []string
	for sw, m := range r.after {
		for k := range m {
			if port, ok := strings.CutPrefix(k, `gswitch_expresspass_credits_forwarded_total{port="`); ok {
				port = strings.TrimSuffix(port, `"}`)
				fw := r.delta(sw, k)
				dr := r.delta(sw, `gswitch_expresspass_credits_dropped_total{port="`+port+`"}`)
				if fw+dr > 0 {
					out = append(out, fmt.Sprintf("%s->%s %.0f/%.0f", sw, port, fw, dr))
				}
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
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

// queue gives the median and 99th percentile (histogram bucket bounds) and
// the largest non-empty bucket of the data-queue depths that data packets
// found on sw's port during the run, and how many packets arrived.
func (r xpRun) queue(sw, port string) (p50, p99, most, count float64) {
	return r.histQuantiles("gswitch_expresspass_data_queue_packets", sw, port)
}

// histQuantiles gives the median, 99th percentile (histogram bucket
// bounds), the largest non-empty bucket and the count of a per-port
// histogram's observations on sw's port during the run.
func (r xpRun) histQuantiles(metric, sw, port string) (p50, p99, most, count float64) {
	prefix := metric + `_bucket{le="`
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
		return math.NaN(), math.NaN(), math.NaN(), 0
	}
	count = bs[len(bs)-1].n
	p50, p99, most = math.NaN(), math.NaN(), 0
	prev := 0.0
	for _, b := range bs {
		if math.IsNaN(p50) && b.n >= 0.5*count {
			p50 = b.le
		}
		if math.IsNaN(p99) && b.n >= 0.99*count {
			p99 = b.le
		}
		if b.n > prev {
			most = b.le
		}
		prev = b.n
	}
	return p50, p99, most, count
}

// windowRates is each flow's goodput (fabric bit/s) between from and to
// (fabric) after the common start, from the clients' timelines.
func windowRates(flows []results.Flow, from, to time.Duration) []float64 {
	var out []float64
	for _, fl := range flows {
		step := time.Duration(fl.TimelineStepFabricNs)
		at := func(d time.Duration) float64 {
			i := int(d/step) - 1 // Timeline[i] is the bytes acknowledged (i+1) steps after the start
			if len(fl.Timeline) == 0 || step <= 0 || i < 0 {
				return 0
			}
			return float64(fl.Timeline[min(i, len(fl.Timeline)-1)])
		}
		out = append(out, (at(to)-at(from))*8/(to-from).Seconds())
	}
	return out
}

// tcpRun runs one iperf3 TCP flow per sender to dst for secs seconds
// (wall) and returns the switches' samples before and after.
func (f *xpFabric) tcpRun(srcs []string, dst string, secs int) xpRun {
	f.t.Helper()
	for i := range srcs {
		f.start(dst, syscall.SIGTERM, "iperf3", "-s", "-B", f.addr(dst), "-p", strconv.Itoa(5201+i))
	}
	time.Sleep(500 * time.Millisecond)
	run := xpRun{before: f.scrapeAll()}
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		go func(i int, s string) {
			defer wg.Done()
			f.r.Exec(context.Background(), s, "iperf3", "-c", f.addr(dst), "-p", strconv.Itoa(5201+i), "-t", strconv.Itoa(secs)).Run()
		}(i, s)
	}
	wg.Wait()
	run.after = f.scrapeAll()
	return run
}

// lateness measures, until stop is closed, how late an ordinary thread
// (as the hosts' gsperf runs) that sleeps 500 us at a time wakes up, and
// returns the lateness L such that the thread spent 1% of the time in
// wake-ups at least L late (time-weighted: a credit arriving at a random
// time finds its host that late one time in a hundred), and the largest.
func lateness(stop <-chan struct{}) (p99, most time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) // as gsperf's threads
	type sample struct{ late, took time.Duration }
	var ss []sample
	var total time.Duration
	const nap = 500 * time.Microsecond
	for {
		select {
		case <-stop:
			sort.Slice(ss, func(i, j int) bool { return ss[i].late > ss[j].late })
			var acc time.Duration
			for _, x := range ss {
				if acc += x.took; acc >= total/100 {
					return x.late, ss[0].late
				}
			}
			return 0, 0
		default:
		}
		t0 := time.Now()
		ts := unix.NsecToTimespec(nap.Nanoseconds())
		unix.Nanosleep(&ts, nil)
		took := time.Since(t0)
		ss = append(ss, sample{max(took-nap, 0), took})
		total += took
	}
}

// nicCreditDrops reads "N dropped by the NIC queue" from a gsperf xpass
// server's report (the credits its host-side credit meter dropped), or -1
// if the report has no such count.
func nicCreditDrops(out string) float64 {
	i := strings.LastIndex(out, " dropped by the NIC queue")
	if i < 0 {
		return -1
	}
	j := strings.LastIndex(out[:i], " ")
	n, err := strconv.ParseFloat(out[j+1:i], 64)
	if err != nil {
		return -1
	}
	return n
}

// jainWindows is Jain's index of the flows' rates in each window of width
// w (fabric) from from to to.
func jainWindows(flows []results.Flow, from, to, w time.Duration) []float64 {
	var js []float64
	for a := from; a+w <= to; a += w {
		js = append(js, fairness.Jain(windowRates(flows, a, a+w)))
	}
	return js
}

func fmtRates(rs []float64, unit float64) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%.3f", r/unit))
	}
	return strings.Join(s, " ")
}

// twoRuns runs flows with naive credits for naiveFor and with the
// feedback loop for fbFor (fabric time), each flow sending more than it
// can in its run, and returns each run's shares of a link over its steady
// window: naive [xpNaiveFrom, naiveFor), feedback [xpFeedbackFrom, fbFor)
// (the feedback loop takes a few hundred RTTs to settle).
func (f *xpFabric) twoRuns(flows []xpFlow, naiveFor, fbFor time.Duration) (naive, fb []float64, nvRun, fbRun xpRun) {
	f.t.Helper()
	size := int64(f.payloadBits() / 8 * fbFor.Seconds() * 2)
	nvRun = f.runXP(flows, size, true, naiveFor)
	fbRun = f.runXP(flows, size, false, fbFor)
	naive = f.linkShares(nvRun, xpNaiveFrom, naiveFor-xpStep)
	fb = f.linkShares(fbRun, xpFeedbackFrom, fbFor-xpStep)
	for name, run := range map[string]xpRun{"naive": nvRun, "feedback": fbRun} {
		f.t.Logf("%s: credit lanes (forwarded/dropped): %s", name, run.lanes())
		for r, out := range run.servers {
			f.t.Logf("%s, %s: %s", name, r, lastLines(out, 1))
		}
		if d, where := run.dataDrops(); d != 0 {
			f.t.Errorf("%s: ExpressPass dropped data: %v", name, where)
		}
		for i, fl := range run.flows {
			var d []string
			for j := 1; j < len(fl.Timeline); j++ {
				d = append(d, fmt.Sprintf("%.2f", float64(fl.Timeline[j]-fl.Timeline[j-1])*8/xpStep.Seconds()/f.payloadBits()))
			}
			f.t.Logf("%s, %s's share per %v: %s", name, flows[i].src, xpStep, strings.Join(d, " "))
		}
	}
	return naive, fb, nvRun, fbRun
}

// linkShares are the flows' goodput over [from, to] as shares of what
// credits let through a link.
func (f *xpFabric) linkShares(run xpRun, from, to time.Duration) []float64 {
	r := windowRates(run.flows, from, to)
	for i := range r {
		r[i] /= f.payloadBits()
	}
	return r
}

// The scenarios' durations (fabric time; x 1000 on this machine at the
// files' timescale). The steady windows leave out the start: a flow's
// first credits, and the feedback loop's ramp. Longer runs also average
// the machine's rare stalls of the switches into a smaller share of the
// fidelity window (its line time lost).
const (
	xpIncastFor    = 6 * time.Millisecond   // N-to-1: each flow is its fair share of this
	xpIncastFrom   = 500 * time.Microsecond // N-to-1: the steady window is [from, for - from]
	xpJainWindow   = time.Millisecond       // 1 s of wall time at timescale 1000
	xpNaiveFor     = 6 * time.Millisecond   // two bottlenecks, naive credits (they settle in an RTT)
	xpNaiveFrom    = time.Millisecond
	xpFeedbackFor  = 10 * time.Millisecond // two bottlenecks, the feedback loop
	xpFeedbackFrom = 3 * time.Millisecond
)

// N-to-1 bars. What the design promises and how each bar follows from it:
//
//   - every flow completes, and no data packet is dropped anywhere:
//     credits schedule the data, and the data queue stays far below the
//     250-packet buffer (Eq. 1);
//   - goodput: the flows' payload over the steady window is at least 90%
//     of what the credits let through the shared link, line x 1408/1622
//     (xpPayload: 8.68 Gbit/s of 10), since the receiver's NIC and the
//     shared port both meter credits to 84/1622 of the line; runs give
//     0.96 to 1.00;
//   - data queue: at the shared port (sw1 -> sw2), 99% of the data
//     packets find at most credit_queue (8) packets ahead of them. By
//     Eq. 1 the queue is bounded by the spread of the delay from a credit
//     to its data: the credit queue (8 credits, each a frame time at the
//     credit rate), the bucket's second credit (one more frame) and the
//     senders' delay spread (the paper's testbed: 5.1 us, 4 frame times at
//     10 Gbit/s); that bound (13) is the worst case, the 8 of the
//     issue's bar what 99% of packets must meet. Runs: p99 0 to 8 while
//     the hosts kept within about 10 frame times; 10 to 48 in runs where
//     a thread like the hosts' woke up 15 to 70 frame times late (the
//     failure says how late), the senders then answering the credits of
//     that time at once (xpHostSpread);
//   - fairness, Jain's index of the flows' rates: over the whole steady
//     window (5 ms, about 250 RTTs) at least 0.94, and averaged over its
//     1 ms windows (1 s of wall time, about 50 RTTs) at least 0.83. Those
//     are the host feedback loop's own: on a fake clock (perf/xpass's
//     discrete-event fabric: the same Host and Sender code, this fabric's
//     meters, hops of 2.5 us, 20 seeds) the loop gives 0.944 to 0.991 over
//     5 ms (median 0.97 to 0.98) and 0.835 to 0.934 averaged over 1 ms
//     windows (median 0.89), N = 8 to 32; our runs give 0.978 to 0.996
//     and 0.856 to 0.953. A single 1 ms window can be lower (the model:
//     0.71 at worst): N flows share one credit per frame time, so each
//     gets 1 to 5 credits per RTT, and its loss estimate, and so its rate,
//     swings from one RTT to the next (the sub-packet regime of the
//     paper's section 2); 0.95 in every 1 ms window is not what the design
//     gives.
const (
	xpGoodputMin    = 0.9
	xpJainSteadyMin = 0.94
	xpJainWindowMin = 0.83
)

// xpIncast: N senders s1..sN on sw1, one flow each, into r1 behind sw2,
// with the feedback loop; then the same senders with iperf3 TCP (cubic)
// through the same FIFO ports, as the contrast: kernel TCP cannot be
// scaled (its 200 ms minimum RTO and delayed ACKs are wall time, 200 us
// and 40 us of the fabric's), so it shows only where its queue goes: it
// fills the 250-packet buffer.
//
// With the mechanism off (GSWITCH_TEST_XPASS_OFF=1: no switch meters a
// credit, and r1's NIC meters its credits to N links, not to its own) all
// three fail: the senders get credits for N times what the shared link
// carries, sw1's port toward sw2 drops 3,900 to 4,100 data packets at its
// 250-packet limit, every packet finds the queue full (p99 256), and the
// rates swing (Jain per 1 ms window 0.53 to 0.78 on average). With only
// the switches' meters off they pass (8-, 16- and 32-to-1: queue p99 4, 4
// and 3): in a fabric of equal links the receiver's NIC meters the credits
// to the one link they all share; the switches' meters then only space
// out the bursts of credits a late receiver sends.
func xpIncast(t *testing.T, n int) {
	f := upXP(t, "incast.yaml")
	var flows []xpFlow
	var srcs []string
	for i := 1; i <= n; i++ {
		flows = append(flows, xpFlow{fmt.Sprintf("s%d", i), "r1"})
		srcs = append(srcs, fmt.Sprintf("s%d", i))
	}
	size := int64(f.payloadBits() / 8 * xpIncastFor.Seconds() / float64(n))
	run := f.runXP(flows, size, false, 3*xpIncastFor)
	from, to := xpIncastFrom, xpIncastFor-xpIncastFrom
	rates := windowRates(run.flows, from, to)
	var sum, slowest float64
	for i, fl := range run.flows {
		sum += rates[i]
		if !fl.Complete {
			t.Errorf("flow %d from %s did not complete: %+v", i, flows[i].src, fl.Mech)
			continue
		}
		slowest = max(slowest, float64(fl.FCTFabricNs)/1e6)
	}
	util := sum / f.payloadBits()
	jains := jainWindows(run.flows, from, to, xpJainWindow)
	var jainMean float64
	for _, j := range jains {
		jainMean += j / float64(len(jains))
	}
	jain := fairness.Jain(rates)
	drops, where := run.dataDrops()
	p50a, p99a, maxa, na := run.queue("sw1", "sw2")
	p50b, p99b, maxb, nb := run.queue("sw2", "r1")
	nic := nicCreditDrops(run.servers["r1"])
	t.Logf("%d-to-1: goodput %.3f Gbit/s in [%v, %v] = %.3f of the %.3f Gbit/s credits let through; Jain %.3f there, per %v window %s (mean %.3f); slowest flow %.2f ms (fair share %v)",
		n, sum/1e9, from, to, util, f.payloadBits()/1e9, jain, xpJainWindow, fmtRates(jains, 1), jainMean, slowest, xpIncastFor)
	t.Logf("data drops %.0f; credits dropped by r1's NIC %.0f, by the switches %.0f; data queue sw1->sw2 p50 %.0f p99 %.0f max %.0f (%.0f packets), sw2->r1 p50 %.0f p99 %.0f max %.0f (%.0f packets)",
		drops, nic, run.creditDrops(), p50a, p99a, maxa, na, p50b, p99b, maxb, nb)
	t.Logf("flows' Gbit/s in [%v, %v]: %s", from, to, fmtRates(rates, 1e9))
	t.Logf("receiver: %s", lastLines(run.servers["r1"], 1))
	if drops != 0 {
		t.Errorf("ExpressPass dropped data: %v", where)
	}
	if util < xpGoodputMin {
		t.Errorf("goodput %.3f of what credits let through the shared link, want at least %.2f", util, xpGoodputMin)
	}
	if !(p99a <= float64(f.creditQueue)) {
		t.Errorf("data queue p99 %.0f packets at the shared port, want at most the credit queue (%d); a thread like the hosts' woke up as much as %.1f frame times late in the run (Eq. 1: the hosts' delay spread adds to the queue)",
			p99a, f.creditQueue, float64(run.hostMost)/float64(f.wall(f.frame())))
	}
	if jain < xpJainSteadyMin {
		t.Errorf("Jain %.3f over the flows' rates in [%v, %v], want at least %.2f", jain, from, to, xpJainSteadyMin)
	}
	if jainMean < xpJainWindowMin {
		t.Errorf("Jain per %v window %s, mean %.3f, want at least %.2f", xpJainWindow, fmtRates(jains, 1), jainMean, xpJainWindowMin)
	}
	if nic < 0 {
		t.Errorf("r1's gsperf server did not report its NIC queue's credit drops: %s", lastLines(run.servers["r1"], 1))
	} else if run.creditDrops()+nic == 0 {
		t.Errorf("no credit was dropped by r1's NIC queue or a switch: the meters did not bind")
	}
	tcp := f.tcpRun(srcs, "r1", 2)
	tp50, tp99, tmax, tn := tcp.queue("sw1", "sw2")
	tdrops, _ := tcp.dataDrops()
	t.Logf("TCP (cubic), the same %d senders for 2 s of wall time: data queue sw1->sw2 p50 %.0f p99 %.0f max %.0f (%.0f packets), %.0f drops", n, tp50, tp99, tmax, tn, tdrops)
	if !(tp50 >= 64) {
		t.Errorf("TCP's data queue p50 %.0f packets: the same senders without credits should fill the buffer", tp50)
	}
}

func TestXPassIncast8(t *testing.T)  { xpIncast(t, 8) }
func TestXPassIncast16(t *testing.T) { xpIncast(t, 16) }
func TestXPassIncast32(t *testing.T) { xpIncast(t, 32) }

// TestXPassParkingLot (the paper's Fig. 4b): the long flow crosses both
// links, p1 link 1 only, p2 link 2 only (data left to right, credits right
// to left). The paper numbers its links in the credits' order: its "link
// 1" is our link 2, the one whose meter the long flow's credits meet
// first.
//
// Naive credits (every receiver at the maximum rate): the long flow's
// credits lose half at link 2's meter (against p2's), then two thirds of
// what is left at link 1's (against p1's full rate): the long flow gets
// 1/3 of a link, p1 2/3, p2 1/2; link 1 is full and link 2 used at 5/6
// (the paper: "link 1's utilization drops to 83.3%", its link 1). The
// feedback loop fills link 2 again.
//
// The bars: naive shares and link 2's use within 0.05 of the paper's
// (our runs: long 0.307 to 0.335, p1 0.657 to 0.675, p2 0.479 to 0.506,
// link 2 0.80 to 0.83, link 1 0.97 to 1.00); with feedback both links at
// least 0.9 (0.98 to 0.99 and 0.92 to 0.95) and link 2 up on naive's by
// 0.05 or more. The loop does not bring the long flow to the max-min
// share (1/2): it settles at 0.26 to 0.29, p1 at about 0.71, p2 at 0.65
// (the long flow sees the loss of two meters); the bar only keeps it from
// starving (0.15).
//
// With the mechanism off (GSWITCH_TEST_XPASS_OFF=1) naive credits cross
// the switches unmetered, the data overruns the links and the shares
// collapse (long 0.17, p1 0.38, p2 0.28; link 1 0.55, link 2 0.46): the
// naive bars fail.
func TestXPassParkingLot(t *testing.T) {
	f := upXP(t, "parking-lot.yaml")
	flows := []xpFlow{{"long_s", "long_r"}, {"p1_s", "p1_r"}, {"p2_s", "p2_r"}}
	naive, fb, _, _ := f.twoRuns(flows, xpNaiveFor, xpFeedbackFor)
	l1, l2 := naive[0]+naive[1], naive[0]+naive[2]
	f1, f2 := fb[0]+fb[1], fb[0]+fb[2]
	t.Logf("shares of a link (long, p1, p2): naive %.3f %.3f %.3f (link 1 %.3f, link 2 %.3f); feedback %.3f %.3f %.3f (link 1 %.3f, link 2 %.3f)",
		naive[0], naive[1], naive[2], l1, l2, fb[0], fb[1], fb[2], f1, f2)
	near := func(what string, got, want, tol float64) {
		if math.Abs(got-want) > tol {
			t.Errorf("%s %.3f, want %.3f +- %.2f", what, got, want, tol)
		}
	}
	near("naive: the long flow's share", naive[0], 1.0/3, 0.05)
	near("naive: p1's share", naive[1], 2.0/3, 0.05)
	near("naive: p2's share", naive[2], 0.5, 0.05)
	near("naive: link 2's use", l2, 5.0/6, 0.05)
	if l1 < 0.95 {
		t.Errorf("naive: link 1's use %.3f, want at least 0.95 (the paper: full)", l1)
	}
	if f1 < 0.9 || f2 < 0.9 {
		t.Errorf("feedback: links used %.3f and %.3f, want at least 0.9 each", f1, f2)
	}
	if f2 < l2+0.05 {
		t.Errorf("feedback: link 2 used %.3f, want at least naive's %.3f + 0.05", f2, l2)
	}
	if fb[0] < 0.15 {
		t.Errorf("feedback: the long flow's share %.3f, want at least 0.15", fb[0])
	}
}

// TestXPassMultiBottleneck (the paper's Fig. 4a): three flows from one
// sender (snd); f0 to r0 on snd's switch, f1 and f2 across the swl-swr
// link. Every credit crosses swr's meter toward snd; f1's and f2's cross
// swl's toward swr first, which halves each. Naive credits give f0 twice
// f1's and f2's share of snd's link (the paper: "Flow 0 occupies twice as
// much bandwidth on Link 2 than others"): 1/2, 1/4, 1/4. The feedback
// loop evens them out: 1/3 each.
//
// The bars: naive f0 gets 2 +- 0.25 times the mean of f1 and f2 (our
// runs: 1.91 to 2.08); with feedback Jain's index of the three shares is
// at least 0.9 (0.91 to 0.99; f0 still gets 1.2 to 1.6 x the others, as
// its RTT is the shortest) and snd's link is used at least 0.9 (0.93 to
// 0.99).
//
// With the mechanism off (GSWITCH_TEST_XPASS_OFF=1) no meter halves f1's
// and f2's credits or limits snd's: naive f0 got 2.55 x the others and
// snd's three senders together sent 1.77 times what credits let through
// its link; the naive bar fails.
func TestXPassMultiBottleneck(t *testing.T) {
	f := upXP(t, "multi-bottleneck.yaml")
	flows := []xpFlow{{"snd", "r0"}, {"snd", "r1"}, {"snd", "r2"}}
	naive, fb, _, _ := f.twoRuns(flows, xpNaiveFor, xpFeedbackFor)
	rn, rf := 2*naive[0]/(naive[1]+naive[2]), 2*fb[0]/(fb[1]+fb[2])
	t.Logf("shares of snd's link (f0, f1, f2): naive %.3f %.3f %.3f (f0 %.2f x the others, link %.3f); feedback %.3f %.3f %.3f (f0 %.2f x, Jain %.3f, link %.3f)",
		naive[0], naive[1], naive[2], rn, naive[0]+naive[1]+naive[2], fb[0], fb[1], fb[2], rf, fairness.Jain(fb), fb[0]+fb[1]+fb[2])
	if rn < 1.75 || rn > 2.25 {
		t.Errorf("naive: f0 gets %.2f x the others, want 2 +- 0.25", rn)
	}
	if j := fairness.Jain(fb); j < 0.9 {
		t.Errorf("feedback: Jain %.3f over the flows' shares %s, want at least 0.9", j, fmtRates(fb, 1))
	}
	if u := fb[0] + fb[1] + fb[2]; u < 0.9 {
		t.Errorf("feedback: snd's link used %.3f, want at least 0.9", u)
	}
}
