package config

import (
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/gswitch/gswitch/units"
)

// Control configures gswitchd's control socket: a unix stream socket on
// the local file system, never a network address, through which
// gswitchctl reads the switch's state and changes what may change while it
// runs.
type Control struct {
	// Socket is the socket's path (absolute), or "off" for none. Empty:
	// /run/gswitch/NAME.sock, NAME being the config file's name without
	// its extension.
	Socket string `yaml:"socket"`
	// Group may read the switch's state through the socket besides root
	// and gswitchd's own user (the read tier: every view, nothing that
	// changes the switch or shows frames). The socket is made mode 0660 and
	// owned by this group. Empty: no group reads.
	Group string `yaml:"group"`
	// AdminGroup may also change the switch (set, reload) and capture
	// frames (the admin tier). Root and gswitchd's own user always may.
	// Empty: only they. When Group is empty the socket is owned by this
	// group; when both are set, the socket is Group's and an admin must be
	// in both.
	AdminGroup string `yaml:"admin_group"`
	// MaxConnections bounds the connections open at once; one more is
	// refused and logged. 0: DefaultControlConnections.
	MaxConnections int `yaml:"max_connections"`
	// CaptureMemory bounds the mirror rings of every capture running at
	// once, e.g. 512MiB; a capture that would need more is refused before
	// anything is allocated. Default DefaultCaptureMemory; 0: no capture.
	CaptureMemory units.Size `yaml:"capture_memory"`
}

// Defaults of the control socket's limits.
const (
	DefaultControlConnections = 64
	DefaultCaptureMemory      = 512 << 20
)

var groupName = regexp.MustCompile(`^[a-z_][a-z0-9_-]*[$]?$`)

func (c *Control) validate() error {
	if c.Socket != "" && c.Socket != "off" {
		if !filepath.IsAbs(c.Socket) {
			return fmt.Errorf("control.socket: %q is not an absolute path (write e.g. /run/gswitch/sw1.sock, or off)", c.Socket)
		}
		if len(c.Socket) > 107 {
			return fmt.Errorf("control.socket: %q is %d bytes long, a unix socket path holds at most 107 (choose a shorter path)", c.Socket, len(c.Socket))
		}
	}
	if c.Group != "" && (len(c.Group) > 32 || !groupName.MatchString(c.Group)) {
		return fmt.Errorf("control.group: %q is not a group name (lower-case letters, digits, _ and -, e.g. gswitch)", c.Group)
	}
	if c.AdminGroup != "" && (len(c.AdminGroup) > 32 || !groupName.MatchString(c.AdminGroup)) {
		return fmt.Errorf("control.admin_group: %q is not a group name (lower-case letters, digits, _ and -, e.g. gswitch-admin)", c.AdminGroup)
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultControlConnections
	}
	if c.MaxConnections < 1 || c.MaxConnections > 4096 {
		return fmt.Errorf("control.max_connections: %d out of range (1..4096; 0 = %d)", c.MaxConnections, DefaultControlConnections)
	}
	if n := c.CaptureMemory; n != 0 && n < 64<<10 {
		return fmt.Errorf("control.capture_memory: %s is less than one 64KiB ring (write e.g. 512MiB, or 0 to turn capture off)", n)
	}
	return nil
}
