package postgres

import (
	"context"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// dialer returns the DialFunc of every connection: each dial bounded by
// connectTimeout and, when tcp > 0, TCP keepalives (first probe after tcp/2
// idle, then every tcp/6, three probes) and a TCP user timeout of tcp
// (Linux; setUserTimeout is a no-op elsewhere), so that a connection whose
// peer went silent without a reset is dropped within about tcp instead of
// the operating system's default of many minutes.
func dialer(connectTimeout, tcp time.Duration) pgconn.DialFunc {
	d := &net.Dialer{Timeout: connectTimeout}
	if tcp > 0 {
		d.KeepAliveConfig = net.KeepAliveConfig{
			Enable:   true,
			Idle:     max(time.Second, tcp/2),
			Interval: max(time.Second, tcp/6),
			Count:    3,
		}
		d.Control = func(network, address string, c syscall.RawConn) error {
			return setUserTimeout(network, c, tcp)
		}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
}
