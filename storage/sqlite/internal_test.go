package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

func openInternal(t *testing.T, opts Options) *DB {
	t.Helper()
	opts.AutoMigrate = true
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "trove.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// blockCommitter starts a Write whose fn waits for release, and returns once
// that fn runs: until release is closed the committer is busy, so further
// Writes queue up.
func blockCommitter(t *testing.T, db *DB) (release func(), wait func() error) {
	t.Helper()
	started, rel := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.Write(context.Background(), func(storage.Tx) error {
			close(started)
			<-rel
			return nil
		})
	}()
	<-started
	return func() { close(rel) }, func() error { return <-done }
}

// waitQueued spins until n Writes are queued behind the blocked committer.
func waitQueued(t *testing.T, db *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(db.reqs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d Writes queued", len(db.reqs), n)
		}
		runtime.Gosched()
	}
}

func newStore(i int) *trove.Store {
	now := time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
	return &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: "wrkspc_t", Name: fmt.Sprint("s", i),
		CreatedAt: now, UpdatedAt: now}
}

func storeExists(t *testing.T, db *DB, id string) bool {
	t.Helper()
	var found bool
	err := db.Read(context.Background(), func(tx storage.Tx) error {
		_, err := tx.StoreGet(context.Background(), "wrkspc_t", id)
		found = err == nil
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("StoreGet: %v", err)
	}
	return found
}

func TestGroupCommitTakesEveryQueuedWrite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		maxBatch, queued, wantBatches int
	}{
		{0, 20, 1}, // default cap 128: one group
		{4, 10, 3}, // 4 + 4 + 2
		{1, 3, 3},  // group commit disabled
	} {
		t.Run(fmt.Sprintf("max%d_queued%d", c.maxBatch, c.queued), func(t *testing.T) {
			db := openInternal(t, Options{MaxBatch: c.maxBatch})
			release, wait := blockCommitter(t, db)
			b0, w0 := db.Stats()
			stores := make([]*trove.Store, c.queued)
			errs := make([]error, c.queued)
			var wg sync.WaitGroup
			for i := range stores {
				stores[i] = newStore(i)
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = db.Write(context.Background(), func(tx storage.Tx) error {
						return tx.StoreInsert(context.Background(), stores[i])
					})
				}()
			}
			waitQueued(t, db, c.queued)
			release()
			if err := wait(); err != nil {
				t.Fatalf("blocking Write: %v", err)
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("Write %d: %v", i, err)
				}
			}
			b1, w1 := db.Stats()
			if got := b1 - b0; got != int64(c.wantBatches) {
				t.Errorf("%d queued Writes took %d group commits, want %d", c.queued, got, c.wantBatches)
			}
			if got := w1 - w0; got != int64(c.queued)+1 {
				t.Errorf("committed %d Writes, want %d", got, c.queued+1)
			}
			for _, s := range stores {
				if !storeExists(t, db, s.ID) {
					t.Errorf("store %s missing", s.Name)
				}
			}
		})
	}
}

