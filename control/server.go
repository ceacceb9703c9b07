package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/metrics"
	"golang.org/x/sys/unix"
)

// SocketDir is where gswitchd puts its control socket unless the config
// names another path, and where gswitchctl looks for one.
const SocketDir = "/run/gswitch"

// DefaultSocket is the socket path for a config file:
// /run/gswitch/NAME.sock, NAME being the file's name without extension.
func DefaultSocket(configPath string) string {
	base := strings.TrimSuffix(filepath.Base(configPath), filepath.Ext(configPath))
	if base == "" || base == "." || base == "/" {
		base = "gswitchd-" + strconv.Itoa(os.Getpid())
	}
	return filepath.Join(SocketDir, base+".sock")
}

// ErrSocketInUse is wrapped by Listen's error when a running gswitchd
// answers on the socket.
var ErrSocketInUse = errors.New("socket in use")

// Options describe the running switch to the server.
type Options struct {
	Config     *config.Config     // the running config (the server keeps its own copy up to date on set and reload)
	ConfigPath string             // where reload reads the config again
	Info       []metrics.PortInfo // how each port is attached
	// CheckConfig is run on a reloaded config before it is compared (gswitchd
	// checks that the interfaces exist); nil: none.
	CheckConfig func(*config.Config) error
	Logf        func(format string, args ...any) // nil: log.Printf
}

// Server answers control requests for one switch.
type Server struct {
	sw      *dataplane.Switch
	opt     Options
	started time.Time

	mu  sync.Mutex // serialises set and reload; guards cfg
	cfg *config.Config

	lnMu     sync.Mutex
	ln       *net.UnixListener
	path     string
	gid      int // the group allowed besides root and our own user (-1: none)
	conns    map[net.Conn]struct{}
	stopping bool
	wg       sync.WaitGroup
}

// NewServer returns a server for sw. Call Listen, then Serve.
func NewServer(sw *dataplane.Switch, opt Options) *Server {
	if opt.Logf == nil {
		opt.Logf = log.Printf
	}
	c := *opt.Config
	c.Ports = append([]config.Port(nil), opt.Config.Ports...)
	return &Server{sw: sw, opt: opt, cfg: &c, started: time.Now(), gid: -1, conns: map[net.Conn]struct{}{}}
}

// Listen creates the socket at path (its directory too, mode 0755),
// owned by root, mode 0600, or 0660 and owned by group if group is set. A
// socket file left by a gswitchd that died is replaced; one that a running
// gswitchd answers on is an error. Errors name the config key.
func (s *Server) Listen(path, group string) error {
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return fmt.Errorf("control.group: %q: %v (create it with groupadd, or leave group out for root only)", group, err)
		}
		if s.gid, err = strconv.Atoi(g.Gid); err != nil {
			return fmt.Errorf("control.group: %q has gid %q", group, g.Gid)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("control.socket: %v", err)
	}
	if _, err := os.Lstat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return fmt.Errorf("control.socket: %s is in use by another gswitchd (give this one another control.socket, or stop the other): %w", path, ErrSocketInUse)
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("control.socket: removing the stale socket %s: %v", path, err)
		}
	}
	old := syscall.Umask(0o177) // the socket is created 0600, never more open than that before chmod
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return fmt.Errorf("control.socket: %v", err)
	}
	ln.SetUnlinkOnClose(true)
	if s.gid >= 0 {
		if err := os.Chown(path, -1, s.gid); err == nil {
			err = os.Chmod(path, 0o660)
		}
		if err != nil {
			ln.Close()
			return fmt.Errorf("control.group: giving %s to group %s: %v", path, group, err)
		}
	}
	s.lnMu.Lock()
	s.ln, s.path = ln, path
	s.lnMu.Unlock()
	return nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			s.lnMu.Lock()
			stopping := s.stopping
			s.lnMu.Unlock()
			if stopping {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if err := s.allowed(c); err != nil {
			fmt.Fprintf(c, "%s\n", mustJSON(Response{Error: err.Error()}))
			c.Close()
			continue
		}
		s.lnMu.Lock()
		if s.stopping {
			s.lnMu.Unlock()
			c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.lnMu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.lnMu.Lock()
			delete(s.conns, c)
			s.lnMu.Unlock()
		}()
	}
}

