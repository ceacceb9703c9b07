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
	} {
		_, err := Parse([]byte("ports: [{interface: a}]\n" + in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
	if _, err := Parse([]byte("ports: [{interface: a}]\ncontrol: {socket: off}")); err != nil {
		t.Fatal(err)
	}
}
