package postgres_test

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

func code(err error) string { return trove.ErrorCode(err) }

func TestMigrateConcurrentNodes(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	ctx := context.Background()
	// Four "nodes" start at once on an empty schema: exactly one applies
	// each migration, all end up open on the current version.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := postgres.Open(ctx, url, postgres.Options{AutoMigrate: true, Schema: schema, MaxConns: 2})
			if err == nil {
				db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: Open: %v", i, err)
		}
	}
	db := openDBOn(t, url, schema, postgres.Options{})
	have, known, err := db.SchemaVersion(ctx)
	if err != nil || have != known || known < 1 {
		t.Fatalf("SchemaVersion = %d, %d, %v; want equal and ≥ 1", have, known, err)
	}
	var rows int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM schema_version").Scan(&rows); err != nil || rows != known {
		t.Fatalf("schema_version rows = %d (%v), want %d", rows, err, known)
	}
	// Migrate again is a no-op.
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
}

func TestOpenRefusesWrongSchemaVersion(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	ctx := context.Background()

	t.Run("older without AutoMigrate", func(t *testing.T) {
		_, err := postgres.Open(ctx, url, postgres.Options{Schema: newSchema(t), MaxConns: 1})
		if code(err) != trove.EINVALID || !strings.Contains(err.Error(), "trove migrate") {
			t.Fatalf("Open on an empty schema = %v, want EINVALID asking to migrate", err)
		}
	})
	t.Run("newer than known", func(t *testing.T) {
		schema := newSchema(t)
		db := openDBOn(t, url, schema, postgres.Options{})
		_, known, _ := db.SchemaVersion(ctx)
		if _, err := db.Pool().Exec(ctx, "INSERT INTO schema_version (version, name) VALUES ($1, 'future')", known+1); err != nil {
			t.Fatal(err)
		}
		for _, auto := range []bool{false, true} {
			_, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, AutoMigrate: auto, MaxConns: 1})
			if code(err) != trove.EINVALID || !strings.Contains(err.Error(), "newer") {
				t.Fatalf("Open(AutoMigrate=%v) on a newer schema = %v, want EINVALID 'newer'", auto, err)
			}
		}
	})
	t.Run("bad url", func(t *testing.T) {
		_, err := postgres.Open(ctx, "postgres://u:secret@127.0.0.1:5432/x?sslmode=bogus", postgres.Options{})
		if code(err) != trove.EINVALID || strings.Contains(err.Error(), "secret") {
			t.Fatalf("Open(bad url) = %v, want EINVALID without the password", err)
		}
	})
}

func TestOpenUnreachableFailsFast(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	p, purl := newProxy(t, url)
	p.setMode(proxyDown)
	start := time.Now()
	_, err := postgres.Open(context.Background(), purl, postgres.Options{ConnectTimeout: time.Second, MaxConns: 1})
	if code(err) != trove.EUNAVAILABLE {
		t.Fatalf("Open on an unreachable database = %v, want EUNAVAILABLE", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open took %v to fail", d)
	}
}

// fixture inserts a store and returns it.
func fixtureStore(t *testing.T, db storage.Driver, ws string) *trove.Store {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	s := &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: ws, Name: "s", Metadata: map[string]string{"k": "v"}, CreatedAt: now, UpdatedAt: now}
	if err := db.Write(context.Background(), func(tx storage.Tx) error { return tx.StoreInsert(context.Background(), s) }); err != nil {
		t.Fatalf("StoreInsert: %v", err)
	}
	return s
}

func newMemory(storeID, path, content string) *trove.Memory {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return &trove.Memory{
		ID: trove.NewID(trove.PrefixMemory, now), StoreID: storeID, Path: path, Content: &content,
		SizeBytes: len(content), SHA256: "x", VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now,
	}
}

