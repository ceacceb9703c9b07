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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/metrics"
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

	// Who may use the socket besides root and gswitchd's own user (config
	// keys control.group and control.admin_group): Group reads, AdminGroup
	// also changes the switch and captures. Empty: nobody else.
	Group, AdminGroup string
	// MaxConns bounds the connections open at once (control.max_connections;
	// 0: config.DefaultControlConnections). Admins may open adminReserve
	// more, so that readers holding every connection do not lock them out.
	MaxConns int
	// CaptureMemory bounds the mirror rings of every capture at once, in
	// bytes (control.capture_memory; 0: config.DefaultCaptureMemory; < 0:
	// no capture).
	CaptureMemory int64
}

// adminReserve is how many connections beyond MaxConns admins may open.
const adminReserve = 4

// Server answers control requests for one switch.
type Server struct {
	sw      *dataplane.Switch
	opt     Options
	started time.Time

	mu  sync.Mutex // serialises set and reload; guards cfg
	cfg *config.Config

	lnMu     sync.Mutex
	ln       *net.UnixListener
	sock     *boundSocket
	path     string
	acc      access
	conns    map[net.Conn]*peer
	stopping bool
	wg       sync.WaitGroup

	capMu    sync.Mutex
	captures map[int]*peer // port index -> who captures it
	capBytes int64         // mirror ring bytes of the captures running

	// peerOf reads a connection's credentials (tests fake it).
	peerOf   func(*net.UnixConn) (*peer, error)
	refusals logLimiter
}

// NewServer returns a server for sw. Call Listen, then Serve.
func NewServer(sw *dataplane.Switch, opt Options) *Server {
	if opt.Logf == nil {
		opt.Logf = log.Printf
	}
	if opt.MaxConns <= 0 {
		opt.MaxConns = config.DefaultControlConnections
	}
	if opt.CaptureMemory == 0 {
		opt.CaptureMemory = config.DefaultCaptureMemory
	}
	c := *opt.Config
	c.Ports = append([]config.Port(nil), opt.Config.Ports...)
	return &Server{sw: sw, opt: opt, cfg: &c, started: time.Now(), acc: access{readGid: -1, adminGid: -1},
		conns: map[net.Conn]*peer{}, captures: map[int]*peer{}, peerOf: peerOf}
}

// Listen creates the socket at path (its directory too, mode 0755), mode
// 0600, or 0660 and owned by Options.Group (else Options.AdminGroup) if one
// is set. It never follows a symlink and never removes anything but a
// socket left by a gswitchd that died (socket.go says how): anything else
// at path is an error wrapping ErrNotSocket, a socket that a running
// gswitchd answers on one wrapping ErrSocketInUse. Errors name the config
// key.
func (s *Server) Listen(path string) error {
	var err error
	s.acc.readGroup, s.acc.adminGroup = s.opt.Group, s.opt.AdminGroup
	if s.acc.readGid, err = lookupGroup("control.group", s.opt.Group); err != nil {
		return err
	}
	if s.acc.adminGid, err = lookupGroup("control.admin_group", s.opt.AdminGroup); err != nil {
		return err
	}
	gid, key := s.acc.readGid, "control.group"
	if gid < 0 {
		gid, key = s.acc.adminGid, "control.admin_group"
	}
	b, err := createSocket(path, gid, key)
	if err != nil {
		return err
	}
	s.lnMu.Lock()
	s.ln, s.sock, s.path = b.ln, b, path
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
		p, err := s.peerOf(c)
		if err != nil {
			s.refuse(c, fmt.Sprintf("control: refused a connection: %v", err), err.Error())
			continue
		}
		if p.tier = s.acc.tierOf(p); p.tier == TierNone {
			s.refuse(c, fmt.Sprintf("control: refused a connection from %s: not root, not gswitchd's user, in no control group", p), s.acc.refuseConn(p))
			continue
		}
		s.lnMu.Lock()
		if s.stopping {
			s.lnMu.Unlock()
			c.Close()
			continue
		}
		if n := len(s.conns); n >= s.opt.MaxConns && (p.tier < TierAdmin || n >= s.opt.MaxConns+adminReserve) {
			s.lnMu.Unlock()
			s.refuse(c, fmt.Sprintf("control: refused a connection from %s: %d connections open (control.max_connections %d)", p, n, s.opt.MaxConns),
				fmt.Sprintf("gswitchd has %d control connections open, its limit (control.max_connections %d): try again when some have closed", n, s.opt.MaxConns))
			continue
		}
		s.conns[c] = p
		s.wg.Add(1)
		s.lnMu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c, p)
			s.lnMu.Lock()
			delete(s.conns, c)
			s.lnMu.Unlock()
		}()
	}
}

