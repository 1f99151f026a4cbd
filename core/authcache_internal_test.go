package core

import (
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// TestAuthCacheGeneration: a lookup that started before an invalidation
// (it may have read the credential before the revocation committed) does
// not cache its result; one that started after does. Entries expire at
// TTL, and the map stays bounded.
func TestAuthCacheGeneration(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newAuthCache(time.Second)
	h := [32]byte{1}
	p := &trove.Principal{WorkspaceID: "ws", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}}

	_, gen := c.get(h, now)
	c.dropKey("apikey_other") // any invalidation in between
	c.put(h, p, gen, now)
	if got, _ := c.get(h, now); got != nil {
		t.Fatalf("a lookup that raced with an invalidation was cached: %+v", got)
	}

	_, gen = c.get(h, now)
	c.put(h, p, gen, now)
	got, _ := c.get(h, now)
	if got == nil || got.Actor.APIKeyID != "apikey_1" {
		t.Fatalf("get after put = %+v, want the principal", got)
	}
	got.WorkspaceID = "changed" // a caller's change does not reach the cache
	if again, _ := c.get(h, now); again.WorkspaceID != "ws" {
		t.Errorf("cached principal changed through a returned copy: %+v", again)
	}
	if got, _ := c.get(h, now.Add(time.Second)); got != nil {
		t.Errorf("entry alive at TTL: %+v", got)
	}
	c.dropSession("apikey_1") // a session drop leaves keys alone
	if got, _ := c.get(h, now); got == nil {
		t.Errorf("dropSession dropped an API key's entry")
	}
	c.dropKey("apikey_1")
	if got, _ := c.get(h, now); got != nil {
		t.Errorf("dropKey left the entry: %+v", got)
	}

	for i := range authCacheMax + 10 {
		_, gen := c.get([32]byte{byte(i), byte(i >> 8), 2}, now)
		c.put([32]byte{byte(i), byte(i >> 8), 2}, p, gen, now)
	}
	if n := len(c.entries); n > authCacheMax {
		t.Errorf("cache holds %d entries, max %d", n, authCacheMax)
	}

	var off *authCache = newAuthCache(0)
	off.put(h, p, 0, now)
	if got, _ := off.get(h, now); got != nil {
		t.Errorf("TTL 0 cached %+v", got)
	}
}
