package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/gswitch/gswitch/internal/qdepth"
	"github.com/gswitch/gswitch/perf/timescale"
)

// QueueSeries is what watch records: the depth of every queue of a
// gswitchd at each step. The step is on both clocks: StepNs is wall
// (what scripts read), StepFabricNs the fabric's (StepNs / Timescale).
type QueueSeries struct {
	Metrics      string               `json:"metrics"`
	StepNs       int64                `json:"step_ns"`
	StepFabricNs int64                `json:"step_fabric_ns,omitempty"`
	Timescale    float64              `json:"timescale,omitempty"` // absent: 1
	Bytes        map[string][]float64 `json:"bytes"`               // "port/queue" -> depth per step
}

// scale is the series' timescale (1 if it has none, as files other tools wrote).
func (s *QueueSeries) scale() timescale.Scale {
	if sc, err := timescale.New(s.Timescale); err == nil {
		return sc
	}
	return timescale.Scale{}
}

// watch scrapes gswitchd's queue depths for plot -kind queue.
func watch(args []string) error {
	fs := flag.NewFlagSet("watch", flag.ExitOnError)
	clock := addClock(fs)
	url := fs.String("metrics", "http://127.0.0.1:9100/metrics", "gswitchd's metrics endpoint")
	step := clock.duration("interval", 50*time.Millisecond, "scrape interval")
	dur := clock.duration("duration", 30*time.Second, "how long to watch")
	out := fs.String("out", "queues.json", "JSON to write")
	fs.Parse(args)
	if err := clock.resolve(); err != nil {
		return err
	}
	if step.Wall <= 0 {
		return fmt.Errorf("-interval: %v (want a positive duration)", step.Fabric)
	}
	s := QueueSeries{Metrics: *url, StepNs: step.Wall.Nanoseconds(), StepFabricNs: step.Fabric.Nanoseconds(), Timescale: clock.Scale.K(), Bytes: map[string][]float64{}}
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(step.Wall)
	defer tick.Stop()
	end := time.Now().Add(dur.Wall)
	for n := 0; time.Now().Before(end); n++ {
		depth, err := scrapeDepth(client, *url)
		if err != nil {
			return err
		}
		for k, v := range depth {
			for len(s.Bytes[k]) < n {
				s.Bytes[k] = append(s.Bytes[k], 0)
			}
			s.Bytes[k] = append(s.Bytes[k], v)
		}
		<-tick.C
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gsperf watch: %d queues, %s\n", len(s.Bytes), *out)
	return os.WriteFile(*out, b, 0o644)
}

// scrapeDepth reads gswitch_queue_depth_bytes{port="p",queue="q"} v lines
// (package qdepth), keyed "p/q".
func scrapeDepth(c *http.Client, url string) (map[string]float64, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return qdepth.Parse(resp.Body)
}
