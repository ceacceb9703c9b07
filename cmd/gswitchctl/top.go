package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/control"
	"golang.org/x/sys/unix"
)

// TopRow is one port's rates over the last interval (gswitchctl top -o json
// prints one JSON object per interval: {"time", "interval_seconds", "ports"}).
type TopRow struct {
	Port         string  `json:"port"`
	Up           bool    `json:"up"`
	RxBits       float64 `json:"rx_bits_per_second"`
	RxPackets    float64 `json:"rx_packets_per_second"`
	TxBits       float64 `json:"tx_bits_per_second"`
	TxPackets    float64 `json:"tx_packets_per_second"`
	Drops        float64 `json:"drops_per_second"`
	QueueBytes   uint64  `json:"queue_bytes"`
	QueuePackets uint64  `json:"queue_packets"`
	Paused       int     `json:"paused_queues"`
	RateBits     uint64  `json:"rate_bits"`
	Load         float64 `json:"load"` // tx bits / the port's rate (0 when unlimited)
}

// topRows computes rates between two snapshots.
func topRows(a, b *control.Stats) []TopRow {
	dt := b.Time.Sub(a.Time).Seconds()
	var rows []TopRow
	for i, p := range b.Ports {
		r := TopRow{Port: p.Name, Up: p.Up, QueueBytes: p.QueueBytes, QueuePackets: p.QueuePackets, Paused: p.Paused, RateBits: p.RateBits}
		if i < len(a.Ports) && a.Ports[i].Name == p.Name && dt > 0 {
			o := a.Ports[i]
			per := func(x, y uint64) float64 {
				if y < x {
					return 0
				}
				return float64(y-x) / dt
			}
			r.RxBits, r.RxPackets = 8*per(o.RxBytes, p.RxBytes), per(o.RxPackets, p.RxPackets)
			r.TxBits, r.TxPackets = 8*per(o.TxBytes, p.TxBytes), per(o.TxPackets, p.TxPackets)
			r.Drops = per(o.Drops, p.Drops)
			if p.RateBits > 0 {
				// The shaper counts preamble, FCS and gap (24 B a frame): so does the load.
				r.Load = (r.TxBits + 8*24*r.TxPackets) / float64(p.RateBits)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func topMain(args []string) int {
	f := newCtlFlags("top", "top [-i INTERVAL] [-n COUNT] [-s SWITCH] [-o json]")
	interval := f.fs.Duration("i", time.Second, "refresh interval")
	n := f.fs.Int("n", 0, "stop after this many refreshes (0: until Ctrl-C)")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	if *interval < 10*time.Millisecond {
		fmt.Fprintln(os.Stderr, "gswitchctl top: -i must be at least 10ms")
		return 2
	}
	cl, err := f.dial()
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tty := isTerminal(os.Stdout) && !f.json()
	var prev control.Stats
	if err := cl.Call(control.Request{Cmd: "stats"}, &prev); err != nil {
		return fail(err)
	}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for i := 0; *n == 0 || i < *n; i++ {
		select {
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
		var cur control.Stats
		if err := cl.Call(control.Request{Cmd: "stats"}, &cur); err != nil {
			return fail(err)
		}
		rows := topRows(&prev, &cur)
		dt := cur.Time.Sub(prev.Time).Seconds()
		prev = cur
		if f.json() {
			b, _ := json.Marshal(struct {
				Time     time.Time `json:"time"`
				Interval float64   `json:"interval_seconds"`
				Ports    []TopRow  `json:"ports"`
			}{cur.Time, dt, rows})
			fmt.Println(string(b))
			continue
		}
		if tty {
			fmt.Print("\x1b[H\x1b[2J") // home, clear
		}
		fmt.Printf("gswitchctl top  %s  every %s  (Ctrl-C stops)\n", cur.Time.Format("15:04:05"), *interval)
		t := newTable("PORT", "STATE", "RX bit/s", "RX pkt/s", "TX bit/s", "TX pkt/s", "LOAD", "DROP/s", "QUEUED B", "QUEUED PKTS", "PAUSED")
		for _, r := range rows {
			load := "-"
			if r.RateBits > 0 {
				load = strconv.FormatFloat(100*r.Load, 'f', 0, 64) + "%"
			}
			t.row(r.Port, upDown(r.Up), rate(r.RxBits), rate(r.RxPackets), rate(r.TxBits), rate(r.TxPackets), load,
				rate(r.Drops), strconv.FormatUint(r.QueueBytes, 10), strconv.FormatUint(r.QueuePackets, 10), strconv.Itoa(r.Paused))
		}
		t.flush()
		if !tty {
			fmt.Println()
		}
	}
	return 0
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
