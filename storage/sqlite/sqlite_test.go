package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
	"github.com/trovehq/trove/storage/storagetest"
)

// openTest opens a fresh, migrated database in a temporary directory and
// closes it when the test ends.
func openTest(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// TestDriverConformance runs the port's conformance suite, one database
// file per test.
func TestDriverConformance(t *testing.T) {
	t.Parallel()
	storagetest.RunDriver(t, func(t *testing.T) storage.Driver { return openTest(t) })
}

// TestCoreConformance runs core's conformance suite over the driver, one
// database file per test.
func TestCoreConformance(t *testing.T) {
	t.Parallel()
	coretest.Run(t, func(t *testing.T) storage.Driver { return openTest(t) })
}

// TestAgentsConformance runs the Managed Agents part of core's suite
// (agents, environments, the work queue) over the driver.
func TestAgentsConformance(t *testing.T) {
	t.Parallel()
	coretest.RunAgents(t, func(t *testing.T) storage.Driver { return openTest(t) })
}

// TestNodesConformance runs core's multi-node suite over several drivers
// opened on one file, as several processes would open it.
func TestNodesConformance(t *testing.T) {
	t.Parallel()
	coretest.RunNodes(t, coretest.Nodes{Open: func(t *testing.T, n int) []storage.Driver {
		path := sqlitetest.Path(t)
		ds := make([]storage.Driver, n)
		for i := range ds {
			db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() {
				if err := db.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			ds[i] = db
		}
		return ds
	}})
}

func TestMigrateOnDemand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trove.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatalf("Open without AutoMigrate: %v", err)
	}
	defer db.Close()
	have, known, err := db.SchemaVersion(ctx)
	if err != nil || have != 0 || known < 1 {
		t.Fatalf("SchemaVersion of a new database = %d, %d, %v; want 0, >=1", have, known, err)
	}
	for name, err := range map[string]error{
		"Write": db.Write(ctx, func(storage.Tx) error { return nil }),
		"Read":  db.Read(ctx, func(storage.Tx) error { return nil }),
	} {
		if trove.ErrorCode(err) != trove.EUNAVAILABLE || !strings.Contains(trove.ErrorMessage(err), "trove migrate") {
			t.Errorf("%s before Migrate: %v; want EUNAVAILABLE telling to run trove migrate", name, err)
		}
	}
	for range 2 { // the second run has nothing to do
		if err := db.Migrate(ctx); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		if have, known2, err := db.SchemaVersion(ctx); err != nil || have != known || known2 != known {
			t.Errorf("SchemaVersion after Migrate = %d, %d, %v; want %d, %d", have, known2, err, known, known)
		}
	}
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, testStore()) }); err != nil {
		t.Errorf("Write after Migrate: %v", err)
	}
}