func TestGroupMembersFailAlone(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{})
	release, wait := blockCommitter(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		store *trove.Store
		err   error
		ran   bool
	}
	mine := errors.New("mine")
	fns := []struct {
		name string
		ctx  context.Context
		fn   func(tx storage.Tx, s *trove.Store) error
		want func(err error) bool
		kept bool
	}{
		{"ok", context.Background(), func(tx storage.Tx, s *trove.Store) error { return tx.StoreInsert(context.Background(), s) },
			func(err error) bool { return err == nil }, true},
		{"error", context.Background(), func(tx storage.Tx, s *trove.Store) error {
			if err := tx.StoreInsert(context.Background(), s); err != nil {
				return err
			}
			return mine
		}, func(err error) bool { return err == mine }, false},
		{"panic", context.Background(), func(tx storage.Tx, s *trove.Store) error {
			if err := tx.StoreInsert(context.Background(), s); err != nil {
				return err
			}
			panic("boom")
		}, func(err error) bool { return trove.ErrorCode(err) == trove.EINTERNAL }, false},
		{"cancelled while queued", ctx, func(tx storage.Tx, s *trove.Store) error { return tx.StoreInsert(context.Background(), s) },
			func(err error) bool {
				return trove.ErrorCode(err) == trove.EUNAVAILABLE && errors.Is(err, context.Canceled)
			}, false},
		{"ok after", context.Background(), func(tx storage.Tx, s *trove.Store) error { return tx.StoreInsert(context.Background(), s) },
			func(err error) bool { return err == nil }, true},
	}
	results := make([]result, len(fns))
	var wg sync.WaitGroup
	for i, f := range fns {
		results[i].store = newStore(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].err = db.Write(f.ctx, func(tx storage.Tx) error {
				results[i].ran = true
				return f.fn(tx, results[i].store)
			})
		}()
		waitQueued(t, db, i+1) // keep the queue order
	}
	cancel()
	release()
	if err := wait(); err != nil {
		t.Fatalf("blocking Write: %v", err)
	}
	wg.Wait()
	if b, _ := db.Stats(); b != 2 {
		t.Errorf("%d group commits, want 2 (the blocker, then everything queued)", b)
	}
	for i, f := range fns {
		r := results[i]
		if !f.want(r.err) {
			t.Errorf("%s: Write returned %v", f.name, r.err)
		}
		if got := storeExists(t, db, r.store.ID); got != f.kept {
			t.Errorf("%s: store exists = %v, want %v", f.name, got, f.kept)
		}
	}
	if results[3].ran {
		t.Error("the fn of a Write cancelled while queued ran")
	}
	// The committer survived the panic.
	if err := db.Write(context.Background(), func(tx storage.Tx) error {
		return tx.StoreInsert(context.Background(), newStore(99))
	}); err != nil {
		t.Errorf("Write after a panic: %v", err)
	}
}

func TestCloseDrainsQueuedWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trove.db")
	db, err := Open(context.Background(), path, Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	release, wait := blockCommitter(t, db)
	const n = 10
	errs := make(chan error, n)
	stores := make([]*trove.Store, n)
	for i := range stores {
		stores[i] = newStore(i)
		go func() {
			errs <- db.Write(context.Background(), func(tx storage.Tx) error {
				return tx.StoreInsert(context.Background(), stores[i])
			})
		}()
	}
	waitQueued(t, db, n)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	for {
		db.mu.RLock()
		c := db.closed
		db.mu.RUnlock()
		if c {
			break
		}
		runtime.Gosched()
	}
	// New work is refused while the queue drains.
	err = db.Write(context.Background(), func(storage.Tx) error { return nil })
	if trove.ErrorCode(err) != trove.EUNAVAILABLE {
		t.Errorf("Write during Close: %v, want EUNAVAILABLE", err)
	}
	release()
	if err := wait(); err != nil {
		t.Errorf("blocking Write: %v", err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("queued Write: %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := db.Read(context.Background(), func(storage.Tx) error { return nil }); trove.ErrorCode(err) != trove.EUNAVAILABLE {
		t.Errorf("Read after Close: %v, want EUNAVAILABLE", err)
	}
	db2, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for _, s := range stores {
		if !storeExists(t, db2, s.ID) {
			t.Errorf("store %s queued before Close is missing", s.Name)
		}
	}
}

func TestTxUnusableAfterFnReturns(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{})
	ctx := context.Background()
	var leaked storage.Tx
	if err := db.Write(ctx, func(tx storage.Tx) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := leaked.StoreInsert(ctx, newStore(1)); !errors.Is(err, errTxEnded) {
		t.Errorf("StoreInsert on a leaked write Tx: %v, want errTxEnded", err)
	}
	if err := db.Read(ctx, func(tx storage.Tx) error { leaked = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := leaked.StoreGet(ctx, "w", "x"); !errors.Is(err, errTxEnded) {
		t.Errorf("StoreGet on a leaked read Tx: %v, want errTxEnded", err)
	}
}

func TestBusyDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{BusyTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	// Another process (here: another connection) holds the write lock.
	other, err := sql.Open("sqlite", dsn(db.Path(), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	s := newStore(1)
	err = db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) })
	if trove.ErrorCode(err) != trove.EUNAVAILABLE {
		t.Errorf("Write while another connection holds the lock: %v, want EUNAVAILABLE", err)
	}
	// Readers are not blocked by a writer (WAL).
	if err := db.Read(ctx, func(tx storage.Tx) error {
		_, err := tx.StoreList(ctx, storage.StoreListParams{WorkspaceID: "wrkspc_t"})
		return err
	}); err != nil {
		t.Errorf("Read while another connection holds the write lock: %v", err)
	}
	if _, err := c.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) }); err != nil {
		t.Errorf("Write once the lock is free: %v", err)
	}
}

