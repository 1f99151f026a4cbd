package sqlitetest_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// schema returns the schema of the database at path (sqlite_master without
// the internal tables) and the migration names in schema_version.
func schema(t *testing.T, path string) (objs, versions []string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for q, out := range map[string]*[]string{
		`SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name`: &objs,
		`SELECT version || ' ' || name FROM schema_version ORDER BY version`:                             &versions,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			*out = append(*out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return objs, versions
}

// TestCopyIsAMigratedDatabase: a copy has the schema and the schema
// versions that migrating an empty file gives, and opens without
// migrating.
func TestCopyIsAMigratedDatabase(t *testing.T) {
	ctx := context.Background()
	migrated := filepath.Join(t.TempDir(), "trove.db")
	db, err := sqlite.Open(ctx, migrated, sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	copied := sqlitetest.Path(t)
	wantObjs, wantVersions := schema(t, migrated)
	gotObjs, gotVersions := schema(t, copied)
	if diff := cmp.Diff(wantObjs, gotObjs); diff != "" {
		t.Errorf("schema of the copy (-migrated +copy):\n%s", diff)
	}
	if diff := cmp.Diff(wantVersions, gotVersions); diff != "" || len(gotVersions) == 0 {
		t.Errorf("schema versions of the copy (-migrated +copy):\n%s", diff)
	}
	db, err = sqlite.Open(ctx, copied, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	have, known, err := db.SchemaVersion(ctx)
	if err != nil || have != known {
		t.Errorf("SchemaVersion of the copy = %d, %d, %v; want it current", have, known, err)
	}
	if p := sqlitetest.Path(t); p == copied {
		t.Errorf("two calls gave the same path %s", p)
	}
}
