package control

import (
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/config"
)

// listenAt runs Listen for a server with opt at path and returns its error
// (the server is closed at the end of the test).
func listenAt(t *testing.T, path string, opt Options) (*Server, error) {
	t.Helper()
	opt.Config = &config.Config{}
	opt.Logf = t.Logf
	s := NewServer(nil, opt)
	err := s.Listen(path)
	if err == nil {
		go s.Serve()
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// noPrivateDirs fails if a private directory of socket creation was left in dir.
func noPrivateDirs(t *testing.T, dir string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(dir, ".gswitchd-*")); len(m) > 0 {
		t.Fatalf("private directories left behind: %v", m)
	}
}

// staleSocket leaves a socket file at path that nobody answers on, as a
// gswitchd killed with SIGKILL does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

// TestListenRefusesWhatIsNotASocket: a regular file, a directory or a pipe
// at control.socket survives, and the error names the key, the path, what
// is there and the fix.
func TestListenRefusesWhatIsNotASocket(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "passwd")
	if err := os.WriteFile(file, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, what := range map[string]string{file: "a regular file", sub: "a directory", fifo: "a named pipe"} {
		_, err := listenAt(t, path, Options{})
		if err == nil || !errors.Is(err, ErrNotSocket) {
			t.Fatalf("%s: error %v, want ErrNotSocket", path, err)
		}
		for _, w := range []string{"control.socket: ", path, what, "set control.socket to a path where nothing is"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", path, err, w)
			}
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "root:x:0:0\n" {
		t.Fatalf("the regular file did not survive: %q %v", b, err)
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Fatalf("the directory did not survive: %v", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the pipe did not survive: %v", err)
	}
	noPrivateDirs(t, dir)
}

// TestListenFollowsNoSymlink: a symlink at control.socket, to a file or
// dangling, is refused and left as it was; its target is neither removed
// nor chowned nor chmodded, and nothing is created where it points.
func TestListenFollowsNoSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "shadow")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "sw.sock")
	os.Symlink(target, link)
	dangling := filepath.Join(dir, "sw2.sock")
	nowhere := filepath.Join(dir, "nowhere.sock")
	os.Symlink(nowhere, dangling)
	// A live socket behind a link is not followed either.
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	toLive := filepath.Join(dir, "sw3.sock")
	os.Symlink(live, toLive)

	g, err := user.LookupGroupId(strconv.Itoa(os.Getegid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{link, dangling, toLive} {
		_, err := listenAt(t, path, Options{Group: g.Name})
		if !errors.Is(err, ErrNotSocket) || !strings.Contains(err.Error(), "a symbolic link to ") || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: error %v, want a refused symbolic link", path, err)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSymlink {
			t.Fatalf("%s: the link did not survive: %v", path, err)
		}
	}
	fi, err := os.Stat(target)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("target's mode changed: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "secret" {
		t.Fatalf("target changed: %q", b)
	}
	if _, err := os.Lstat(nowhere); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something was created where the dangling link points: %v", err)
	}
	noPrivateDirs(t, dir)
}

// TestListenReplacesOnlyAStaleSocket: a socket nobody answers on is
// replaced, one a server answers on is ErrSocketInUse; the new socket has
// its mode and group from the start and no private directory is left.
func TestListenReplacesOnlyAStaleSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sw.sock")
	staleSocket(t, path)
	g, err := user.LookupGroupId(strconv.Itoa(os.Getegid()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := listenAt(t, path, Options{Group: g.Name})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket %v %v", fi.Mode(), err)
	}
	if gid := fi.Sys().(*syscall.Stat_t).Gid; int(gid) != os.Getegid() {
		t.Fatalf("socket's group %d, want %d", gid, os.Getegid())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		t.Fatalf("the new socket does not answer: %v", err)
	}
	c.Close()
	if _, err := listenAt(t, path, Options{}); !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("second server: %v", err)
	}
	noPrivateDirs(t, dir)
	s.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left the socket: %v", err)
	}
}

// TestCloseRemovesOnlyItsOwnSocket: when the path holds another socket by
// the time the server closes (another gswitchd took it over), Close leaves it.
func TestCloseRemovesOnlyItsOwnSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sw.sock")
	s, err := listenAt(t, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(path, filepath.Join(dir, "old.sock"))
	staleSocket(t, path)
	s.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("Close removed a socket not its own: %v", err)
	}
}

// TestListenLongPath: a socket path near the 107-byte limit works (the
// private directory's own path would be longer).
func TestListenLongPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 90 {
		dir = filepath.Join(dir, "dddddddd")
	}
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "s")
	for len(path) < 100 {
		path += "x"
	}
	path += ".sock"
	if _, err := listenAt(t, path, Options{}); err != nil {
		t.Fatalf("%d-byte path: %v", len(path), err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
	noPrivateDirs(t, dir)
}

// TestRemoveStale: only a socket nobody answers on is removed.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	staleSocket(t, stale)
	if ok, err := RemoveStale(stale); !ok || err != nil {
		t.Fatalf("stale socket: %v %v", ok, err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale socket still there: %v", err)
	}
	if ok, err := RemoveStale(stale); ok || err != nil {
		t.Fatalf("nothing there: %v %v", ok, err)
	}
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ok, err := RemoveStale(live); ok || !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("live socket: %v %v", ok, err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	if ok, err := RemoveStale(file); ok || !errors.Is(err, ErrNotSocket) {
		t.Fatalf("regular file: %v %v", ok, err)
	}
	for _, p := range []string{live, file} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s removed: %v", p, err)
		}
	}
	noPrivateDirs(t, dir)
}
