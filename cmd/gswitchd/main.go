// Command gswitchd is the gswitch daemon: a switch over the AF_XDP sockets
// of the interfaces its config lists.
//
//	gswitchd -config configs/two-port.yaml
//
// It attaches an XDP program to each port (through a bpf_link, so the
// kernel removes it even if gswitchd is killed), binds one AF_XDP socket per
// rx queue over one shared UMEM, starts the workers, serves Prometheus
// metrics and listens on its control socket for gswitchctl (package
// control). SIGINT or SIGTERM stop it cleanly: programs detached, sockets
// closed. SIGHUP reloads the config: what may change while it runs (ports'
// rate, burst and quantum) is applied, the rest refused in the log. Under
// systemd (Type=notify) it reports readiness and pings the watchdog.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/bpf"
	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/control"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/dataplane/metrics"
	"github.com/gswitch/gswitch/internal/linkwatch"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
)

// gcLimit is the Go memory gswitchd lets grow, above what captures may
// hold, before it collects garbage. The workers allocate nothing; the
// metrics and the control socket do, a little per scrape. A collection
// stops the world (the workers too, until every thread of the process has
// reached a safe point, which on a loaded machine waits for the slowest of
// them to get a CPU) and scans the workers' stacks: with the default
// GOGC the small heap doubles, and a collection comes, every few scrapes.
// So gswitchd collects only when its memory reaches this much
// (debug.SetMemoryLimit): every few hundred thousand scrapes.
const gcLimit = 256 << 20

