package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Client is a connection to a gswitchd control socket. One goroutine at a
// time.
type Client struct {
	c       net.Conn
	r       *bufio.Reader
	Timeout time.Duration // per call (0: none)
}

// Dial connects to the socket at path.
func Dial(path string, timeout time.Duration) (*Client, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no gswitchd control socket at %s (is gswitchd running? its log says where its socket is)", path)
		}
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%s: permission denied (run as root, or as a member of the group in gswitchd's control.group, or of control.admin_group when control.group is not set)", path)
		}
		return nil, err
	}
	return &Client{c: c, r: bufio.NewReaderSize(c, 64<<10), Timeout: timeout}, nil
}

// Close closes the connection.
func (cl *Client) Close() error { return cl.c.Close() }

// Call sends req and decodes the result into out (may be nil). A refusal
// by the server comes back as an error with its message.
func (cl *Client) Call(req Request, out any) error {
	if cl.Timeout > 0 {
		cl.c.SetDeadline(time.Now().Add(cl.Timeout))
		defer cl.c.SetDeadline(time.Time{})
	}
	resp, err := cl.roundTrip(req)
	if err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			return fmt.Errorf("decoding the answer to %s: %v", req.Cmd, err)
		}
	}
	return nil
}

// Raw sends req and returns the result as the server encoded it.
func (cl *Client) Raw(req Request) (json.RawMessage, error) {
	resp, err := cl.roundTrip(req)
	if err != nil {
		return nil, err
	}
	return resp.Result, nil
}

func (cl *Client) roundTrip(req Request) (*Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := cl.c.Write(append(b, '\n')); err != nil {
		// A server that refused the connection (a peer it does not
		// serve, too many connections) answered and closed it before
		// reading: its answer, still to be read, says why.
		if line, rerr := cl.r.ReadBytes('\n'); rerr == nil {
			var resp Response
			if json.Unmarshal(line, &resp) == nil && !resp.OK && resp.Error != "" {
				return nil, errors.New(resp.Error)
			}
		}
		return nil, fmt.Errorf("writing to gswitchd: %v", plainErr(err))
	}
	line, err := cl.r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("reading gswitchd's answer: %v", plainErr(err))
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("gswitchd's answer is not JSON: %v", err)
	}
	if !resp.OK {
		return nil, errors.New(resp.Error)
	}
	return &resp, nil
}

// plainErr drops the addresses of a socket error: the server's end is
// bound under a private name (see socket.go), which would only puzzle.
func plainErr(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// Capture starts a capture (req.Cmd is set to capture). The connection is
// the stream's from then on: close the Client through the stream.
func (cl *Client) Capture(req Request) (*CaptureStream, error) {
	req.Cmd = "capture"
	resp, err := cl.roundTrip(req)
	if err != nil {
		return nil, err
	}
	cs := &CaptureStream{c: cl.c, r: cl.r}
	if err := json.Unmarshal(resp.Result, &cs.Start); err != nil {
		return nil, err
	}
	return cs, nil
}

// Sockets lists the control sockets in SocketDir that a gswitchd answers
// on, by name (NAME of NAME.sock). Files left by a gswitchd that was
// killed are skipped.
func Sockets() []string {
	m, _ := filepath.Glob(filepath.Join(SocketDir, "*.sock"))
	var out []string
	for _, p := range m {
		c, err := net.DialTimeout("unix", p, 200*time.Millisecond)
		if err != nil {
			continue
		}
		c.Close()
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".sock"))
	}
	sort.Strings(out)
	return out
}

// Resolve turns what a user gave (a path, a name in SocketDir, or nothing)
// into a socket path. Nothing: $GSWITCH_SOCKET, else the one socket in
// SocketDir; several sockets make it an error that lists them.
func Resolve(s string) (string, error) {
	if s == "" {
		s = os.Getenv("GSWITCH_SOCKET")
	}
	if s != "" {
		if strings.ContainsRune(s, '/') {
			return s, nil
		}
		return filepath.Join(SocketDir, strings.TrimSuffix(s, ".sock")+".sock"), nil
	}
	switch socks := Sockets(); len(socks) {
	case 0:
		return "", fmt.Errorf("no gswitchd control socket in %s (is gswitchd running? name its socket with -s PATH)", SocketDir)
	case 1:
		return filepath.Join(SocketDir, socks[0]+".sock"), nil
	default:
		return "", fmt.Errorf("several switches run here (%s): choose one with -s NAME", strings.Join(socks, ", "))
	}
}
