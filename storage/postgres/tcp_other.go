//go:build !linux

package postgres

import (
	"syscall"
	"time"
)

// setUserTimeout is a no-op where TCP_USER_TIMEOUT is not offered: the
// keepalives alone detect a silent peer there.
func setUserTimeout(string, syscall.RawConn, time.Duration) error { return nil }
