package config

import (
	"strings"
	"testing"
)

func TestControl(t *testing.T) {
	c, err := Parse([]byte("ports: [{interface: a}]\ncontrol: {socket: /run/gswitch/x.sock, group: gswitch}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Control.Socket != "/run/gswitch/x.sock" || c.Control.Group != "gswitch" {
		t.Fatalf("control %+v", c.Control)
	}
	for in, want := range map[string]string{
		"control: {socket: run/x.sock}":                        "control.socket: \"run/x.sock\" is not an absolute path",
		"control: {socket: /" + strings.Repeat("x", 120) + "}": "control.socket:",
		"control: {group: Wheel!}":                             "control.group:",
		"control: {sockt: /x}":                                 `unknown key "sockt" in control`,
		"control: {admin_group: Ops!}":                         "control.admin_group: \"Ops!\" is not a group name",
		"control: {max_connections: -1}":                       "control.max_connections: -1 out of range",
		"control: {max_connections: 5000}":                     "control.max_connections: 5000 out of range",
		"control: {capture_memory: lots}":                      "control.capture_memory: line 2: \"lots\" is not a size",
		"control: {capture_memory: 1KB}":                       "control.capture_memory: 1KB is less than one 64KiB ring",
	} {
		_, err := Parse([]byte("ports: [{interface: a}]\n" + in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
	if _, err := Parse([]byte("ports: [{interface: a}]\ncontrol: {socket: off}")); err != nil {
		t.Fatal(err)
	}
	if c.Control.AdminGroup != "" || c.Control.MaxConnections != DefaultControlConnections || c.Control.CaptureMemory != DefaultCaptureMemory {
		t.Fatalf("defaults %+v", c.Control)
	}
	c, err = Parse([]byte("ports: [{interface: a}]\ncontrol: {admin_group: gswitch-admin, max_connections: 8, capture_memory: 64MiB}"))
	if err != nil || c.Control.AdminGroup != "gswitch-admin" || c.Control.MaxConnections != 8 || c.Control.CaptureMemory != 64<<20 {
		t.Fatalf("%+v %v", c.Control, err)
	}
	if c, err = Parse([]byte("ports: [{interface: a}]\ncontrol: {capture_memory: \"0\"}")); err != nil || c.Control.CaptureMemory != 0 {
		t.Fatalf("capture off: %+v %v", c.Control, err)
	}
}
