package core

import (
	"sync"
	"time"

	"github.com/trovehq/trove"
)

// authCacheMax bounds the number of cached credentials; past it expired
// entries are swept, then the whole cache is dropped.
const authCacheMax = 10000

// authCache remembers verified credentials (by the SHA-256 of the secret)
// for a short TTL, so that a hot client costs no database read per request
// for its credential.
//
// Revocation guarantee: RevokeKey and EndSession on the same Service drop
// the affected entries before they return, and an Authenticate that raced
// with them does not cache what it read (the generation check), so a
// credential revoked or ended through this process is refused at once.
// A change made by another process (trove keys revoke, another node on the
// same PostgreSQL) is seen once the entry expires: at most TTL after the
// credential was last verified.
type authCache struct {
	ttl time.Duration

	mu      sync.RWMutex
	gen     uint64 // bumped by every invalidation
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
	return &authCache{ttl: ttl, entries: map[[32]byte]authEntry{}}
}

// get returns the cached principal for hash (a copy), or nil; gen is the
// generation to pass to put after a database lookup.
func (c *authCache) get(hash [32]byte, now time.Time) (p *trove.Principal, gen uint64) {
	if c == nil {
		return nil, 0
	}
	c.mu.RLock()
	e, ok := c.entries[hash]
	gen = c.gen
	c.mu.RUnlock()
	if !ok || !now.Before(e.exp) {
		return nil, gen
	}
	cp := *e.p
	return &cp, gen
}

// put caches p, verified at now, unless an invalidation happened since the
// generation gen was read (the lookup may have seen the old state).
func (c *authCache) put(hash [32]byte, p *trove.Principal, gen uint64, now time.Time) {
	if c == nil {
		return
	}
	cp := *p
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.entries) >= authCacheMax {
		for k, e := range c.entries {
			if !now.Before(e.exp) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= authCacheMax {
			clear(c.entries)
		}
	}
	c.entries[hash] = authEntry{p: &cp, exp: now.Add(c.ttl)}
}

// invalidate drops the entries for which drop is true and bumps the
// generation, so that lookups in flight do not cache what they read.
func (c *authCache) invalidate(drop func(*trove.Principal) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.entries {
		if drop(e.p) {
			delete(c.entries, k)
		}
	}
}

// dropKey forgets the credentials of API key id.
func (c *authCache) dropKey(id string) {
	c.invalidate(func(p *trove.Principal) bool { return p.Session == nil && p.Actor.APIKeyID == id })
}

// dropSession forgets the credential of session id.
func (c *authCache) dropSession(id string) {
	c.invalidate(func(p *trove.Principal) bool { return p.Session != nil && p.Session.SessionID == id })
}

// dropEnvKey forgets the credential of environment key id.
func (c *authCache) dropEnvKey(id string) {
	c.invalidate(func(p *trove.Principal) bool { return p.Environment != nil && p.Environment.KeyID == id })
}
