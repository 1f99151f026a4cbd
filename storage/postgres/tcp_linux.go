package postgres

import (
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout sets TCP_USER_TIMEOUT on a TCP socket: sent data left
// unacknowledged for d drops the connection. Unix sockets are left alone.
func setUserTimeout(network string, c syscall.RawConn, d time.Duration) error {
	if !strings.HasPrefix(network, "tcp") {
		return nil
	}
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
