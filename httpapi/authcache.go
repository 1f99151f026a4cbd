package httpapi

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/trovehq/trove"
)

// authCache remembers successful authentications for a short time, so that
// a hot client does not cost a database read per request for its
// credential. A revoked key or an ended session (ended elsewhere) keeps
// working on this server until its entry expires; sessions ended through
// this server are evicted at once.
type authCache struct {
	ttl time.Duration
	max int

	mu      sync.RWMutex
	entries map[[32]byte]authEntry
}

type authEntry struct {
	p   *trove.Principal
	exp time.Time
}

func newAuthCache(ttl time.Duration) *authCache {
	if ttl <= 0 {
		return nil
	}
	return &authCache{ttl: ttl, max: 10000, entries: map[[32]byte]authEntry{}}
}

// get returns the cached principal for secret, or nil.
func (c *authCache) get(secret string, now time.Time) *trove.Principal {
	if c == nil {
		return nil
	}
	k := sha256.Sum256([]byte(secret))
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if !ok || now.After(e.exp) {
		return nil
	}
	return e.p
}

func (c *authCache) put(secret string, p *trove.Principal, now time.Time) {
	if c == nil {
		return
	}
	k := sha256.Sum256([]byte(secret))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k, e := range c.entries {
			if now.After(e.exp) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[k] = authEntry{p: p, exp: now.Add(c.ttl)}
}

// evictSession drops the entries of a session's token.
func (c *authCache) evictSession(sessionID string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.p.Session != nil && e.p.Session.SessionID == sessionID {
			delete(c.entries, k)
		}
	}
}
