package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gswitch/gswitch/internal/qdepth"
)

// watch samples gswitch_queue_depth_bytes of queue 0 of the named ports
// as fast as the endpoints answer (at most every interval), with the wall
// clock of each sample, and writes {"host:port/port": [[unix ns, bytes], ...]}.
func watch(args []string) error {
	fs := flag.NewFlagSet("watch", flag.ExitOnError)
	out := fs.String("out", "queues.json", "JSON to write")
	dur := fs.Duration("duration", 5*time.Second, "how long to watch")
	every := fs.Duration("interval", time.Millisecond, "least time between two samples of one endpoint")
	fs.Parse(args)
	type target struct{ url, port, key string }
	var ts []target
	for _, a := range fs.Args() {
		u, p, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("watch: %q is not host:port=PORT", a)
		}
		ts = append(ts, target{"http://" + u + "/metrics", p, u + "/" + p})
	}
	series := map[string][][2]float64{}
	client := &http.Client{Timeout: time.Second}
	for end := time.Now().Add(*dur); time.Now().Before(end); {
		next := time.Now().Add(*every)
		for _, t := range ts {
			resp, err := client.Get(t.url)
			if err != nil {
				continue
			}
			at := time.Now().UnixNano()
			depth, _ := qdepth.Parse(resp.Body) // a page cut short keeps what came before the cut
			resp.Body.Close()
			if f, ok := depth[t.port+"/0"]; ok {
				series[t.key] = append(series[t.key], [2]float64{float64(at), f})
			}
		}
		time.Sleep(time.Until(next))
	}
	b, err := json.Marshal(series)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, b, 0o644)
}
