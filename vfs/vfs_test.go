package vfs_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/vfs"
	"github.com/trovehq/trove/vfs/vfstest"
)

// backend is a real core over a real SQLite database in t's temp dir.
func backend(t *testing.T) vfstest.Backend {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := &trove.Principal{WorkspaceID: "wrkspc_vfstest", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_vfstest0001"}}
	return vfstest.Backend{Services: core.New(db, core.Options{}), Ctx: trove.WithPrincipal(ctx, p)}
}

// TestDirect runs the shared suite against the vfs without a kernel.
func TestDirect(t *testing.T) {
	vfstest.Run(t, vfstest.Harness{
		Backend: backend,
		Mount: func(t *testing.T, cfg vfs.Config) *vfstest.Mount {
			return vfstest.Direct(t, cfg, nil)
		},
	})
}
