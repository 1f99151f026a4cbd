// Package certfile serves a TLS certificate from a PEM certificate file and
// key file and picks up a replaced pair without a restart: every handshake
// compares the files' modification times and sizes with the loaded pair's
// and loads them again when they changed.
package certfile

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// Reloader holds the current certificate. Use GetCertificate as
// tls.Config.GetCertificate. Safe for concurrent use.
type Reloader struct {
	certPath, keyPath string
	// OnError, when not nil, hears of a changed pair that does not load
	// (for example, written half-way); the previous certificate is kept
	// and the load is tried again at the next handshake.
	OnError func(error)

	mu   sync.Mutex
	cert *tls.Certificate
	seen stamp
}

// stamp is what tells a changed file: modification time and size of both.
type stamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

// New loads the pair once; the error says which file is at fault.
func New(certPath, keyPath string) (*Reloader, error) {
	r := &Reloader{certPath: certPath, keyPath: keyPath}
	st, err := r.stat()
	if err != nil {
		return nil, err
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate %s and key %s: %w", certPath, keyPath, err)
	}
	r.cert, r.seen = &c, st
	return r, nil
}

func (r *Reloader) stat() (stamp, error) {
	ci, err := os.Stat(r.certPath)
	if err != nil {
		return stamp{}, fmt.Errorf("TLS certificate: %w", err)
	}
	ki, err := os.Stat(r.keyPath)
	if err != nil {
		return stamp{}, fmt.Errorf("TLS key: %w", err)
	}
	return stamp{ci.ModTime(), ki.ModTime(), ci.Size(), ki.Size()}, nil
}

// GetCertificate returns the current certificate, loading the files again
// first when either changed since the last load.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.stat()
	if err == nil && st != r.seen {
		var c tls.Certificate
		c, err = tls.LoadX509KeyPair(r.certPath, r.keyPath)
		if err == nil {
			r.cert, r.seen = &c, st
		}
	}
	if err != nil && r.OnError != nil {
		r.OnError(err)
	}
	return r.cert, nil
}
