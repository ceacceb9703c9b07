// Package qdepth reads the egress queue depths on a gswitchd metrics page
// (gswitch_queue_depth_bytes), for the tools that sample them while a run
// goes on: gsperf watch and sfc-report watch. Each samples in its own way
// (a fixed step over every queue of one switch; timestamped samples of one
// queue of several switches); the page's format is theirs in common.
package qdepth

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Parse reads the gswitch_queue_depth_bytes{port="p",queue="q"} v lines of
// a metrics page in Prometheus' text format, keyed "p/q"; other lines, and
// values that are not numbers, are skipped. On a read error it returns the
// depths read before it with the error.
func Parse(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "gswitch_queue_depth_bytes{") {
			continue
		}
		labels, val, ok := strings.Cut(l[len("gswitch_queue_depth_bytes{"):], "} ")
		if !ok {
			continue
		}
		var port, queue string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "port":
				port = v
			case "queue":
				queue = v
			}
		}
		f, err := strconv.ParseFloat(val, 64)
		if err == nil {
			m[port+"/"+queue] = f
		}
	}
	return m, sc.Err()
}