// Close stops accepting, ends every connection (captures stop) and
// removes the socket file.
func (s *Server) Close() error {
	s.lnMu.Lock()
	if s.stopping {
		s.lnMu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.stopping = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.lnMu.Unlock()
	s.wg.Wait()
	return err
}

// allowed checks the peer's credentials: root, our own user, or a member
// of the configured group.
func (s *Server) allowed(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil {
		return fmt.Errorf("reading the peer's credentials: %v", cerr)
	}
	if cred.Uid == 0 || int(cred.Uid) == os.Geteuid() {
		return nil
	}
	if s.gid >= 0 && inGroup(cred, s.gid) {
		return nil
	}
	return fmt.Errorf("permission denied: uid %d is not root and not in gswitchd's control group", cred.Uid)
}

// inGroup reports whether the peer process has gid among its groups
// (primary, or supplementary as /proc/PID/status lists them).
func inGroup(cred *unix.Ucred, gid int) bool {
	if int(cred.Gid) == gid {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cred.Pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Groups:"); ok {
			for _, g := range strings.Fields(rest) {
				if g == strconv.Itoa(gid) {
					return true
				}
			}
		}
	}
	return false
}

// maxRequest bounds a request line: a peer cannot make the server buffer more.
const maxRequest = 64 << 10

func (s *Server) serveConn(c *net.UnixConn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 4096)
	w := bufio.NewWriter(c)
	for {
		line, err := readLine(r)
		if err != nil {
			if err != errTooLong {
				return
			}
			writeResp(w, Response{Error: fmt.Sprintf("request longer than %d bytes", maxRequest)})
			return
		}
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var req Request
		if err := json.Unmarshal(line, &req); err != nil {
			if writeResp(w, Response{Error: "not a JSON request: " + err.Error()}) != nil {
				return
			}
			continue
		}
		if req.Cmd == "capture" {
			s.capture(c, r, w, &req)
			return
		}
		res, err := s.Handle(&req)
		resp := Response{OK: err == nil}
		if err != nil {
			resp.Error = err.Error()
		} else if resp.Result, err = json.Marshal(res); err != nil {
			resp = Response{Error: "encoding the result: " + err.Error()}
		}
		if writeResp(w, resp) != nil {
			return
		}
	}
}

var errTooLong = errors.New("request too long")

func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxRequest {
			return nil, errTooLong
		}
		if err == nil {
			return line, nil
		}
		if err != bufio.ErrBufferFull {
			if len(line) > 0 && errors.Is(err, io.EOF) {
				return line, nil
			}
			return nil, err
		}
	}
}

func writeResp(w *bufio.Writer, r Response) error {
	if _, err := w.Write(mustJSON(r)); err != nil {
		return err
	}
	if err := w.WriteByte('\n'); err != nil {
		return err
	}
	return w.Flush()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(Response{Error: err.Error()})
	}
	return b
}

// Handle answers one request (every command but capture, which streams).
// It is what the socket serves; tests call it directly.
func (s *Server) Handle(req *Request) (any, error) {
	switch req.Cmd {
	case "info":
		return s.info(), nil
	case "health":
		return s.Health(), nil
	case "ports":
		return s.ports(), nil
	case "queues":
		return s.queues(req.Port)
	case "mac":
		return s.mac(req.Limit), nil
	case "routes":
		return s.routes(), nil
	case "neighbors":
		return s.neighbors(), nil
	case "flows":
		return s.flows(req.Port, req.Limit)
	case "stats":
		return s.stats(), nil
	case "set":
		return s.Set(req)
	case "reload":
		return s.Reload()
	case "capture":
		return nil, errors.New("capture streams: use Client.Capture")
	case "":
		return nil, errors.New(`request without "cmd"`)
	}
	return nil, fmt.Errorf("unknown command %q (known: %s)", req.Cmd, strings.Join(Commands, ", "))
}

// Commands lists what the server answers.
var Commands = []string{"info", "health", "ports", "queues", "mac", "routes", "neighbors", "flows", "stats", "set", "reload", "capture"}
