package control

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How the control socket is made, and why this way.
//
// gswitchd usually runs as root, and control.socket may name a directory
// that others can write to. Whatever is at the path when gswitchd starts,
// or is put there while it starts, must never be removed, replaced,
// chowned or chmodded by it, except a socket left by a gswitchd that died.
// The plain way (remove what is there, bind, chmod and chown by name) fails
// on each count: remove deletes regular files, and between bind and chown
// the socket may be swapped for a symlink to, say, /etc/shadow, which
// chown and chmod follow. fchmod and fchown on the listening descriptor are
// no help: they change the socket's inode in the kernel's socket file
// system, not the file that bind made, which is what connect checks.
//
// So the socket is made in a private directory and linked into place:
//
//  1. A directory of our own is made next to the path (mkdir never follows
//     a symlink and fails if the name exists; mode 0700, so nobody else can
//     add, swap or remove entries in it) and held open by descriptor, which
//     is checked to be ours. Every name inside it is reached through that
//     descriptor (the *at calls, and /proc/self/fd/N/NAME for bind), so
//     even someone who may rename entries of the parent directory cannot
//     redirect them. The socket is bound there and its group and mode are
//     set: in that directory no one can swap it between bind and
//     chown/chmod.
//  2. The finished socket is hard-linked to the path. link(2) never follows
//     a symlink at the new name and fails if anything is there, so nothing
//     at the path is ever replaced; the socket appears with its final mode
//     and group, never more open. The private name is then removed.
//  3. If something is at the path: a socket that a gswitchd answers on is
//     ErrSocketInUse; anything that is not a socket is refused with an
//     error (ErrNotSocket); a socket nobody answers on is renamed into the
//     private directory (rename moves the entry, it follows no symlink),
//     checked again there, where it can no longer be swapped, and removed
//     only if it still is a socket nobody answers on; anything else is put
//     back. Then step 2 again.
//
// The listener's own address (getsockname, what ss -x shows) is therefore
// /proc/self/fd/N/s, the name it was bound under, not control.socket.
//
// On Close the socket is removed only if the path still holds the very
// inode that was linked there. (Between that check and the removal only
// someone who may already remove entries of the directory could swap it.)

// boundSocket is a listening socket at a path and the identity of its file.
type boundSocket struct {
	ln       *net.UnixListener
	path     string
	dev, ino uint64
}

// createSocket makes a listening unix socket at path, mode 0600, or 0660 and
// owned by gid when gid >= 0 (see above for how). Errors name
// control.socket, or groupKey for the group.
func createSocket(path string, gid int, groupKey string) (*boundSocket, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("control.socket: %v", err)
	}
	priv, err := newPrivateDir(dir)
	if err != nil {
		return nil, fmt.Errorf("control.socket: making a private directory in %s to create the socket in: %v", dir, err)
	}
	defer priv.close()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: priv.name("s"), Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control.socket: %s: %v", path, err)
	}
	// The listener's own name is the private one, removed below: its
	// Close must not remove anything (Server.Close removes the path).
	ln.SetUnlinkOnClose(false)
	ok := false
	defer func() {
		if !ok {
			ln.Close()
		}
	}()
	mode := uint32(0o600)
	if gid >= 0 {
		mode = 0o660
		if err := unix.Fchownat(priv.fd, "s", -1, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, fmt.Errorf("%s: giving %s to gid %d: %v", groupKey, path, gid, err)
		}
	}
	if err := unix.Fchmodat(priv.fd, "s", mode, 0); err != nil {
		return nil, fmt.Errorf("control.socket: %s: %v", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(priv.fd, "s", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, fmt.Errorf("control.socket: %s: %v", path, err)
	}
	for attempt := 0; ; attempt++ {
		err := unix.Linkat(priv.fd, "s", unix.AT_FDCWD, path, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) || attempt == 3 {
			return nil, fmt.Errorf("control.socket: linking the new socket to %s: %v", path, err)
		}
		if _, err := removeStale(path, priv); err != nil {
			return nil, err
		}
	}
	ok = true
	return &boundSocket{ln: ln, path: path, dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// remove removes the socket file if the path still holds the inode that
// createSocket linked there (it may be another gswitchd's by now).
func (b *boundSocket) remove() {
	var st unix.Stat_t
	if unix.Lstat(b.path, &st) == nil && uint64(st.Dev) == b.dev && uint64(st.Ino) == b.ino {
		os.Remove(b.path)
	}
}

// RemoveStale removes the control socket at path if it is a socket that no
// process answers on (one left by a gswitchd that was killed) and reports
// whether it did. Nothing at the path is not an error; a socket that a
// gswitchd answers on is ErrSocketInUse; anything that is not a socket is
// left alone and is ErrNotSocket. The check and the removal are as safe as
// the socket's creation (see the comment at the top of socket.go).
func RemoveStale(path string) (bool, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	priv, err := newPrivateDir(filepath.Dir(path))
	if err != nil {
		return false, fmt.Errorf("control.socket: making a private directory next to %s: %v", path, err)
	}
	defer priv.close()
	return removeStale(path, priv)
}

// removeStale is RemoveStale with the private directory made.
func removeStale(path string, priv *privateDir) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("control.socket: %v", err)
	}
	if err := checkStale(path, path, fi.Mode().Type()); err != nil {
		return false, err
	}
	// Move it where nobody else can change it, and look again.
	if err := unix.Renameat(unix.AT_FDCWD, path, priv.fd, "stale"); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil // gone meanwhile
		}
		return false, fmt.Errorf("control.socket: moving the stale socket %s aside: %v", path, err)
	}
	var st unix.Stat_t
	err = unix.Fstatat(priv.fd, "stale", &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil {
		typ := fs.ModeSocket
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			typ = fs.ModeIrregular
		}
		err = checkStale(path, priv.name("stale"), typ)
	}
	if err != nil {
		// Swapped between the two looks: put it back, never replacing
		// what may have been put at the path since.
		if perr := unix.Renameat2(priv.fd, "stale", unix.AT_FDCWD, path, unix.RENAME_NOREPLACE); perr != nil {
			priv.keep = true
			return false, fmt.Errorf("%v; it was moved to %s/stale and could not be put back (%v): move it back by hand", err, priv.path, perr)
		}
		return false, err
	}
	if err := unix.Unlinkat(priv.fd, "stale", 0); err != nil {
		return false, fmt.Errorf("control.socket: removing the stale socket %s: %v", path, err)
	}
	return true, nil
}