func main() {
	cfgPath := flag.String("config", "", "YAML config file (see configs/reference.yaml)")
	check := flag.Bool("check", false, "validate the config (and that its interfaces exist) and exit")
	metricsAddr := flag.String("metrics", "", "override the config's metrics address (\"off\" disables)")
	controlPath := flag.String("control", "", "override the config's control socket path (\"off\" disables)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("gswitchd: ")
	if *cfgPath == "" {
		fmt.Fprintln(os.Stderr, "usage: gswitchd -config FILE [-check] [-metrics ADDR] [-control PATH]")
		os.Exit(2)
	}
	cfg, err := config.Load(*cfgPath)
	if err == nil {
		err = cfg.Check(func(name string) error { _, err := net.InterfaceByName(name); return err })
	}
	if err != nil {
		log.Fatal(err)
	}
	defaultSocket := false
	overrides := func(c *config.Config) error {
		if *metricsAddr != "" {
			c.Metrics = *metricsAddr
		}
		if *controlPath != "" {
			c.Control.Socket = *controlPath
		}
		if c.Control.Socket == "" {
			c.Control.Socket = control.DefaultSocket(*cfgPath)
			defaultSocket = true
		}
		return c.Check(func(name string) error { _, err := net.InterfaceByName(name); return err })
	}
	overrides(cfg)
	if *check {
		fmt.Println("config OK")
		return
	}
	if err := run(cfg, *cfgPath, defaultSocket, overrides); err != nil {
		log.Fatal(err)
	}
}

// captureMemory is control.capture_memory for control.Options: "0" turns
// capture off (< 0 there).
func captureMemory(c config.Control) int64 {
	if c.CaptureMemory == 0 {
		return -1
	}
	return int64(c.CaptureMemory)
}

// devices is what run sets up on the host, torn down by close.
type devices struct {
	umem  *afxdp.UMEM
	ports []*portDev
	mode  bpf.Mode
	bind  afxdp.BindFlags
}

// portDev is one port's XDP program and sockets. They are replaced when the
// interface is deleted and comes back.
type portDev struct {
	prog    *bpf.Port
	sockets []*afxdp.Socket
	nq      int  // rx queues bound
	gone    bool // the interface was deleted: sockets detached and closed
}

func (d *devices) close() {
	for _, p := range d.ports {
		p.close()
	}
	if d.umem != nil {
		d.umem.Close()
	}
}

func (p *portDev) close() {
	if p.prog != nil {
		if err := p.prog.Close(); err != nil {
			log.Printf("detaching XDP program: %v", err)
		}
		p.prog = nil
	}
	for _, s := range p.sockets {
		s.Close()
	}
	p.sockets = nil
}

// open loads the XDP program on the interface and binds one socket per rx queue.
func (d *devices) open(pd *portDev, ifindex int) ([]dataplane.Link, error) {
	prog, err := bpf.LoadWith(bpf.Options{Frags: d.bind.SG})
	if err != nil {
		return nil, err
	}
	pd.prog = prog
	var pl []dataplane.Link
	for q := 0; q < pd.nq; q++ {
		s, err := d.umem.Open(ifindex, q, afxdp.DefaultRingSizes, d.bind)
		if err != nil {
			if d.bind.SG && errors.Is(err, unix.EINVAL) {
				err = fmt.Errorf("%w (frames longer than a UMEM frame need multi-buffer AF_XDP sockets, Linux 6.6 or later: lower the ports' MTU to %d or below, or run a newer kernel)", err, int(d.umem.FrameSize)-rxHeadroom-18)
			}
			return nil, err
		}
		pd.sockets = append(pd.sockets, s)
		if err := prog.Register(q, s.FD()); err != nil {
			return nil, err
		}
		pl = append(pl, s)
	}
	if err := prog.Attach(ifindex, d.mode); err != nil {
		return nil, err
	}
	return pl, nil
}

func run(cfg *config.Config, cfgPath string, defaultSocket bool, reloadCheck func(*config.Config) error) error {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcLimit + int64(cfg.Control.CaptureMemory))
	mode, err := bpf.ParseMode(cfg.XDPMode)
	if err != nil {
		return err
	}
	dev := &devices{mode: mode, bind: afxdp.BindFlags{Copy: cfg.BindMode == "copy", ZeroCopy: cfg.BindMode == "zerocopy"}}
	defer dev.close()
	if dev.umem, err = afxdp.NewUMEM(uint32(cfg.Frames), uint32(cfg.FrameSize)); err != nil {
		return err
	}
	// The dataplane's copy of the config: each port's mac resolved to its
	// interface's where the file sets none (cfg stays as the file says, for
	// reloads to compare against).
	dcfg := dataplane.Config{Config: *cfg}
	dcfg.Ports = slices.Clone(cfg.Ports)
	var links [][]dataplane.Link
	var info []metrics.PortInfo
	// A port's longest frame is its MTU plus the Ethernet header and a
	// VLAN tag; the longest of the ports' decides whether frames may span
	// UMEM frames (multi-buffer sockets, an XDP program with frags, jumbo
	// slots in the dataplane): see checkMTU.
	ifcs := make([]*net.Interface, len(cfg.Ports))
	for i, pc := range cfg.Ports {
		ifc, err := net.InterfaceByName(pc.Interface)
		if err != nil {
			return fmt.Errorf("ports[%d].interface: %s: %w", i, pc.Interface, err)
		}
		sg, err := checkMTU(i, pc.Interface, ifc.MTU, cfg.FrameSize)
		if err != nil {
			return err
		}
		ifcs[i] = ifc
		dcfg.PortMaxFrame = append(dcfg.PortMaxFrame, ifc.MTU+18)
		if sg && !dev.bind.SG {
			dev.bind.SG = true
			log.Printf("ports[%d]: %s has MTU %d: frames longer than a %d-byte UMEM frame holds are received and sent as multi-buffer chains and kept in jumbo slots",
				i, pc.Interface, ifc.MTU, cfg.FrameSize)
		}
	}
	for i, pc := range cfg.Ports {
		ifc := ifcs[i]
		nq := rxQueues(pc.Interface)
		if pc.RxQueues > 0 {
			if pc.RxQueues > nq {
				return fmt.Errorf("ports[%d].rx_queues: %d, but %s has %d rx queues", i, pc.RxQueues, pc.Interface, nq)
			}
			nq = pc.RxQueues
		}
		pd := &portDev{nq: nq}
		dev.ports = append(dev.ports, pd)
		pl, err := dev.open(pd, ifc.Index)
		if err != nil {
			return fmt.Errorf("port %s (%s): %w", pc.Name, pc.Interface, err)
		}
		prog := pd.prog
		zc := pl[0].(*afxdp.Socket).ZeroCopy()
		mac := net.HardwareAddr(pc.MAC)
		if mac == nil {
			mac = ifc.HardwareAddr
			dcfg.Ports[i].MAC = config.MAC(mac)
		}
		log.Printf("port %d %s: interface %s (ifindex %d, %s), %s, %d rx queue(s), XDP %s mode, %s, rate %s, buffer %d B, scheduler %s, mechanisms %v",
			i, pc.Name, pc.Interface, ifc.Index, mac, pc.Role, nq, prog.Mode, map[bool]string{true: "zero-copy", false: "copy mode"}[zc],
			pc.Rate, pc.Buffer, pc.Scheduler, pc.Mechanisms.Names())
		links = append(links, pl)
		info = append(info, metrics.PortInfo{Interface: pc.Interface, XDPMode: prog.Mode.String(), ZeroCopy: zc})
	}
	sw, err := dataplane.New(dcfg, dev.umem.Mem, dev.umem.FrameSize, links)
	if err != nil {
		return err
	}
	defer sw.Close()

	var srv *http.Server
	if cfg.Metrics != "off" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.New(sw, info), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		for name, m := range sw.Mechanisms() {
			if c, ok := m.(prometheus.Collector); ok {
				if err := reg.Register(c); err != nil {
					return fmt.Errorf("metrics of mechanism %s: %w", name, err)
				}
			}
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ln, err := net.Listen("tcp", cfg.Metrics)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		log.Printf("metrics on http://%s/metrics", ln.Addr())
	}

	// Signals are taken before the control socket exists: a SIGTERM from
	// then on ends run, whose deferred Close removes the socket, rather
	// than killing gswitchd with its socket left behind.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var ctl *control.Server
	if cfg.Control.Socket != "off" {
		ctl = control.NewServer(sw, control.Options{Config: cfg, ConfigPath: cfgPath, Info: info, CheckConfig: reloadCheck,
			Group: cfg.Control.Group, AdminGroup: cfg.Control.AdminGroup, MaxConns: cfg.Control.MaxConnections,
			CaptureMemory: captureMemory(cfg.Control)})
		err := ctl.Listen(cfg.Control.Socket)
		if errors.Is(err, control.ErrSocketInUse) && defaultSocket {
			// Another switch's config has the same file name: this one takes a socket named by its pid.
			alt := strings.TrimSuffix(cfg.Control.Socket, ".sock") + "-" + strconv.Itoa(os.Getpid()) + ".sock"
			log.Printf("%s is another gswitchd's; using %s (set control.socket to choose)", cfg.Control.Socket, alt)
			cfg.Control.Socket = alt
			err = ctl.Listen(alt)
		}
		if err != nil {
			return err
		}
		defer ctl.Close()
	}
	if err := sw.Start(); err != nil {
		sw.Stop()
		return err
	}
	if !cfg.Timescale.One() {
		log.Printf("timescale %s: the config's rates and times are a fabric's, run %s times slower here (rates above are this machine's; metrics are in this machine's time, gswitch_timescale gives K)", cfg.Timescale, cfg.Timescale)
	}
	if cfg.Realtime > 0 {
		log.Printf("workers under SCHED_FIFO at priority %d (they never spin)", cfg.Realtime)
	}
	if cfg.Nice != 0 || cfg.Slice != 0 {
		log.Printf("workers at nice %d, scheduler slice %v (0: the kernel's)", cfg.Nice, cfg.Slice)
	}
	if len(cfg.CPUs) > 0 {
		log.Printf("workers pinned to CPUs %v (worker i on cpus[i mod %d])", cfg.CPUs, len(cfg.CPUs))
	}
	if ctl != nil {
		go ctl.Serve()
		log.Printf("control socket %s (gswitchctl -s %s)", ctl.Path(), ctl.Path())
	}
	control.Notify("READY=1")
	var watchdog <-chan time.Time
	if d := control.WatchdogInterval(); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		watchdog = t.C
	}
	log.Printf("forwarding with %d worker(s), %d frames of %d B; queues may hold %d frames, the rest keep the fill rings and the emit reserve",
		sw.Workers(), cfg.Frames, cfg.FrameSize, queueFrames(sw))
	events := make(chan linkwatch.Event, 64)
	var names []string
	for _, pc := range cfg.Ports {
		names = append(names, pc.Interface)
	}
	housekeep := time.NewTicker(time.Second)
	defer housekeep.Stop()
	watchErr := make(chan error, 1)
	go func() { watchErr <- linkwatch.Watch(ctx, names, func(e linkwatch.Event) { events <- e }) }()
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case <-housekeep.C:
			sw.Housekeep()
		case <-watchdog:
			control.Notify("WATCHDOG=1") // the main loop runs; the workers never block it
		case <-hup:
			if ctl == nil {
				log.Printf("SIGHUP: no control socket, nothing reloads (control.socket is off)")
				continue
			}
			r, err := ctl.Reload()
			if err != nil {
				log.Printf("SIGHUP: %v", err)
				continue
			}
			for _, a := range r.Applied {
				log.Printf("reload: applied %s", a)
			}
			for _, x := range r.Refused {
				log.Printf("reload: refused %s", x)
			}
			if len(r.Applied)+len(r.Refused) == 0 {
				log.Printf("reload: %s: no change", cfgPath)
			}
		case err := <-watchErr:
			if err != nil {
				log.Printf("watching interfaces: %v (ports will not follow their interfaces going down or away)", err)
			}
		case e := <-events:
			for i, pc := range cfg.Ports {
				if pc.Interface == e.Name {
					dev.follow(sw, i, pc, e)
				}
			}
		}
	}
	log.Printf("stopping")
	control.Notify("STOPPING=1")
	if ctl != nil {
		ctl.Close() // captures end before the workers stop
	}
	sw.Stop()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		srv.Shutdown(sctx)
		cancel()
	}
	f := sw.Frames()
	log.Printf("stopped; frames: %d free, %d on fill rings, %d queued, %d in flight, of %d", f.Free, f.Fill, f.Queued, f.Tx+f.Handoff+f.Returning, f.Total)
	return nil
}