// TestDriverSpecifics covers what is particular to this driver; the shared
// conformance suite covers the port's contract.
func TestDriverSpecifics(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ctx := context.Background()
	st := fixtureStore(t, db, "ws1")

	t.Run("times come back in UTC and metadata round-trips", func(t *testing.T) {
		var got *trove.Store
		err := db.Read(ctx, func(tx storage.Tx) (err error) { got, err = tx.StoreGet(ctx, "ws1", st.ID); return err })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st, got); diff != "" {
			t.Fatalf("StoreGet (-want +got):\n%s", diff)
		}
		if got.CreatedAt.Location() != time.UTC {
			t.Fatalf("CreatedAt location = %v", got.CreatedAt.Location())
		}
	})

	t.Run("path conflict on insert keeps the transaction usable", func(t *testing.T) {
		a := newMemory(st.ID, "/dup", "one")
		b := newMemory(st.ID, "/dup", "two")
		err := db.Write(ctx, func(tx storage.Tx) error {
			if err := tx.MemoryInsert(ctx, a); err != nil {
				return err
			}
			err := tx.MemoryInsert(ctx, b)
			var te *trove.Error
			if !errors.As(err, &te) || te.Code != trove.EPATHCONFLICT || te.ConflictingMemoryID != a.ID || te.ConflictingPath != "/dup" {
				t.Errorf("second insert = %#v, want EPATHCONFLICT naming %s", err, a.ID)
			}
			_, err = tx.MemoryCount(ctx, st.ID) // the transaction still works
			return err
		})
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
	})

	t.Run("rename onto a used path is EPATHCONFLICT", func(t *testing.T) {
		c := newMemory(st.ID, "/c", "c")
		err := db.Write(ctx, func(tx storage.Tx) error {
			if err := tx.MemoryInsert(ctx, c); err != nil {
				return err
			}
			c.Path = "/dup"
			return tx.MemoryUpdate(ctx, c)
		})
		var te *trove.Error
		if !errors.As(err, &te) || te.Code != trove.EPATHCONFLICT || te.ConflictingPath != "/dup" {
			t.Fatalf("rename onto /dup = %v, want EPATHCONFLICT", err)
		}
	})

	t.Run("content is stored byte for byte, NUL included", func(t *testing.T) {
		content := "a\x00b\r\n\uFEFF"
		m := newMemory(st.ID, "/bytes", content)
		var got *trove.Memory
		err := db.Write(ctx, func(tx storage.Tx) (err error) {
			if err := tx.MemoryInsert(ctx, m); err != nil {
				return err
			}
			got, err = tx.MemoryGet(ctx, st.ID, m.ID, true)
			return err
		})
		if err != nil || got.Content == nil || *got.Content != content {
			t.Fatalf("round trip = %v, %v", got, err)
		}
	})

	t.Run("NUL in a text field is EINVALID, not a 500", func(t *testing.T) {
		now := time.Now()
		s := &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: "ws1", Name: "n", Description: "a\x00b", CreatedAt: now, UpdatedAt: now}
		err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) })
		if code(err) != trove.EINVALID {
			t.Fatalf("StoreInsert with NUL = %v, want EINVALID", err)
		}
	})

	t.Run("insert into a missing store is ENOTFOUND", func(t *testing.T) {
		err := db.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsert(ctx, newMemory("memstore_missing", "/x", "")) })
		if code(err) != trove.ENOTFOUND {
			t.Fatalf("MemoryInsert into a missing store = %v, want ENOTFOUND", err)
		}
	})

	t.Run("Read is read-only", func(t *testing.T) {
		err := db.Read(ctx, func(tx storage.Tx) error { return tx.MemoryInsert(ctx, newMemory(st.ID, "/ro", "")) })
		if err == nil {
			t.Fatal("MemoryInsert inside Read succeeded")
		}
	})

	t.Run("fn error rolls back", func(t *testing.T) {
		boom := errors.New("boom")
		m := newMemory(st.ID, "/rolled-back", "")
		err := db.Write(ctx, func(tx storage.Tx) error {
			if err := tx.MemoryInsert(ctx, m); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("Write = %v, want fn's error unchanged", err)
		}
		err = db.Read(ctx, func(tx storage.Tx) error { _, err := tx.MemoryGet(ctx, st.ID, m.ID, false); return err })
		if code(err) != trove.ENOTFOUND {
			t.Fatalf("MemoryGet after rollback = %v, want ENOTFOUND", err)
		}
	})

	t.Run("a swallowed database error still fails the commit", func(t *testing.T) {
		m := newMemory(st.ID, "/swallowed", "")
		err := db.Write(ctx, func(tx storage.Tx) error {
			if err := tx.MemoryInsert(ctx, m); err != nil {
				return err
			}
			now := time.Now()
			bad := &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: "ws1", Name: "n", Description: "\x00", CreatedAt: now, UpdatedAt: now}
			_ = tx.StoreInsert(ctx, bad) // aborts the transaction; fn ignores it
			return nil
		})
		if err == nil {
			t.Fatal("Write returned nil although the transaction was aborted")
		}
		err = db.Read(ctx, func(tx storage.Tx) error { _, err := tx.MemoryGet(ctx, st.ID, m.ID, false); return err })
		if code(err) != trove.ENOTFOUND {
			t.Fatalf("MemoryGet after the aborted Write = %v, want ENOTFOUND", err)
		}
	})

	t.Run("a Write that runs no statement commits nothing and succeeds", func(t *testing.T) {
		if err := db.Write(ctx, func(storage.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cancelled context is EUNAVAILABLE", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := db.Write(cctx, func(tx storage.Tx) error { return nil })
		if code(err) != trove.EUNAVAILABLE {
			t.Fatalf("Write on a cancelled context = %v, want EUNAVAILABLE", err)
		}
	})
}

// TestStoreLockSerializes shows that StoreLock holds off a second
// transaction on another pool (another node) until the first commits.
func TestStoreLockSerializes(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	a := openDBOn(t, url, schema, postgres.Options{MaxConns: 2})
	b := openDBOn(t, url, schema, postgres.Options{MaxConns: 2})
	st := fixtureStore(t, a, "ws")
	ctx := context.Background()

	locked := make(chan struct{})
	release := make(chan struct{})
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	done := make(chan error, 1)
	go func() {
		done <- a.Write(ctx, func(tx storage.Tx) error {
			if _, err := tx.StoreLock(ctx, "ws", st.ID); err != nil {
				return err
			}
			close(locked)
			<-release
			note("a commits")
			return nil
		})
	}()
	<-locked
	bdone := make(chan error, 1)
	go func() {
		bdone <- b.Write(ctx, func(tx storage.Tx) error {
			if _, err := tx.StoreLock(ctx, "ws", st.ID); err != nil {
				return err
			}
			note("b locked")
			return nil
		})
	}()
	// Wait until b is really blocked on the row lock, observed in
	// pg_stat_activity, then let a commit.
	admin := adminConn(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%' AND query LIKE '%stores%'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("second StoreLock never waited on the first")
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-bdone; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a commits", "b locked"}, order); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

// TestStatementTimeout: Options.StatementTimeout bounds statements, but not
// migrations (Open migrates under a 50 ms timeout here).
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	db := openDBOn(t, testURL(t), newSchema(t), postgres.Options{StatementTimeout: 50 * time.Millisecond, MaxConns: 1})
	start := time.Now()
	_, err := db.Pool().Exec(context.Background(), "SELECT pg_sleep(5)")
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("pg_sleep(5) with a 50 ms statement timeout = %v after %v", err, time.Since(start))
	}
	// Statements that run past the timeout surface as EUNAVAILABLE.
	err = db.Read(context.Background(), func(storage.Tx) error { return err })
	if code(err) != trove.EUNAVAILABLE {
		t.Fatalf("statement timeout translated to %v, want EUNAVAILABLE", err)
	}
}

// TestOpenPoolSettings: pool settings come from Options when non-zero, else
// from the URL (or DSN), else the driver's defaults; a URL's own
// pool_max_conns or connect_timeout is never overwritten by a default.
func TestOpenPoolSettings(t *testing.T) {
	t.Parallel()
	base := testURL(t)
	schema := newSchema(t)
	openDBOn(t, base, schema, postgres.Options{}) // migrate once
	u, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable pool_max_conns=3 connect_timeout=9", u.Hostname(), port, u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	if pw, ok := u.User.Password(); ok {
		dsn += " password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "'"
	}
	tests := []struct {
		name        string
		url         string
		opts        postgres.Options
		maxConns    int32
		connect     time.Duration
		ping        time.Duration
		healthCheck time.Duration
	}{
		{"defaults", base, postgres.Options{}, postgres.DefaultMaxConns, postgres.DefaultConnectTimeout, postgres.DefaultConnectTimeout, 10 * time.Second},
		{"URL pool_max_conns", withParam(t, base, "pool_max_conns", "3"), postgres.Options{}, 3, postgres.DefaultConnectTimeout, postgres.DefaultConnectTimeout, 10 * time.Second},
		{"Options over URL pool_max_conns", withParam(t, base, "pool_max_conns", "3"), postgres.Options{MaxConns: 5}, 5, postgres.DefaultConnectTimeout, postgres.DefaultConnectTimeout, 10 * time.Second},
		{"URL connect_timeout", withParam(t, base, "connect_timeout", "7"), postgres.Options{}, postgres.DefaultMaxConns, 7 * time.Second, 7 * time.Second, 10 * time.Second},
		{"Options over URL connect_timeout", withParam(t, base, "connect_timeout", "7"), postgres.Options{ConnectTimeout: 2 * time.Second}, postgres.DefaultMaxConns, 2 * time.Second, 2 * time.Second, 10 * time.Second},
		{"URL connect_timeout 0 is unset", withParam(t, base, "connect_timeout", "0"), postgres.Options{}, postgres.DefaultMaxConns, postgres.DefaultConnectTimeout, postgres.DefaultConnectTimeout, 10 * time.Second},
		{"URL ping and health check", withParam(t, withParam(t, base, "pool_ping_timeout", "1s"), "pool_health_check_period", "1m"), postgres.Options{}, postgres.DefaultMaxConns, postgres.DefaultConnectTimeout, time.Second, time.Minute},
		{"DSN", dsn, postgres.Options{}, 3, 9 * time.Second, 9 * time.Second, 10 * time.Second},
		{"Options over DSN", dsn, postgres.Options{MaxConns: 2, ConnectTimeout: 3 * time.Second}, 2, 3 * time.Second, 3 * time.Second, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Schema = schema
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			db, err := postgres.Open(ctx, tt.url, tt.opts)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			if err := db.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			c := db.Pool().Config()
			got := []any{c.MaxConns, c.ConnConfig.ConnectTimeout, c.PingTimeout, c.HealthCheckPeriod}
			want := []any{tt.maxConns, tt.connect, tt.ping, tt.healthCheck}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("MaxConns, ConnectTimeout, PingTimeout, HealthCheckPeriod (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{withParam(t, base, "pool_max_conns", "0"), withParam(t, base, "connect_timeout", "soon"), "postgres://%zz"} {
		if _, err := postgres.Open(context.Background(), bad, postgres.Options{Schema: schema}); code(err) != trove.EINVALID {
			t.Errorf("Open(%s) = %v, want EINVALID", bad, err)
		}
	}
}
