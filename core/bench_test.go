package core_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

// Benchmarks of core over real SQLite, each next to a baseline that does
// only the driver calls a mutation minimally needs (insert or update the
// row, append the version) without core's checks, so the ratio is the price
// of the rules: principal, validation, store lock, overlap and limit checks,
// hashing, IDs.
//
//	go test -run '^$' -bench . -benchtime 2000x ./core

func benchEnv(b *testing.B) (*sqlite.DB, *core.Service, context.Context, string) {
	b.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_b", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_b"}})
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return db, svc, ctx, st.ID
}

func BenchmarkCreateMemory(b *testing.B) {
	content := "A memory of a typical size: the user prefers tabs, short answers and metric units.\n"
	b.Run("core", func(b *testing.B) {
		_, svc, ctx, storeID := benchEnv(b)
		i := 0
		for b.Loop() {
			i++
			if _, err := svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: fmt.Sprintf("/dir%d/m%d.md", i%50, i), Content: content}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-driver", func(b *testing.B) {
		db, _, _, storeID := benchEnv(b)
		i := 0
		for b.Loop() {
			i++
			err := db.Write(context.Background(), func(tx storage.Tx) error {
				now := time.Now().UTC().Truncate(time.Microsecond)
				c := content
				m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: storeID, Path: fmt.Sprintf("/dir%d/m%d.md", i%50, i),
					Content: &c, SizeBytes: len(c), SHA256: "0000000000000000000000000000000000000000000000000000000000000000",
					VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now}
				if err := tx.MemoryInsert(context.Background(), m); err != nil {
					return err
				}
				p, sz := m.Path, m.SizeBytes
				return tx.VersionInsert(context.Background(), &trove.MemoryVersion{ID: m.VersionID, StoreID: storeID, MemoryID: m.ID,
					Operation: trove.OpCreated, Path: &p, Content: &c, SizeBytes: &sz, SHA256: &m.SHA256, CreatedAt: now})
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkUpdateMemoryPrecondition(b *testing.B) {
	b.Run("core", func(b *testing.B) {
		_, svc, ctx, storeID := benchEnv(b)
		m, err := svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: "/counter", Content: "0"})
		if err != nil {
			b.Fatal(err)
		}
		sha := m.SHA256
		i := 0
		for b.Loop() {
			i++
			u, err := svc.UpdateMemory(ctx, storeID, m.ID, trove.UpdateMemoryParams{Content: new(fmt.Sprint(i)), PreconditionSHA256: sha})
			if err != nil {
				b.Fatal(err)
			}
			sha = u.SHA256
		}
	})
	b.Run("baseline-driver", func(b *testing.B) {
		db, svc, ctx, storeID := benchEnv(b)
		m, err := svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: "/counter", Content: "0"})
		if err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			i++
			err := db.Write(context.Background(), func(tx storage.Tx) error {
				now := time.Now().UTC().Truncate(time.Microsecond)
				c := fmt.Sprint(i)
				m.Content, m.SizeBytes, m.VersionID, m.UpdatedAt = &c, len(c), trove.NewID(trove.PrefixVersion, now), now
				if err := tx.MemoryUpdate(context.Background(), m); err != nil {
					return err
				}
				p, sz := m.Path, m.SizeBytes
				return tx.VersionInsert(context.Background(), &trove.MemoryVersion{ID: m.VersionID, StoreID: storeID, MemoryID: m.ID,
					Operation: trove.OpModified, Path: &p, Content: &c, SizeBytes: &sz, SHA256: &m.SHA256, CreatedAt: now})
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGetMemory(b *testing.B) {
	b.Run("core", func(b *testing.B) {
		_, svc, ctx, storeID := benchEnv(b)
		m, err := svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: "/m", Content: "hello"})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := svc.GetMemory(ctx, storeID, m.ID, trove.ViewFull); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-driver", func(b *testing.B) {
		db, svc, ctx, storeID := benchEnv(b)
		m, err := svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: "/m", Content: "hello"})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			err := db.Read(context.Background(), func(tx storage.Tx) error {
				_, err := tx.MemoryGet(context.Background(), storeID, m.ID, true)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkListMemoriesDepth1(b *testing.B) {
	_, svc, ctx, storeID := benchEnv(b)
	for i := range 2000 {
		if _, err := svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: fmt.Sprintf("/d%02d/sub%d/m%d.md", i%40, i%7, i), Content: "x"}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("depth1", func(b *testing.B) {
		for b.Loop() {
			pg, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Depth: 1, Limit: 100})
			if err != nil || len(pg.Data) != 40 {
				b.Fatalf("%d items, %v", len(pg.Data), err)
			}
		}
	})
	b.Run("baseline-depth0-limit100", func(b *testing.B) {
		for b.Loop() {
			pg, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 100})
			if err != nil || len(pg.Data) != 100 {
				b.Fatalf("%d items, %v", len(pg.Data), err)
			}
		}
	})
}

// BenchmarkWebhookEmit: the writes/s of a workspace with no webhook
// endpoint, one subscribed to another event, and one subscribed to its
// memory changes, over SQLite (docs/perf/webhooks.md).
//
//	go test -run '^$' -bench WebhookEmit -benchtime 4000x ./core
func BenchmarkWebhookEmit(b *testing.B) {
	coretest.BenchWebhookEmit(b, func(b *testing.B) storage.Driver {
		db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{AutoMigrate: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}, []int{1, 16})
}