// follow brings port i in line with its interface: down while the
// interface is down (or its carrier is off), detached while it does not
// exist (the frames on its rings come back, its sockets are closed), and
// bound anew when it exists again.
func (d *devices) follow(sw *dataplane.Switch, i int, pc config.Port, e linkwatch.Event) {
	pd := d.ports[i]
	if !e.Exists {
		if pd.gone {
			return
		}
		log.Printf("port %s: interface %s is gone: port down, reclaiming its frames", pc.Name, pc.Interface)
		sw.DetachPort(i)
		for t := time.Now(); !sw.Detached(i); time.Sleep(time.Millisecond) {
			if time.Since(t) > 5*time.Second {
				log.Printf("port %s: workers did not let go of the sockets in 5 s; leaving them open", pc.Name)
				return
			}
		}
		pd.close()
		pd.gone = true
		if lost := sw.Ports()[i].Lost(); lost > 0 {
			log.Printf("port %s: %d frames stayed in the kernel", pc.Name, lost)
		}
		return
	}
	if pd.gone {
		links, err := d.open(pd, e.Index)
		if err != nil {
			pd.close()
			log.Printf("port %s: interface %s is back (ifindex %d) but cannot be bound: %v", pc.Name, pc.Interface, e.Index, err)
			return
		}
		if err := sw.AttachPort(i, links); err != nil {
			pd.close()
			log.Printf("port %s: %v", pc.Name, err)
			return
		}
		pd.gone = false
		log.Printf("port %s: interface %s is back (ifindex %d), bound again", pc.Name, pc.Interface, e.Index)
	}
	if down := !e.Up; down != sw.Ports()[i].Down() {
		log.Printf("port %s: interface %s %s", pc.Name, pc.Interface, map[bool]string{true: "down", false: "up"}[down])
		sw.SetPortDown(i, down)
	}
}

