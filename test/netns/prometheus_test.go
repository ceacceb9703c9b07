package netns

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/control"
	"github.com/gswitch/gswitch/wire"
	"gopkg.in/yaml.v3"
)

// The shipped files this test checks.
var (
	rulesFile     = "../../deploy/prometheus/gswitch.rules.yml"
	promConfig    = "../../deploy/prometheus/prometheus.yml"
	dashboardFile = "../../deploy/grafana/dashboards/gswitch.json"
)

// routedHosts readdresses the topology's hosts onto one subnet per switch
// port (10.<x>.<i>.1/24, the switch's port being .254) with a route to the
// others through it (no default route), and returns the port options that
// make the ports L3.
func routedHosts(t *testing.T, tp *Topo) (base string, opts []string) {
	base = fmt.Sprintf("10.%d", 100+int(tp.ID[2])%100)
	for i, h := range tp.Hosts {
		ip := fmt.Sprintf("%s.%d.1", base, i+1)
		run(t, "ip", "-n", h.NS, "addr", "flush", "dev", "eth0")
		run(t, "ip", "-n", h.NS, "addr", "add", ip+"/24", "dev", "eth0")
		run(t, "ip", "-n", h.NS, "route", "add", base+".0.0/16", "via", fmt.Sprintf("%s.%d.254", base, i+1))
		h.IP = ip
		opts = append(opts, fmt.Sprintf("addr: %s.%d.254/24", base, i+1))
	}
	return base, opts
}

// promQuery runs an instant query and returns its result vector.
func promQuery(t *testing.T, addr, q string) ([]json.RawMessage, error) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s", r.Error)
	}
	return r.Data.Result, nil
}

var metricName = regexp.MustCompile(`\b(gswitch(?:_[a-z0-9]+|:[a-z0-9_]+:[a-z0-9_]+)+)\b`)

// shippedQueries reads the rules file and the dashboard: every rule
// expression, every panel target's expression (Grafana variables
// substituted), and every gswitch metric they name.
func shippedQueries(t *testing.T) (rules, panels map[string]string, names []string) {
	t.Helper()
	var rf struct {
		Groups []struct {
			Rules []struct {
				Record, Alert, Expr string
			}
		}
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	rules, panels = map[string]string{}, map[string]string{}
	seen := map[string]bool{}
	add := func(expr string) {
		for _, m := range metricName.FindAllString(expr, -1) {
			if !seen[m] {
				seen[m] = true
				names = append(names, m)
			}
		}
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			rules[r.Record+r.Alert] = r.Expr
			add(r.Expr)
		}
	}
	var dash struct {
		Panels []struct {
			Title   string
			Type    string
			Targets []struct{ Expr string }
		}
	}
	b, err = os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	sub := strings.NewReplacer(`"$instance"`, `".+"`, `"$port"`, `".+"`, "$__rate_interval", "15s", "$__interval", "1s")
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			panels[fmt.Sprintf("%s [%c]", p.Title, 'A'+i)] = sub.Replace(tg.Expr)
			add(tg.Expr)
		}
	}
	sort.Strings(names)
	return rules, panels, names
}