func TestTranslate(t *testing.T) {
	coded := trove.Errorf(trove.EPRECONDITION, "x")
	plain := errors.New("plain")
	for _, c := range []struct {
		err  error
		code string
	}{
		{sql.ErrNoRows, trove.ENOTFOUND},
		{fmt.Errorf("wrapped: %w", sql.ErrNoRows), trove.ENOTFOUND},
		{sql.ErrConnDone, trove.EUNAVAILABLE},
		{errors.New("sql: database is closed"), trove.EUNAVAILABLE},
		{context.Canceled, trove.EUNAVAILABLE},
		{context.DeadlineExceeded, trove.EUNAVAILABLE},
		{coded, trove.EPRECONDITION},
		{plain, trove.EINTERNAL},
	} {
		if got := trove.ErrorCode(translate(c.err)); got != c.code {
			t.Errorf("translate(%v) has code %q, want %q", c.err, got, c.code)
		}
	}
	if translate(nil) != nil {
		t.Error("translate(nil) != nil")
	}
	if translate(plain) != plain || translate(coded) != coded {
		t.Error("translate changed an error it does not know")
	}
}

// TestQueryPlansUseIndexes checks that the lookups the brief requires to be
// index-driven never scan a table nor sort in a temporary B-tree.
func TestQueryPlansUseIndexes(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{})
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queries := map[string]sqlQuery{
		"overlap":             overlapQuery("memstore_1", "/a/b/c", "mem_1"),
		"list all":            memoryListQuery(storage.MemoryListParams{StoreID: "s", Limit: 20}),
		"list prefix":         memoryListQuery(storage.MemoryListParams{StoreID: "s", Prefix: "/a/", Limit: 20}),
		"list prefix from":    memoryListQuery(storage.MemoryListParams{StoreID: "s", Prefix: "/a/", From: "/a/m", Limit: 20, WithContent: true}),
		"versions of store":   versionListQuery(storage.VersionListParams{StoreID: "s", Limit: 20}),
		"versions paged":      versionListQuery(storage.VersionListParams{StoreID: "s", Before: &storage.Position{CreatedAt: ts, ID: "v"}, Limit: 20}),
		"versions of memory":  versionListQuery(storage.VersionListParams{StoreID: "s", MemoryID: "m", Limit: 20}),
		"versions of session": versionListQuery(storage.VersionListParams{StoreID: "s", SessionID: "sesn", Limit: 20}),
		"versions of api key": versionListQuery(storage.VersionListParams{StoreID: "s", APIKeyID: "k", Limit: 20}),
		"delete expired":      {deleteExpiredSQL, []any{int64(1)}},
		"as-of walk pick":     {asOfPickQuery("content"), []any{"m", int64(9), "s", "/a"}},
	}
	// Each of these must not read through the named index: a seek it does
	// not need.
	notThrough := map[string]string{"as-of walk pick": "versions_by_seq"}
	for name, q := range queries {
		rows, err := db.rdb.Query("EXPLAIN QUERY PLAN "+q.sql, q.args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		t.Logf("%s: %s", name, text)
		if strings.Contains(text, "SCAN ") || strings.Contains(text, "TEMP B-TREE") || !strings.Contains(text, "INDEX") {
			t.Errorf("%s: plan %q scans or sorts", name, text)
		}
		if idx := notThrough[name]; idx != "" && strings.Contains(text, idx) {
			t.Errorf("%s: plan %q reads through %s", name, text, idx)
		}
	}
}

func TestParseMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, c := range []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr string
	}{
		{"ok", fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A")}, []int{1, 2}, ""},
		{"gap", fstest.MapFS{"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")}, nil, "without gaps"},
		{"duplicate", fstest.MapFS{"m/0001_a.sql": file("A"), "m/0001_b.sql": file("B")}, nil, "without gaps"},
		{"bad name", fstest.MapFS{"m/init.sql": file("A")}, nil, "bad migration file name"},
		{"not sql", fstest.MapFS{"m/0001_a.txt": file("A")}, nil, "bad migration file name"},
		{"zero", fstest.MapFS{"m/0000_a.sql": file("A")}, nil, "bad migration file name"},
	} {
		ms, err := parseMigrations(c.fs, "m")
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want one containing %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []int
		for _, m := range ms {
			got = append(got, m.version)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if n, err := knownVersion(); err != nil || n < 1 {
		t.Errorf("embedded migrations: %d, %v", n, err)
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"/a/", "/a0", true},
		{"/a", "/b", true},
		{"/\u00e9", "/\xc3\xaa", true},
		{"/a\xff", "/b", true},
		{"\xff\xff", "", false},
	} {
		got, ok := prefixEnd(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestBeforeKeyRoundsSubMicroseconds(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 1500, time.UTC) // 1.5µs
	us, id := beforeKey(&storage.Position{CreatedAt: at, ID: "x"})
	if us != at.UnixMicro()+1 || id != "" {
		t.Errorf("beforeKey(1.5µs) = %d %q, want %d \"\"", us, id, at.UnixMicro()+1)
	}
	at = time.Date(2026, 1, 1, 0, 0, 0, 2000, time.UTC)
	if us, id := beforeKey(&storage.Position{CreatedAt: at, ID: "x"}); us != at.UnixMicro() || id != "x" {
		t.Errorf("beforeKey(2µs) = %d %q", us, id)
	}
	if got := ceilMicros(time.Date(2026, 1, 1, 0, 0, 0, 1500, time.UTC)); got != time.Date(2026, 1, 1, 0, 0, 0, 2000, time.UTC).UnixMicro() {
		t.Errorf("ceilMicros(1.5µs) = %d", got)
	}
}

func TestReadConnectionsSurvivePanicsAndCancellation(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{ReadConns: 2})
	ctx := context.Background()
	s := newStore(1)
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) }); err != nil {
		t.Fatal(err)
	}
	for i := range 6 { // more than the pool: a leaked connection would block
		func() {
			defer func() {
				if p := recover(); p != "read panic" {
					t.Errorf("recovered %v, want the fn's panic", p)
				}
			}()
			db.Read(ctx, func(tx storage.Tx) error {
				if _, err := tx.StoreGet(ctx, "wrkspc_t", s.ID); err != nil {
					t.Errorf("StoreGet: %v", err)
				}
				panic("read panic")
			})
		}()
		cctx, cancel := context.WithCancel(ctx)
		err := db.Read(cctx, func(tx storage.Tx) error {
			cancel()
			_, err := tx.StoreGet(cctx, "wrkspc_t", s.ID)
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Read whose context is cancelled inside fn: %v, want context.Canceled", err)
		}
		if !storeExists(t, db, s.ID) {
			t.Fatalf("round %d: store not found after a panicking Read", i)
		}
	}
}