func queueFrames(sw *dataplane.Switch) int64 {
	var n int64
	for w := 0; w < sw.Workers(); w++ {
		n += sw.QueueFrameLimit(w)
	}
	return n
}

// rxQueues counts the interface's rx queues in sysfs (1 if it cannot tell).
func rxQueues(ifname string) int {
	m, err := filepath.Glob(filepath.Join("/sys/class/net", ifname, "queues", "rx-*"))
	if err != nil || len(m) == 0 {
		return 1
	}
	return len(m)
}

// rxHeadroom is what the kernel leaves at the start of a UMEM frame before
// a received frame in copy mode (XDP_PACKET_HEADROOM).
const rxHeadroom = 256

// checkMTU reports whether an interface's MTU makes frames that one UMEM
// frame cannot hold, so that they must travel as multi-buffer chains
// (sg), and refuses an MTU whose frames no jumbo slot may hold. A frame
// is the MTU plus the Ethernet header and one VLAN tag.
func checkMTU(i int, ifname string, mtu, frameSize int) (sg bool, err error) {
	room := frameSize - rxHeadroom
	if mtu+18 <= room {
		return false, nil
	}
	if mtu+18 > dataplane.MaxJumboFrame {
		return false, fmt.Errorf("ports[%d].interface: %s has MTU %d: its frames (up to %d B) are longer than gswitchd carries (%d B); lower the MTU (ip link set %s mtu %d)",
			i, ifname, mtu, mtu+18, dataplane.MaxJumboFrame, ifname, dataplane.MaxJumboFrame-18)
	}
	return true, nil
}