// TestPrometheusScrapesGswitch: Debian's prometheus scrapes a running
// gswitchd (an L3 switch with a shaped drr port and an afq port) while
// iperf3 runs and hosts send control messages; the shipped rules load
// (promtool check rules, and in the server); promtool check metrics passes
// on the live scrape; every metric the rules and the dashboard name returns
// data; every dashboard panel's query returns data; queue depth and drops
// are there for every port.
func TestPrometheusScrapesGswitch(t *testing.T) {
	prom, err1 := exec.LookPath("prometheus")
	promtool, err2 := exec.LookPath("promtool")
	if err1 != nil || err2 != nil {
		t.Skip("prometheus and promtool are not installed (apt-get install prometheus; scripts/install-deps.sh does it)")
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"check", "config", promConfig}} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
	}
	rules, panels, names := shippedQueries(t)
	if len(panels) < 15 || len(rules) < 10 {
		t.Fatalf("%d panel queries, %d rules: the shipped files did not parse as expected", len(panels), len(rules))
	}

	tp := NewTopo(t, 3)
	_, addrs := routedHosts(t, tp)
	sock := filepath.Join(t.TempDir(), "sw.sock")
	sw := tp.StartSwitch("control: {socket: "+sock+"}", PortOpts{
		0: addrs[0],
		1: addrs[1] + "\nrate: 100Mbit\nscheduler: drr\nqueues: 4",
		2: addrs[2] + "\nrate: 50Mbit\nscheduler: rsp\nqueues: 16\nmechanisms: {afq: {bytes_per_round: 1514, ecn_rounds: 2}}",
	})
	h1, h2, h3 := tp.Hosts[0], tp.Hosts[1], tp.Hosts[2]

	// promtool check metrics on a live scrape.
	resp, err := http.Get("http://" + sw.Metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lint := exec.Command(promtool, "check", "metrics")
	lint.Stdin = strings.NewReader(string(scrape))
	if out, err := lint.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics on a live scrape: %v\n%s", err, out)
	}

	// Prometheus, scraping every second and evaluating the shipped rules.
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	promAddr := ln.Addr().String()
	ln.Close()
	rulesAbs, _ := filepath.Abs(rulesFile)
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [%q]\nscrape_configs:\n  - job_name: gswitch\n    static_configs: [{targets: [%q]}]\n", rulesAbs, sw.Metrics)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var plog strings.Builder
	pc := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	pc.Stdout, pc.Stderr = &plog, &plog
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pc.Process.Kill()
		pc.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", plog.String())
		}
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if r, err := http.Get("http://" + promAddr + "/-/ready"); err == nil && r.StatusCode == 200 {
			r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready in 15 s:\n%s", plog.String())
		}
	}

	// Traffic: pings (the switch resolves the hosts by ARP, emitting
	// requests), TCP with ECN into the afq port, and from h1 a BFC pause
	// (forged on a host port) and an ExpressPass credit (a routed GC message).
	for _, d := range []*Host{h2, h3} {
		if out, err := h1.Exec(t, 10*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "2", d.IP); err != nil {
			t.Fatalf("ping %s: %v\n%s", d.IP, err, out)
		}
	}
	for _, h := range []*Host{h1, h3} {
		run(t, "ip", "netns", "exec", h.NS, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
	}
	sendControl(t, h1, h2)
	h3.StartIperfServer(t, 5201)
	h2.StartIperfServer(t, 5202)
	done := make(chan iperfResult, 2)
	go func() { done <- h1.iperfNoFatal(h3, 5201, 4, "-P", "4") }()
	go func() { done <- h1.iperfNoFatal(h2, 5202, 4) }()
	// gswitchctl's L3 views of the same switch, during the traffic.
	var routes control.RoutesView
	ctlJSON(t, sock, &routes, "routes")
	if !routes.L3 || len(routes.Routes) != 3 {
		t.Errorf("routes: %+v", routes)
	}
	var nb control.NeighborsView
	ctlJSON(t, sock, &nb, "neighbors")
	learnt := map[string]string{}
	for _, e := range nb.Entries {
		learnt[e.IP] = e.Port
	}
	for i, h := range tp.Hosts {
		if learnt[h.IP] != fmt.Sprintf("p%d", i+1) {
			t.Errorf("neighbors: %s on %q, want p%d: %+v", h.IP, learnt[h.IP], i+1, nb)
		}
	}
	for i := 0; i < 2; i++ {
		if r := <-done; r.Error != "" {
			t.Fatalf("iperf3: %s", r.Error)
		}
	}

	// Everything named must have data, every panel query must answer with data.
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		missing = missing[:0]
		for _, n := range names {
			if res, err := promQuery(t, promAddr, n); err != nil || len(res) == 0 {
				missing = append(missing, fmt.Sprintf("metric %s: %v", n, err))
			}
		}
		for title, q := range panels {
			if res, err := promQuery(t, promAddr, q); err != nil || len(res) == 0 {
				missing = append(missing, fmt.Sprintf("panel %q: %s: %d series, %v", title, q, len(res), err))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Error(m)
	}
	// Alert expressions evaluate (nothing fires here).
	for name, q := range rules {
		if _, err := promQuery(t, promAddr, q); err != nil {
			t.Errorf("rule %s: %v", name, err)
		}
	}
	// Queue depth and drops for every port.
	for _, q := range []string{`count by (port) (gswitch_queue_depth_bytes)`, `count by (port) (gswitch_drops_total)`} {
		res, err := promQuery(t, promAddr, q)
		if err != nil || len(res) != 3 {
			t.Errorf("%s: %d ports, %v", q, len(res), err)
		}
	}
	res, err := promQuery(t, promAddr, `gswitch:port_tx_bits:rate1m{port="p3"}`)
	if err != nil || len(res) != 1 {
		t.Fatalf("p3 throughput: %v %v", res, err)
	}
	t.Logf("%d metrics and %d panel queries answered by Prometheus; p3 tx over the last minute: %s", len(names), len(panels), res[0])

	// The rules loaded into the server are healthy.
	r, err := http.Get("http://" + promAddr + "/api/v1/rules")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var rr struct {
		Data struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
	}
	json.NewDecoder(r.Body).Decode(&rr)
	n := 0
	for _, g := range rr.Data.Groups {
		for _, x := range g.Rules {
			n++
			if x.Health != "ok" {
				t.Errorf("rule %s in %s: health %q %s", x.Name, g.Name, x.Health, x.LastError)
			}
		}
	}
	if n != len(rules) {
		t.Errorf("prometheus loaded %d rules, the file has %d", n, len(rules))
	}
}

// sendControl makes h1 send a BFC PAUSE (raw Ethernet, which the switch
// drops as forged on a host port and counts) and an ExpressPass credit to
// h2 (UDP, counted and routed).
func sendControl(t *testing.T, h1, h2 *Host) {
	t.Helper()
	b := make([]byte, 128)
	n, err := wire.BuildBFC(b, [6]byte{0x02, 1, 2, 3, 4, 5}, wire.BFC{Type: wire.TypeBFCPause, Seq: 1, Switch: 9, Port: 0, Queue: 1})
	if err != nil {
		t.Fatal(err)
	}
	pause := hex.EncodeToString(b[:n])
	n, err = wire.PutCredit(b, wire.Credit{Seq: 1, SentTime: 2})
	if err != nil {
		t.Fatal(err)
	}
	credit := hex.EncodeToString(b[:n])
	py := `import socket, sys, time
r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); r.bind(("eth0", 0))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(20):
    r.send(bytes.fromhex(sys.argv[1])); u.sendto(bytes.fromhex(sys.argv[2]), (sys.argv[3], 7000)); time.sleep(0.05)
`
	if out, err := h1.Exec(t, 10*time.Second, "python3", "-c", py, pause, credit, h2.IP); err != nil {
		t.Fatalf("sending control messages from %s: %v\n%s", h1.NS, err, out)
	}
}
