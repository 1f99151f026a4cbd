package core_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
)

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// twoServices returns two Services over one SQLite database, as two
// processes (trove serve and trove keys revoke, or two nodes) would be:
// here has the auth cache, there has none. Both use clk.
func twoServices(t *testing.T, ttl time.Duration, clk *fakeClock) (here, there *core.Service) {
	t.Helper()
	path := sqlitetest.Path(t)
	open := func() *sqlite.DB {
		db, err := sqlite.Open(context.Background(), path, sqlite.Options{AutoMigrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	here = core.New(open(), core.Options{Now: clk.Now, AuthCacheTTL: ttl})
	there = core.New(open(), core.Options{Now: clk.Now})
	return here, there
}

// TestAuthCacheRevocation pins the documented revocation guarantee of
// Options.AuthCacheTTL: a key revoked or a session ended through the same
// Service is refused at once; one revoked through another Service (another
// process) keeps working until TTL after it was last verified, no longer.
func TestAuthCacheRevocation(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	ctx := context.Background()
	auth := func(s *core.Service, secret string) error {
		_, err := s.Authenticate(ctx, secret)
		return err
	}
	wantOK := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want accepted", what, err)
		}
	}
	wantRefused := func(t *testing.T, what string, err error) {
		t.Helper()
		if trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
			t.Errorf("%s: %v, want EUNAUTHENTICATED", what, err)
		}
	}

	t.Run("key revoked through the same service", func(t *testing.T) {
		clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		here, _ := twoServices(t, ttl, clk)
		k, secret, err := here.CreateKey(ctx, "ws", "k")
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, "first use", auth(here, secret))
		if err := here.RevokeKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, "right after RevokeKey here", auth(here, secret))
	})

	t.Run("session ended through the same service", func(t *testing.T) {
		clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		here, _ := twoServices(t, ttl, clk)
		_, secret, err := here.CreateKey(ctx, "ws", "k")
		if err != nil {
			t.Fatal(err)
		}
		p, err := here.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		pctx := trove.WithPrincipal(ctx, p)
		st, err := here.CreateStore(pctx, trove.CreateStoreParams{Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		se, token, err := here.CreateSession(pctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, "session token", auth(here, token))
		if _, err := here.EndSession(pctx, se.ID); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, "right after EndSession here", auth(here, token))
		wantOK(t, "the API key (not the ended session)", auth(here, secret))
	})

	t.Run("key revoked through another process", func(t *testing.T) {
		clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		here, there := twoServices(t, ttl, clk)
		k, secret, err := there.CreateKey(ctx, "ws", "k")
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, "first use (verified and cached)", auth(here, secret))
		clk.Add(time.Second)
		if err := there.RevokeKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, "on the revoking service", auth(there, secret))
		wantOK(t, "here, within the TTL (the documented window)", auth(here, secret))
		clk.Add(ttl - time.Second - time.Nanosecond)
		wantOK(t, "here, 1ns before the TTL", auth(here, secret))
		clk.Add(time.Nanosecond)
		wantRefused(t, "here, TTL after the last verification", auth(here, secret))
	})

	t.Run("session ended through another process", func(t *testing.T) {
		clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		here, there := twoServices(t, ttl, clk)
		_, secret, err := there.CreateKey(ctx, "ws", "k")
		if err != nil {
			t.Fatal(err)
		}
		p, err := there.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		pctx := trove.WithPrincipal(ctx, p)
		st, err := there.CreateStore(pctx, trove.CreateStoreParams{Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		se, token, err := there.CreateSession(pctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, "session token here", auth(here, token))
		if _, err := there.EndSession(pctx, se.ID); err != nil {
			t.Fatal(err)
		}
		wantOK(t, "here, within the TTL", auth(here, token))
		clk.Add(ttl)
		wantRefused(t, "here, after the TTL", auth(here, token))
	})

	t.Run("no cache", func(t *testing.T) {
		clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		// here without a cache: a revocation elsewhere is seen at once.
		path := sqlitetest.Path(t)
		var svcs []*core.Service
		for range 2 {
			db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			svcs = append(svcs, core.New(db, core.Options{Now: clk.Now}))
		}
		k, secret, err := svcs[1].CreateKey(ctx, "ws", "k")
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, "first use", auth(svcs[0], secret))
		if err := svcs[1].RevokeKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, "after a revocation elsewhere", auth(svcs[0], secret))
	})

	t.Run("unknown and malformed secrets are not cached as valid", func(t *testing.T) {
		clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		here, _ := twoServices(t, ttl, clk)
		for _, s := range []string{"trove_sk_nope", "trove_st_nope", "x", ""} {
			wantRefused(t, s, auth(here, s))
			wantRefused(t, s+" again", auth(here, s))
		}
	})
}
