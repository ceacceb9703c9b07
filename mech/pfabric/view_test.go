package pfabric_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/pfabric"
)

func TestView(t *testing.T) {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"},
		{Name: "b", Scheduler: "pfabric", Mechanisms: config.Mechanisms{{Name: "pfabric", Config: &pfabric.Config{Rank: pfabric.RankLAS}}}},
		{Name: "c", Scheduler: "pfabric", Mechanisms: config.Mechanisms{{Name: "pfabric", Config: &pfabric.Config{Rank: pfabric.RankGsperf}}}}}}}
	h := dptest.New(t, cfg, 4096)
	d := h.SW.Mechanisms()["pfabric"].(mech.Viewer)
	if d.View(0) != nil {
		t.Fatal("port a has no pfabric but describes some")
	}
	if v := d.View(1); v["rank"] != pfabric.RankLAS || v["las_decay_bytes"] == nil {
		t.Fatalf("port b: %v", v)
	}
	if v := d.View(2); v["rank"] != pfabric.RankGsperf || len(v) != 1 {
		t.Fatalf("port c: %v", v)
	}
}
