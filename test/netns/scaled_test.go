package netns

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/results"
)

// Tests of a mechanism's design (BFC, SFC, pFabric) run their fabric in
// the paper's units at a timescale (topology files' timescale: K, gsperf
// -timescale K), with the switches' workers under SCHED_FIFO (realtime:),
// once, with no retry and no skip for lateness: the fidelity watch
// (fidelity_test.go) says whether the run kept time, and the bars are the
// design's.

// mechOffEnv names a mechanism (bfc, sfc or pfabric) that the tests of
// that mechanism leave out of their fabric: everything else is the same,
// so the test must fail, and how it fails shows what it measures. An A/B
// knob for the tests themselves (a test that passes without its mechanism
// measures nothing of it). What each test does then is written next to
// its use of mechOff.
const mechOffEnv = "GSWITCH_TEST_MECH_OFF"

// mechOff reports whether GSWITCH_TEST_MECH_OFF names mechanism m, and
// says so in the test's log.
func mechOff(t *testing.T, m string) bool {
	t.Helper()
	if os.Getenv(mechOffEnv) != m {
		return false
	}
	t.Logf("%s=%s: the fabric runs without %s, so this test must fail", mechOffEnv, m, m)
	return true
}

// metricSample is one scrape of a switch: the samples kept, at wall time T.
type metricSample struct {
	T   time.Time
	M   map[string]float64
	Err error
}

// scrapeAt scrapes addr (host:port) at each of the given instants of this
// machine (or at once, for one already past) and returns the samples,
// keeping the lines keep accepts, in order. A scrape reads (and so clears)
// watermark gauges such as gswitch_bfc_queue_watermark_bytes: a sample
// then holds the highest value since the one before. Few scrapes on
// purpose: each makes gswitchd allocate, and its garbage collections stop
// the world, its realtime workers included, for as long as its ordinary
// threads wait for a CPU on a loaded machine.
func scrapeAt(addr string, keep func(string) bool, at ...time.Time) <-chan []metricSample {
	c := make(chan []metricSample, 1)
	go func() {
		client := &http.Client{Timeout: 5 * time.Second}
		var got []metricSample
		for _, when := range at {
			time.Sleep(time.Until(when))
			m, err := scrapeLines(context.Background(), client, addr, keep)
			got = append(got, metricSample{T: time.Now(), M: m, Err: err})
		}
		c <- got
	}()
	return c
}

// scrapeLines reads the text exposition at addr line by line, keeping the
// samples keep accepts (cheaper than a full parse, for frequent scrapes).
func scrapeLines(ctx context.Context, c *http.Client, addr string, keep func(string) bool) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 || !keep(l[:i]) {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", addr, l, err)
		}
		m[l[:i]] = v
	}
	return m, sc.Err()
}

// total adds the values of s whose names start with prefix and contain
// every one of with.
func total(s map[string]float64, prefix string, with ...string) float64 {
	v := 0.0
	for k, x := range s {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		ok := true
		for _, w := range with {
			ok = ok && strings.Contains(k, w)
		}
		if ok {
			v += x
		}
	}
	return v
}

// largest is the largest value of s whose name starts with prefix and
// contains every one of with (0 if none).
func largest(s map[string]float64, prefix string, with ...string) float64 {
	v := 0.0
	for k, x := range s {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		ok := true
		for _, w := range with {
			ok = ok && strings.Contains(k, w)
		}
		if ok {
			v = max(v, x)
		}
	}
	return v
}

// gsperfClient is one gsperf client a test runs in a host of a fabric:
// its flags (after client -src HOST -out FILE), and once run, what it
// printed and its records.
type gsperfClient struct {
	Host  string
	Flags []string
	Out   string
	Run   results.Run
	Err   error
}

// runClients runs the clients at once, each in its host, and waits for
// them all (at most wall, this machine's time); a client that fails or
// writes no records fails the test when must.
func (f *fabric) runClients(t *testing.T, wall time.Duration, must bool, cs ...*gsperfClient) {
	t.Helper()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(dir, fmt.Sprintf("%d-%s.json", i, c.Host))
			c.Out, c.Err = f.exec(c.Host, wall, gsperfBin, append([]string{"client", "-src", c.Host, "-out", path}, c.Flags...)...)
			if c.Err == nil {
				var r *results.Run
				if r, c.Err = results.ReadJSON(path); c.Err == nil {
					c.Run = *r
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range cs {
		if c.Err != nil && must {
			t.Fatalf("gsperf client in %s: %v\n%s", c.Host, c.Err, c.Out)
		}
	}
}
