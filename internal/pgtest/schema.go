package pgtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// SchemaURL creates a new, empty schema in the database of URL(t) and
// returns URL(t) with search_path set to it, so that everything opened
// from that URL, a trove child process included, works in that schema
// alone and never in the database's shared default one (which other
// tests, and other builds with other migrations, also use). The schema is
// dropped when t ends.
func SchemaURL(t testing.TB) string {
	t.Helper()
	base := URL(t)
	ctx := context.Background()
	name := fmt.Sprintf("trove_t_%x", rand.Text()[:12])
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", base, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: creating schema %s: %v", name, err)
	}
	t.Cleanup(func() { DropSchema(t, name) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// DropSchema drops the schema name (CASCADE) over a connection of its own.
// Close every pool working in the schema first: a DROP through a pool whose
// background work (the search indexer, a dream runner) still holds locks in
// the schema can end in "deadlock detected".
func DropSchema(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, URL(t))
	if err != nil {
		t.Errorf("pgtest: dropping schema %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
		t.Errorf("pgtest: dropping schema %s: %v", name, err)
	}
}