// refuse answers c with msg, closes it and logs line.
func (s *Server) refuse(c net.Conn, line, msg string) {
	s.logRefusal(line)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "%s\n", mustJSON(Response{Error: msg}))
	c.Close()
}

// logRefusal logs a refused connection or request, at most as often as
// the refusal log's rate allows (a peer refused in a loop must not flood
// gswitchd's log).
func (s *Server) logRefusal(line string) {
	ok, skipped := s.refusals.allow(time.Now())
	if !ok {
		return
	}
	if skipped > 0 {
		line += fmt.Sprintf(" (and %d more refusals not logged)", skipped)
	}
	s.opt.Logf("%s", line)
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
		s.sock.remove()
	}
	for c := range s.conns {
		c.Close()
	}
	s.lnMu.Unlock()
	s.wg.Wait()
	return err
}

// maxRequest bounds a request line: a peer cannot make the server buffer more.
const maxRequest = 64 << 10

func (s *Server) serveConn(c *net.UnixConn, p *peer) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 4096)
	w := bufio.NewWriter(c)
	for {
		line, err := readLine(r)
		if err != nil {
			if err != errTooLong {
				return
			}
			s.logRefusal(fmt.Sprintf("control: refused %s: a request longer than %d bytes (connection closed)", p, maxRequest))
			writeResp(w, Response{Error: fmt.Sprintf("request longer than %d bytes", maxRequest)})
			return
		}
		req, err := ParseRequest(line)
		if err == ErrEmptyRequest {
			continue
		}
		if err != nil {
			if writeResp(w, Response{Error: err.Error()}) != nil {
				return
			}
			continue
		}
		need := tierOf(req.Cmd)
		if need > p.tier {
			s.logRefusal(fmt.Sprintf("control: refused %s: %s: needs the admin tier", p, describeRequest(req)))
			if writeResp(w, Response{Error: s.acc.refuseAdmin(p, req.Cmd)}) != nil {
				return
			}
			continue
		}
		if req.Cmd == "capture" {
			s.capture(c, r, w, req, p)
			return
		}
		res, err := s.Handle(req)
		resp := Response{OK: err == nil}
		if err != nil {
			resp.Error = err.Error()
		} else if resp.Result, err = json.Marshal(res); err != nil {
			resp = Response{Error: "encoding the result: " + err.Error()}
		}
		if need == TierAdmin {
			s.logAdmin(p, req, res, resp.Error)
		}
		if writeResp(w, resp) != nil {
			return
		}
	}
}

// logAdmin logs an admin action: who, what was asked, and what came of it.
func (s *Server) logAdmin(p *peer, req *Request, res any, errText string) {
	out := "done"
	switch r := res.(type) {
	case *SetResult:
		if r != nil {
			out = fmt.Sprintf("%s -> %s", r.Old, r.New)
			if !r.Applied {
				out += " (posted, not yet applied)"
			}
		}
	case *ReloadResult:
		if r != nil {
			out = fmt.Sprintf("applied %q, refused %q", r.Applied, r.Refused)
		}
	}
	if errText != "" {
		out = "error: " + strconv.Quote(errText)
	}
	s.opt.Logf("control: %s: %s: %s", p, describeRequest(req), out)
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
// It is what the socket serves, once the peer's tier allows the request
// (serveConn checks); tests call it directly.
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
	case "fidelity":
		return s.fidelityView(), nil
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