// checkStale says why the entry at path (reached by name, of type typ) may
// not be removed as a stale socket, or nil if it may.
func checkStale(path, name string, typ fs.FileMode) error {
	if typ != fs.ModeSocket {
		return notSocketError(path, describe(path, typ))
	}
	c, err := net.DialTimeout("unix", name, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("control.socket: %s is in use by another gswitchd (give this one another control.socket, or stop the other): %w", path, ErrSocketInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, fs.ErrNotExist) {
		// Not a plain "nobody listens" or "gone meanwhile" (e.g. permission
		// denied, a full backlog): it may be alive.
		return fmt.Errorf("control.socket: %s is a socket gswitchd cannot tell is stale (%v): remove it if no gswitchd uses it, or choose another control.socket", path, err)
	}
	return nil
}

// ErrNotSocket is wrapped by Listen's error when something other than a
// socket is at the path.
var ErrNotSocket = errors.New("not a socket")

func notSocketError(path, what string) error {
	return fmt.Errorf("control.socket: %s is %s, %w: gswitchd replaces only a socket left by a gswitchd that died, and follows no link (set control.socket to a path where nothing is, or move that file away)",
		path, what, ErrNotSocket)
}

// describe names a file type for notSocketError.
func describe(path string, t fs.FileMode) string {
	switch {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		if to, err := os.Readlink(path); err == nil {
			return "a symbolic link to " + to
		}
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeDevice != 0:
		return "a device"
	}
	return "a file that is not a socket"
}

// privateDir is a directory of our own (mode 0700) next to the socket's
// path, where the socket is bound and a stale one checked. Names in it are
// reached through fd.
type privateDir struct {
	path string
	fd   int  // an O_PATH descriptor of it
	keep bool // holds a file that could not be put back: left for the operator
}

func newPrivateDir(dir string) (*privateDir, error) {
	p, err := os.MkdirTemp(dir, ".gswitchd-")
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(p)
		return nil, err
	}
	// What mkdir made may have been swapped before the open: the
	// descriptor must be a directory of ours that nobody else may write.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("%s changed under us (owner %d, mode %o)", p, st.Uid, st.Mode&0o777)
		}
		return nil, err
	}
	return &privateDir{path: p, fd: fd}, nil
}

// name is a path that reaches file in the directory through its
// descriptor, for calls that take only a path (bind, connect). It is short
// whatever the directory's path, so any control.socket fits a socket
// address.
func (p *privateDir) name(file string) string {
	return "/proc/self/fd/" + strconv.Itoa(p.fd) + "/" + file
}

// close removes the directory and what is left in it, unless it holds a
// file that could not be put back.
func (p *privateDir) close() {
	if !p.keep {
		unix.Unlinkat(p.fd, "s", 0)
		unix.Unlinkat(p.fd, "stale", 0)
		os.Remove(p.path) // an empty directory only: rmdir
	}
	unix.Close(p.fd)
}
