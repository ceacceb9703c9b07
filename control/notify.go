package control

import (
	"net"
	"os"
	"strconv"
	"time"
)

// Notify sends state ("READY=1", "STOPPING=1", "WATCHDOG=1", "STATUS=...")
// to systemd's notification socket ($NOTIFY_SOCKET), as sd_notify(3) does.
// Without NOTIFY_SOCKET (not started by systemd with Type=notify) it does
// nothing and returns false.
func Notify(state string) (bool, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return false, nil
	}
	if path[0] == '@' {
		path = "\x00" + path[1:] // an abstract socket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return false, err
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return false, err
	}
	return true, nil
}

// WatchdogInterval is how often to send WATCHDOG=1: half of systemd's
// WatchdogSec ($WATCHDOG_USEC, for this process per $WATCHDOG_PID), or 0
// when systemd does not watch.
func WatchdogInterval() time.Duration {
	us, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || us <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(us) * time.Microsecond / 2
}
