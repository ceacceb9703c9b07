package control

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

func TestParseRequest(t *testing.T) {
	req, err := ParseRequest([]byte(`{"cmd":"set","port":"p2","key":"queue","queue":3,"value":"pause","extra":1}` + "\n"))
	if err != nil || !reflect.DeepEqual(*req, Request{Cmd: "set", Port: "p2", Key: "queue", Queue: 3, Value: "pause"}) {
		t.Fatalf("%+v %v", req, err)
	}
	if _, err := ParseRequest([]byte(" \t\r\n")); err != ErrEmptyRequest {
		t.Fatalf("blank line: %v", err)
	}
	for _, l := range []string{"hello", `{"cmd":"info"} {"cmd":"info"}`, `{"cmd":3}`, `[1]`} {
		if _, err := ParseRequest([]byte(l)); err == nil || !strings.HasPrefix(err.Error(), "not a JSON request: ") {
			t.Errorf("%q: %v", l, err)
		}
	}
	if d := describeRequest(&Request{Cmd: "set\nforged line", Port: "p1\ncontrol: uid 0"}); strings.ContainsAny(d, "\n\r") {
		t.Fatalf("a request's values break the log line: %q", d)
	}
}

// FuzzParseRequest: whatever a peer writes on the control socket, the
// server's line reader and request parser neither panic nor loop; what
// parses survives a round trip through JSON, has a tier, and is described
// for the log on one line of printable characters.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"cmd":"info"}`,
		`{"cmd":"queues","port":"p2"}` + "\n" + `{"cmd":"stats"}` + "\n",
		`{"cmd":"set","port":"h2","key":"rate","value":"200Mbit"}`,
		`{"cmd":"set","port":"1","key":"queue","queue":3,"value":"pause"}`,
		`{"cmd":"capture","port":"p1","dir":"rx","snap":96,"count":10,"filter":"udp and port 53","ring":1048576}`,
		`{"cmd":"stop"}`,
		`{"cmd":"mac","limit":-1}`,
		`{"cmd":"\u0000\n","port":"\xff"}`,
		"hello\n\n  \n",
		`{"cmd":"set","queue":1e400}`,
		`{"cmd":null,"port":{"a":[1,2]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(in), 4096)
		for {
			line, err := readLine(r)
			if err != nil {
				if err == errTooLong && len(in) <= maxRequest {
					t.Fatalf("a %d-byte input is too long", len(in))
				}
				return
			}
			req, err := ParseRequest(line)
			if err != nil {
				continue
			}
			b, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseRequest(b)
			if err != nil || !reflect.DeepEqual(again, req) {
				t.Fatalf("round trip of %q: %+v, %v", b, again, err)
			}
			if tr := tierOf(req.Cmd); tr != TierRead && tr != TierAdmin {
				t.Fatalf("%q: tier %v", req.Cmd, tr)
			}
			for _, c := range describeRequest(req) {
				if !unicode.IsPrint(c) {
					t.Fatalf("description of %+v holds %q", req, c)
				}
			}
		}
	})
}
