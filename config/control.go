package config

import (
	"fmt"
	"path/filepath"
	"regexp"
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
	// Group may use the socket besides root: the socket is made mode 0660
	// and owned by this group. Empty: root only (mode 0600).
	Group string `yaml:"group"`
}

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
	return nil
}
