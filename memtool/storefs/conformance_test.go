package storefs_test

import (
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/memtooltest"
	"github.com/trovehq/trove/memtool/storefs"
)

// storeCaps are what a memory store cannot hold, by design of the store:
// content is UTF-8 text only (API contract §8.2), so images are refused, and
// at most MaxContentBytes (102,400) bytes (§8.2, §10), so the
// 999,999-line file is refused.
var storeCaps = memtooltest.Capabilities{TextOnly: true, MaxFileBytes: trove.DefaultLimits().MaxContentBytes}

// TestConformance runs memtool's exact-string suite against a store over
// core + SQLite: every command gives the same result as on the directory
// backend. Each case gets a fresh store in one database.
func TestConformance(t *testing.T) {
	ctx := agent("apikey_conformance")
	svc := newCore(t)
	memtooltest.RunWith(t, func(t *testing.T) memtool.FS {
		return storefs.New(svc, newStore(t, ctx, svc), storefs.Options{Principal: trove.PrincipalFrom(ctx)})
	}, storeCaps)
}

// TestConformanceRemote runs the same suite through httpapi.Client to a
// real server on loopback.
func TestConformanceRemote(t *testing.T) {
	ctx := agent("apikey_conformance")
	remote := newRemote(t, newCore(t))
	memtooltest.RunWith(t, func(t *testing.T) memtool.FS {
		return storefs.New(remote, newStore(t, ctx, remote), storefs.Options{})
	}, storeCaps)
}
