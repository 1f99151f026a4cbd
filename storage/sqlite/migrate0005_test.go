package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// TestMigrations0005And0006OnExistingData: a database at version 4 with a
// session gets an empty transcript for it (0005) and the dreams table
// (0006); appending, listing and dreams work on it afterwards.
func TestMigrations0005And0006OnExistingData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trove.db")
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", dsn(path, writerParams))
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`}
	for _, m := range ms[:4] {
		stmts = append(stmts, m.sql, fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, '%s', 0)`, m.version, m.name))
	}
	stmts = append(stmts, `INSERT INTO sessions (id, workspace_id, token_hash, created_by_type, created_by_id, created_at) VALUES
		('sesn_old', 'w', x'01', 'api_actor', 'apikey_1', 0)`)
	for _, q := range stmts {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(ctx, path, Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if have, known, err := db.SchemaVersion(ctx); err != nil || have != known || have < 6 {
		t.Fatalf("schema version %d of %d, %v", have, known, err)
	}
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