func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trove.db")
	const n = 4
	dbs := make([]*sqlite.DB, n)
	for i := range dbs {
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer db.Close()
		dbs[i] = db
	}
	errs := make(chan error, n)
	for _, db := range dbs {
		go func() { errs <- db.Migrate(ctx) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	raw := rawOpen(t, path)
	var rows, maxV int
	if err := raw.QueryRow(`SELECT count(*), max(version) FROM schema_version`).Scan(&rows, &maxV); err != nil {
		t.Fatal(err)
	}
	_, known, _ := dbs[0].SchemaVersion(ctx)
	if rows != known || maxV != known {
		t.Errorf("schema_version has %d rows up to %d; want each of the %d migrations once", rows, maxV, known)
	}
	for i, db := range dbs {
		if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, testStore()) }); err != nil {
			t.Errorf("Write on handle %d: %v", i, err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trove.db")
	db := openAt(t, path)
	_, known, err := db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw := rawOpen(t, path)
	if _, err := raw.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'from_the_future.sql', 0)`, known+1); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	for _, auto := range []bool{false, true} {
		db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: auto})
		if err == nil {
			db.Close()
			t.Fatalf("Open (AutoMigrate %v) of a newer schema succeeded", auto)
		}
		if trove.ErrorCode(err) != trove.EINVALID || !strings.Contains(err.Error(), "newer") ||
			!strings.Contains(err.Error(), fmt.Sprint(known+1)) {
			t.Errorf("Open (AutoMigrate %v) of a newer schema: %v; want EINVALID naming the versions", auto, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := sqlite.Open(ctx, "", sqlite.Options{})
	if trove.ErrorCode(err) != trove.EINVALID {
		t.Errorf("Open(\"\"): %v, want EINVALID", err)
	}
	_, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "missing", "dir", "trove.db"), sqlite.Options{AutoMigrate: true})
	if trove.ErrorCode(err) != trove.EUNAVAILABLE {
		t.Errorf("Open in a missing directory: %v, want EUNAVAILABLE", err)
	}
}

func TestPathConflictNamesTheMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	s := testStore()
	now := time.Now()
	mk := func(path string) *trove.Memory {
		return &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: s.ID, Path: path, Content: new(string),
			SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", VersionID: trove.NewID(trove.PrefixVersion, now),
			CreatedAt: now, UpdatedAt: now}
	}
	first, second := mk("/a"), mk("/a")
	if err := db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, s); err != nil {
			return err
		}
		return tx.MemoryInsert(ctx, first)
	}); err != nil {
		t.Fatal(err)
	}
	err := db.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsert(ctx, second) })
	var e *trove.Error
	if !errors.As(err, &e) || e.Code != trove.EPATHCONFLICT || e.ConflictingPath != "/a" || e.ConflictingMemoryID != first.ID {
		t.Errorf("MemoryInsert at a used path: %#v; want EPATHCONFLICT naming /a and %s", err, first.ID)
	}
}

// TestAcknowledgedWritesSurviveKill runs a child process that writes as fast
// as it can and prints the ID of every memory whose Write returned; after a
// while the child is killed with SIGKILL, and every acknowledged memory must
// be in the database.
func TestAcknowledgedWritesSurviveKill(t *testing.T) {
	t.Parallel()
	if os.Getenv(killChildEnv) != "" {
		t.Skip("this is the child process")
	}
	path := filepath.Join(t.TempDir(), "trove.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var storeID string
	var acked []string
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "store "):
			storeID = strings.TrimPrefix(line, "store ")
		case strings.HasPrefix(line, "ack "):
			acked = append(acked, strings.TrimPrefix(line, "ack "))
		}
		if len(acked) == 300 && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true // keep reading: lines already written were acknowledged
		}
	}
	werr := cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acknowledgements: %v", len(acked), werr)
	}
	db := openAt(t, path)
	ctx := context.Background()
	if err := db.Read(ctx, func(tx storage.Tx) error {
		n, err := tx.MemoryCount(ctx, storeID)
		if err != nil {
			return err
		}
		if n < len(acked) {
			t.Errorf("%d memories after kill -9, but %d Writes were acknowledged", n, len(acked))
		}
		for _, id := range acked {
			if _, err := tx.MemoryGet(ctx, storeID, id, true); err != nil {
				t.Errorf("acknowledged memory %s: %v", id, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The search index: what the child had not indexed yet was queued in
	// the same transactions, so every acknowledged memory is found.
	raw := rawOpen(t, path)
	var queued int
	if err := raw.QueryRow(`SELECT count(*) FROM memories_search_queue`).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d memories acknowledged, %d search queue entries after kill -9", len(acked), queued)
	pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: "wrkspc_t", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_t"}})
	svc := core.New(db, core.Options{})
	for _, id := range acked {
		m, err := svc.GetMemory(pctx, storeID, id, trove.ViewFull)
		if err != nil {
			t.Fatal(err)
		}
		page, err := svc.Search(pctx, trove.SearchParams{Query: `"` + *m.Content + `"`})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 1 || page.Data[0].Memory.ID != id {
			t.Errorf("search %q after kill -9: %d results, want memory %s", *m.Content, len(page.Data), id)
		}
	}
	var check string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after kill -9: %q, %v", check, err)
	}
}

const killChildEnv = "TROVE_SQLITE_KILL_CHILD"

// TestKillChild is the child of TestAcknowledgedWritesSurviveKill; it does
// nothing unless started by it.
func TestKillChild(t *testing.T) {
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("only runs as the child of TestAcknowledgedWritesSurviveKill")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	s := testStore()
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) }); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
			os.Exit(1) // the parent is gone
		}
	}
	say("store " + s.ID)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100000 {
				now := time.Now()
				content := fmt.Sprintf("writer %d write %d", w, i)
				m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: s.ID, Path: fmt.Sprintf("/w%d/%06d", w, i),
					Content: &content, SizeBytes: len(content), SHA256: "-", VersionID: trove.NewID(trove.PrefixVersion, now),
					CreatedAt: now, UpdatedAt: now}
				if err := db.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsert(ctx, m) }); err != nil {
					say("error " + err.Error())
					return
				}
				say("ack " + m.ID)
			}
		}()
	}
	wg.Wait()
}

// TestSearchReopen: the conformance suite's crash check, with the
// background catch-up off so that the writes are still queued at close.
func TestSearchReopen(t *testing.T) {
	t.Parallel()
	path := sqlitetest.Path(t)
	storagetest.RunSearchReopen(t, func(t *testing.T, d storage.Driver) storage.Driver {
		if d != nil {
			var queued int
			if err := rawOpen(t, path).QueryRow(`SELECT count(*) FROM memories_search_queue`).Scan(&queued); err != nil {
				t.Fatal(err)
			}
			if queued == 0 {
				t.Fatal("nothing queued before the reopen: the test would not test the catch-up")
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
		db, err := sqlite.Open(context.Background(), path, sqlite.Options{AutoMigrate: true, SearchIndexLag: -1, SearchIndexIdle: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func testStore() *trove.Store {
	now := time.Now()
	return &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: "wrkspc_t", Name: "t", CreatedAt: now, UpdatedAt: now}
}

func openAt(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rawOpen opens path with plain database/sql, as another tool would.
func rawOpen(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func TestOpenPathWithURICharacters(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a b?c#d%20e")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "trove.db")
	db := openAt(t, path)
	ctx := context.Background()
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, testStore()) }); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at the path given: %v", err)
	}
}

// TestSearchIndexLag: the committer indexes the queue between groups once
// it holds SearchIndexLag entries (looked at every 32 Writes), so that a
// search has a bounded catch-up while writes go on. Each Write below is a
// group of its own (MaxBatch 1), the store's the first; the committer looks
// after its group of the 32nd Write (31 queued: fewer than 40) and of the
// 64th (63 queued: all applied). A look runs after its Write returned but
// before the next group, so what a test can see deterministically is the
// queue after the Write that follows a look.
func TestSearchIndexLag(t *testing.T) {
	t.Parallel()
	path := sqlitetest.Path(t)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: true, MaxBatch: 1, SearchIndexLag: 40, SearchIndexIdle: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := testStore()
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) }); err != nil {
		t.Fatal(err)
	}
	queued := func() int {
		t.Helper()
		var n int
		if err := rawOpen(t, path).QueryRow(`SELECT count(*) FROM memories_search_queue`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 65 {
		now := time.Now()
		content := fmt.Sprintf("lag word%d", i)
		m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: s.ID, Path: fmt.Sprintf("/m%d", i),
			Content: &content, SizeBytes: len(content), SHA256: "-", VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now}
		if err := db.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsert(ctx, m) }); err != nil {
			t.Fatal(err)
		}
		if i == 61 {
			if n := queued(); n != 62 {
				t.Fatalf("after 62 inserts: %d queued, want 62 (the look at 32 Writes found fewer than 40)", n)
			}
		}
	}
	if n := queued(); n != 2 {
		t.Errorf("after 65 inserts: %d queued, want 2 (the look at 64 Writes applied the 63 before)", n)
	}
}
