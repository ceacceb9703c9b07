// Command gswitchd is the gswitch daemon: a switch over the AF_XDP sockets
// of the interfaces its config lists.
//
//	gswitchd -config configs/two-port.yaml
//
// It attaches an XDP program to each port (through a bpf_link, so the
// kernel removes it even if gswitchd is killed), binds one AF_XDP socket per
// rx queue over one shared UMEM, starts the workers and serves Prometheus
// metrics. SIGINT or SIGTERM stop it cleanly: programs detached, sockets
// closed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/bpf"
	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/dataplane/metrics"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/gswitch/gswitch/sched"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	cfgPath := flag.String("config", "", "YAML config file (see configs/reference.yaml)")
	check := flag.Bool("check", false, "validate the config (and that its interfaces exist) and exit")
	metricsAddr := flag.String("metrics", "", "override the config's metrics address (\"off\" disables)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("gswitchd: ")
	if *cfgPath == "" {
		fmt.Fprintln(os.Stderr, "usage: gswitchd -config FILE [-check] [-metrics ADDR]")
		os.Exit(2)
	}
	cfg, err := config.Load(*cfgPath)
	if err == nil {
		err = cfg.Check(func(name string) error { _, err := net.InterfaceByName(name); return err })
	}
	if err != nil {
		log.Fatal(err)
	}
	if *metricsAddr != "" {
		cfg.Metrics = *metricsAddr
	}
	if *check {
		fmt.Println("config OK")
		return
	}
	if err := run(cfg); err != nil {
		log.Fatal(err)
	}
}

// devices is what run sets up on the host, torn down by close.
type devices struct {
	umem    *afxdp.UMEM
	sockets []*afxdp.Socket
	progs   []*bpf.Port
}

func (d *devices) close() {
	for _, p := range d.progs {
		if err := p.Close(); err != nil {
			log.Printf("detaching XDP program: %v", err)
		}
	}
	for _, s := range d.sockets {
		s.Close()
	}
	if d.umem != nil {
		d.umem.Close()
	}
}

func run(cfg *config.Config) error {
	mode, err := bpf.ParseMode(cfg.XDPMode)
	if err != nil {
		return err
	}
	dev := &devices{}
	defer dev.close()
	if dev.umem, err = afxdp.NewUMEM(uint32(cfg.Frames), uint32(cfg.FrameSize)); err != nil {
		return err
	}
	bind := afxdp.BindFlags{Copy: cfg.BindMode == "copy", ZeroCopy: cfg.BindMode == "zerocopy"}
	dcfg := dataplane.Config{
		SwitchID: uint16(cfg.SwitchID), Workers: cfg.Workers, MACTableSize: cfg.MACTable.Size, MACAging: cfg.MACTable.AgingDur,
		BusyPoll: cfg.BusyPoll, SpinTime: cfg.SpinDur, SharedBuffer: cfg.BufferBytes, Alpha: cfg.AlphaValue,
	}
	var links [][]dataplane.Link
	var info []metrics.PortInfo
	for i, pc := range cfg.Ports {
		ifc, err := net.InterfaceByName(pc.Interface)
		if err != nil {
			return fmt.Errorf("ports[%d].interface: %s: %w", i, pc.Interface, err)
		}
		nq := rxQueues(pc.Interface)
		if pc.RxQueues > 0 {
			if pc.RxQueues > nq {
				return fmt.Errorf("ports[%d].rx_queues: %d, but %s has %d rx queues", i, pc.RxQueues, pc.Interface, nq)
			}
			nq = pc.RxQueues
		}
		prog, err := bpf.Load()
		if err != nil {
			return fmt.Errorf("port %s: %w", pc.Name, err)
		}
		dev.progs = append(dev.progs, prog)
		var pl []dataplane.Link
		for q := 0; q < nq; q++ {
			s, err := dev.umem.Open(ifc.Index, q, afxdp.DefaultRingSizes, bind)
			if err != nil {
				return fmt.Errorf("port %s (%s): %w", pc.Name, pc.Interface, err)
			}
			dev.sockets = append(dev.sockets, s)
			if err := prog.Register(q, s.FD()); err != nil {
				return fmt.Errorf("port %s: %w", pc.Name, err)
			}
			pl = append(pl, s)
		}
		if err := prog.Attach(ifc.Index, mode); err != nil {
			return fmt.Errorf("port %s (%s): %w", pc.Name, pc.Interface, err)
		}
		zc := pl[0].(*afxdp.Socket).ZeroCopy()
		mac := pc.MACAddr
		if mac == nil {
			mac = ifc.HardwareAddr
		}
		var mechs []dataplane.MechConfig
		var names []string
		for _, m := range pc.Mechs {
			mechs = append(mechs, dataplane.MechConfig{Name: m.Name, Config: m.Config})
			names = append(names, m.Name)
		}
		log.Printf("port %d %s: interface %s (ifindex %d, %s), %s, %d rx queue(s), XDP %s mode, %s, rate %s, buffer %d B, scheduler %s, mechanisms %v",
			i, pc.Name, pc.Interface, ifc.Index, mac, pc.RoleValue, nq, prog.Mode, map[bool]string{true: "zero-copy", false: "copy mode"}[zc],
			orUnlimited(pc.Rate), pc.BufferBytes, pc.Scheduler, names)
		links = append(links, pl)
		info = append(info, metrics.PortInfo{Interface: pc.Interface, XDPMode: prog.Mode.String(), ZeroCopy: zc})
		dcfg.Ports = append(dcfg.Ports, dataplane.PortConfig{
			Name: pc.Name, Role: pc.RoleValue, MAC: mac, RateBits: pc.RateBits, BurstBytes: pc.BurstBytes, BufferBytes: pc.BufferBytes,
			Scheduler: pc.Scheduler, Queues: pc.Queues, QueueBytes: pc.QueueBufferBytes, Quantum: pc.Quantum, Classify: classifier(pc),
			Mechanisms: mechs,
		})
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

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sw.Start()
	log.Printf("forwarding with %d worker(s), %d frames of %d B", sw.Workers(), cfg.Frames, cfg.FrameSize)
	<-ctx.Done()
	log.Printf("stopping")
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

// classifier builds the port's DSCP or PCP map: the default class-selector
// mapping with the config's overrides.
func classifier(pc config.Port) sched.Classifier {
	n := pc.Queues
	if n == 0 {
		n = sched.DefaultQueues
	}
	c := sched.DefaultClassifier(n)
	if pc.Classify == "queue" {
		c.By = "queue"
		return c
	}
	if pc.Classify == "pcp" {
		c.By = "pcp"
		for p := 0; p < 8; p++ {
			c.Map[p] = uint8(min(7-p, n-1))
		}
		for k, v := range pc.PCPMap {
			c.Map[k] = uint8(v)
		}
		return c
	}
	for k, v := range pc.DSCPMap {
		c.Map[k] = uint8(v)
	}
	return c
}

// rxQueues counts the interface's rx queues in sysfs (1 if it cannot tell).
func rxQueues(ifname string) int {
	m, err := filepath.Glob(filepath.Join("/sys/class/net", ifname, "queues", "rx-*"))
	if err != nil || len(m) == 0 {
		return 1
	}
	return len(m)
}

func orUnlimited(s string) string {
	if s == "" {
		return "unlimited"
	}
	return s
}