func TestCloseWaitsForReads(t *testing.T) {
	t.Parallel()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "trove.db"), Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	inRead, release := make(chan struct{}), make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		readErr <- db.Read(context.Background(), func(tx storage.Tx) error {
			close(inRead)
			<-release
			_, err := tx.StoreList(context.Background(), storage.StoreListParams{WorkspaceID: "w"})
			return err
		})
	}()
	<-inRead
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	for { // Close has begun: new work is refused
		db.mu.RLock()
		c := db.closed
		db.mu.RUnlock()
		if c {
			break
		}
		runtime.Gosched()
	}
	if err := db.Read(context.Background(), func(storage.Tx) error { return nil }); trove.ErrorCode(err) != trove.EUNAVAILABLE {
		t.Errorf("a new Read during Close: %v, want EUNAVAILABLE", err)
	}
	close(release)
	if err := <-readErr; err != nil {
		t.Errorf("a Read in flight during Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestMigration0002BackfillsMemoryCount: a database at schema version 1
// with memories gets exact per-store counters from migration 0002, which
// the triggers then keep.
func TestMigration0002BackfillsMemoryCount(t *testing.T) {
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
	stmts := []string{ms[0].sql,
		`CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		`INSERT INTO schema_version VALUES (1, '0001_init.sql', 0)`,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES ('memstore_a', 'w', 'a', 0, 0), ('memstore_b', 'w', 'b', 0, 0), ('memstore_c', 'w', 'c', 0, 0)`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_a', '/1', '', 0, '', 'v1', 0, 0), ('mem_2', 'memstore_a', '/2', '', 0, '', 'v2', 0, 0),
			('mem_3', 'memstore_a', '/3', '', 0, '', 'v3', 0, 0), ('mem_4', 'memstore_b', '/1', '', 0, '', 'v4', 0, 0)`,
	}
	for _, q := range stmts {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(ctx, path, Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	counts := func() map[string]int {
		got := map[string]int{}
		if err := db.Read(ctx, func(tx storage.Tx) error {
			for _, id := range []string{"memstore_a", "memstore_b", "memstore_c"} {
				n, err := tx.MemoryCount(ctx, id)
				if err != nil {
					return err
				}
				got[id] = n
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := counts(), map[string]int{"memstore_a": 3, "memstore_b": 1, "memstore_c": 0}; !maps.Equal(got, want) {
		t.Errorf("after migration: %v, want %v", got, want)
	}
	if err := db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryDelete(ctx, "memstore_a", "mem_1"); err != nil {
			return err
		}
		now := time.Now()
		c := "x"
		return tx.MemoryInsert(ctx, &trove.Memory{ID: "mem_5", StoreID: "memstore_c", Path: "/5", Content: &c, SizeBytes: 1,
			VersionID: "v5", CreatedAt: now, UpdatedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(), map[string]int{"memstore_a": 2, "memstore_b": 1, "memstore_c": 1}; !maps.Equal(got, want) {
		t.Errorf("after a delete and an insert: %v, want %v", got, want)
	}
}

// TestOptimisticGroupRerun: a group runs its fns without savepoints first;
// when one fails, nothing of that run is committed, the group runs again
// with a savepoint per fn, and each caller gets its own result (the others'
// changes committed exactly once). A lone failing fn is not run again.
func TestOptimisticGroupRerun(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{})
	ctx := context.Background()
	errFail := errors.New("fail")

	var loneCalls atomic.Int32
	lone := newStore(100)
	if err := db.Write(ctx, func(tx storage.Tx) error {
		loneCalls.Add(1)
		if err := tx.StoreInsert(ctx, lone); err != nil {
			return err
		}
		return errFail
	}); !errors.Is(err, errFail) {
		t.Fatalf("lone failing Write = %v, want its error", err)
	}
	if n := loneCalls.Load(); n != 1 {
		t.Errorf("lone failing fn ran %d times, want 1", n)
	}

	release, wait := blockCommitter(t, db)
	ok1, ok2, bad := newStore(1), newStore(2), newStore(3)
	var calls [3]atomic.Int32
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, s := range []*trove.Store{ok1, bad, ok2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Write(ctx, func(tx storage.Tx) error {
				calls[i].Add(1)
				if err := tx.StoreInsert(ctx, s); err != nil {
					return err // a second insert would fail: the first run must be gone
				}
				if s == bad {
					return errFail
				}
				return nil
			})
		}()
		waitQueued(t, db, i+1) // queue in this order
	}
	release()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], errFail) {
		t.Fatalf("errors = %v, want nil, %v, nil", errs, errFail)
	}
	// ok1 ran before the failure and again; bad ran twice; ok2 ran only in
	// the second run (the first stopped at the failure).
	if got := [3]int32{calls[0].Load(), calls[1].Load(), calls[2].Load()}; got != [3]int32{2, 2, 1} {
		t.Errorf("fn runs = %v, want [2 2 1]", got)
	}
	if !storeExists(t, db, ok1.ID) || !storeExists(t, db, ok2.ID) || storeExists(t, db, bad.ID) || storeExists(t, db, lone.ID) {
		t.Errorf("committed stores: ok1 %v ok2 %v bad %v lone %v; want only ok1 and ok2",
			storeExists(t, db, ok1.ID), storeExists(t, db, ok2.ID), storeExists(t, db, bad.ID), storeExists(t, db, lone.ID))
	}
}

// Read runs fn exactly once, whatever number of statements it issues, and
// a panic of fn's own reaches the caller, after which the read pool still
// works (the connection that was in use is replaced).
func TestReadRunsFnOnce(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{ReadConns: 1})
	ctx := context.Background()
	s := newStore(1)
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		statements int
		wantRuns   int
	}{{0, 1}, {1, 1}, {2, 1}, {5, 1}} {
		runs := 0
		err := db.Read(ctx, func(tx storage.Tx) error {
			runs++
			for range c.statements {
				if _, err := tx.StoreGet(ctx, "wrkspc_t", s.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || runs != c.wantRuns {
			t.Errorf("Read of %d statements: fn ran %d times (err %v), want %d", c.statements, runs, err, c.wantRuns)
		}
	}
	for _, statements := range []int{1, 2} {
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("panic after %d statements = %v, want fn's own", statements, p)
				}
			}()
			_ = db.Read(ctx, func(tx storage.Tx) error {
				for range statements {
					if _, err := tx.StoreGet(ctx, "wrkspc_t", s.ID); err != nil {
						return err
					}
				}
				panic("boom")
			})
		}()
	}
	if !storeExists(t, db, s.ID) {
		t.Error("the read connection is unusable after panics")
	}
}

// StoreLock reads a store once per group, but what a Write of the same
// group sees is always the transaction's current state: a store changed by
// an earlier Write of the group, or restored by that Write's rollback, or
// asked for from another workspace.
func TestStoreLockWithinAGroup(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{})
	ctx := context.Background()
	s := newStore(1)
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) }); err != nil {
		t.Fatal(err)
	}
	errFail := errors.New("fail")
	archived := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	// Each step is one Write; all of them queue behind a blocked committer
	// and run as one group, in this order.
	type seen struct {
		name     string
		archived bool
		err      error
	}
	var got []seen
	lock := func(name, ws string) func(storage.Tx) error {
		return func(tx storage.Tx) error {
			st, err := tx.StoreLock(ctx, ws, s.ID)
			got = append(got, seen{name, err == nil && st.ArchivedAt != nil, err})
			if err == nil {
				st.Name = "mutated by the caller" // must not reach the cache
			}
			return nil
		}
	}
	steps := []func(storage.Tx) error{
		lock("first", "wrkspc_t"),
		lock("other workspace", "wrkspc_other"),
		func(tx storage.Tx) error { // archive, then fail: rolled back
			st, err := tx.StoreLock(ctx, "wrkspc_t", s.ID)
			if err != nil {
				return err
			}
			st.ArchivedAt = &archived
			if err := tx.StoreUpdate(ctx, st); err != nil {
				return err
			}
			if _, err := tx.StoreLock(ctx, "wrkspc_t", s.ID); err != nil { // the archived state, read inside this Write
				return err
			}
			return errFail
		},
		lock("after a rolled-back archive", "wrkspc_t"),
		func(tx storage.Tx) error { // archive for good
			st, err := tx.StoreLock(ctx, "wrkspc_t", s.ID)
			if err != nil {
				return err
			}
			if st.Name != s.Name {
				return fmt.Errorf("StoreLock returned name %q, want %q", st.Name, s.Name)
			}
			st.ArchivedAt = &archived
			return tx.StoreUpdate(ctx, st)
		},
		lock("after an archive", "wrkspc_t"),
	}
	release, wait := blockCommitter(t, db)
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, fn := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Write(ctx, fn)
		}()
		waitQueued(t, db, i+1)
	}
	b0, _ := db.Stats()
	release()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if b, _ := db.Stats(); b-b0 != 1 {
		t.Fatalf("the steps took %d groups, want 1", b-b0)
	}
	for i, err := range errs {
		if want := error(nil); i == 2 {
			if !errors.Is(err, errFail) {
				t.Errorf("step %d: %v, want %v", i, err, errFail)
			}
		} else if err != want {
			t.Errorf("step %d: %v", i, err)
		}
	}
	// The optimistic run stopped at the failing step and the group ran
	// again with savepoints: the last run is what counts.
	got = got[len(got)-4:]
	want := []seen{
		{"first", false, nil},
		{"other workspace", false, nil},
		{"after a rolled-back archive", false, nil},
		{"after an archive", true, nil},
	}
	for i := range want {
		if got[i].name != want[i].name || got[i].archived != want[i].archived || (got[i].err == nil) != (want[i].name != "other workspace") {
			t.Errorf("%s: archived %v, err %v", got[i].name, got[i].archived, got[i].err)
		}
	}
	if trove.ErrorCode(got[1].err) != trove.ENOTFOUND {
		t.Errorf("StoreLock from another workspace = %v, want ENOTFOUND", got[1].err)
	}
}

// TestMigration0004NumbersVersions: a database at schema version 3 with
// versions gets each store's history numbered 1..n in the order versions
// were listed until then ((created_at, id)), and new versions go on from n.
func TestMigration0004NumbersVersions(t *testing.T) {
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
	stmts := []string{ms[0].sql, ms[1].sql, ms[2].sql,
		`CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		`INSERT INTO schema_version VALUES (1, '0001_init.sql', 0), (2, '0002_memory_count.sql', 0), (3, '0003_drop_memories_by_version.sql', 0)`,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES ('memstore_a', 'w', 'a', 0, 0), ('memstore_b', 'w', 'b', 0, 0), ('memstore_c', 'w', 'c', 0, 0)`,
		// Inserted out of order: b's time is first, then ties broken by id.
		`INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_at) VALUES
			('memver_3', 'memstore_a', 'mem_1', 'modified', '/1', '', 0, '', 20),
			('memver_1', 'memstore_a', 'mem_1', 'created', '/1', '', 0, '', 10),
			('memver_2b', 'memstore_a', 'mem_2', 'created', '/2', '', 0, '', 15),
			('memver_2a', 'memstore_a', 'mem_3', 'created', '/3', '', 0, '', 15),
			('memver_9', 'memstore_b', 'mem_4', 'created', '/1', '', 0, '', 5)`,
	}
	for _, q := range stmts {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(ctx, path, Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type numbered struct {
		ID  string
		Seq int64
	}
	history := func(storeID string) (out []numbered, last int64) {
		if err := db.Read(ctx, func(tx storage.Tx) error {
			vs, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID})
			if err != nil {
				return err
			}
			for _, v := range vs {
				out = append(out, numbered{v.ID, v.Seq})
			}
			last, err = tx.StoreSeq(ctx, storeID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out, last
	}
	gotA, lastA := history("memstore_a")
	wantA := []numbered{{"memver_1", 1}, {"memver_2a", 2}, {"memver_2b", 3}, {"memver_3", 4}}
	if !slices.Equal(gotA, wantA) || lastA != 4 {
		t.Errorf("store a after migration: %v (last %d), want %v (last 4)", gotA, lastA, wantA)
	}
	if gotB, lastB := history("memstore_b"); !slices.Equal(gotB, []numbered{{"memver_9", 1}}) || lastB != 1 {
		t.Errorf("store b after migration: %v (last %d), want memver_9 as 1", gotB, lastB)
	}
	if gotC, lastC := history("memstore_c"); len(gotC) != 0 || lastC != 0 {
		t.Errorf("store c after migration: %v (last %d), want nothing", gotC, lastC)
	}
	v := &trove.MemoryVersion{ID: "memver_new", StoreID: "memstore_a", MemoryID: "mem_1", Operation: trove.OpDeleted,
		Path: new("/1"), CreatedAt: time.Now()}
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.VersionInsert(ctx, v) }); err != nil {
		t.Fatal(err)
	}
	if v.Seq != 5 {
		t.Errorf("first version after migration numbered %d, want 5", v.Seq)
	}
}

// TestAsOfWalkSeeksPastThePair checks in SQLite's program for asOfWalkNext
// that its seek of versions_by_path keys all four columns of the index,
// so it lands past every version of the pair it starts from, instead of
// on the pair's first version, whence the statement would step over the
// memory's whole history (docs/perf/scale.md). Written with a two-column
// row value, the seek keys three.
func TestAsOfWalkSeeksPastThePair(t *testing.T) {
	t.Parallel()
	db := openInternal(t, Options{})
	rows, err := db.rdb.Query("EXPLAIN "+asOfWalkNext, "s", "/a", "m")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var seeks []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = fmt.Sprint(vals[i])
		}
		if strings.HasPrefix(row["opcode"], "Seek") {
			seeks = append(seeks, row["opcode"]+" keys "+row["p4"])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seeks) != 1 || !strings.HasSuffix(seeks[0], " keys 4") {
		t.Errorf("asOfWalkNext's seeks: %q; want one seek keying all 4 columns of versions_by_path", seeks)
	}
}
