package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigrations0005And0006OnExistingData: a schema at version 4 with a
// session gets an empty transcript for it (0005) and the dreams table
// (0006); appending, listing and dreams work on it afterwards.
func TestMigrations0005And0006OnExistingData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	c := adminConn(t)
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qs := []string{"SET LOCAL search_path TO " + schema,
		`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`}
	for i, f := range files[:4] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, string(b), fmt.Sprintf(`INSERT INTO schema_version (version, name) VALUES (%d, '%s')`, i+1, filepath.Base(f)))
	}
	qs = append(qs, `INSERT INTO sessions (id, workspace_id, token_hash, created_by_type, created_by_id, created_at) VALUES
		('sesn_old', 'w', '\x01', 'api_actor', 'apikey_1', now())`)
	for _, q := range qs {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	now := time.Now().UTC().Truncate(time.Microsecond)
	err = db.Write(ctx, func(tx storage.Tx) error {
		n, b, err := tx.EventStats(ctx, "sesn_old")
		if err != nil || n != 0 || b != 0 {
			t.Errorf("EventStats of a session from before 0005 = %d, %d, %v", n, b, err)
		}
		if err := tx.EventInsert(ctx, []trove.SessionEvent{{ID: "sevt_1", SessionID: "sesn_old", Seq: 1, Type: trove.EventUserMessage,
			Body: `{}`, CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, ProcessedAt: now}}); err != nil {
			return err
		}
		return tx.DreamInsert(ctx, &trove.Dream{ID: "drm_1", WorkspaceID: "w", Status: trove.DreamPending, InputStoreID: "memstore_x",
			SessionIDs: []string{"sesn_old"}, Model: "m", ModelSpeed: "standard", OutputBehavior: trove.OutputCreateNew,
			CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Read(ctx, func(tx storage.Tx) error {
		evs, err := tx.EventList(ctx, storage.EventListParams{SessionID: "sesn_old"})
		if err != nil || len(evs) != 1 {
			t.Errorf("EventList = %v, %v", evs, err)
		}
		d, err := tx.DreamGet(ctx, "w", "drm_1")
		if err != nil || d.SessionIDs[0] != "sesn_old" {
			t.Errorf("DreamGet = %+v, %v", d, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
