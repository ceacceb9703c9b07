package qdepth

import (
	"errors"
	"io"
	"maps"
	"strings"
	"testing"
)

// page is part of a gswitchd metrics page: two ports' queue depths among
// other metrics, one value that is not a number.
const page = `# HELP gswitch_queue_depth_bytes Bytes queued in the port's egress queue.
# TYPE gswitch_queue_depth_bytes gauge
gswitch_queue_depth_bytes{port="p1",queue="0"} 0
gswitch_queue_depth_bytes{port="p1",queue="1"} 3028
gswitch_queue_depth_bytes{port="r1",queue="0"} 1.5e+06
gswitch_queue_depth_bytes{port="r2",queue="0"} many
gswitch_queue_depth_packets{port="p1",queue="1"} 2
gswitch_drops_total{port="p1",reason="queue_limit"} 7
`

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"p1/0": 0, "p1/1": 3028, "r1/0": 1.5e6}
	if !maps.Equal(got, want) {
		t.Errorf("Parse = %v, want %v", got, want)
	}
}

// TestParseCutShort: a page whose reading fails keeps the depths before the failure.
func TestParseCutShort(t *testing.T) {
	fail := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(`gswitch_queue_depth_bytes{port="r1",queue="0"} 42`+"\n"), errReader{fail})
	got, err := Parse(r)
	if !errors.Is(err, fail) {
		t.Errorf("err = %v, want %v", err, fail)
	}
	if got["r1/0"] != 42 || len(got) != 1 {
		t.Errorf("Parse = %v, want map[r1/0:42]", got)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
