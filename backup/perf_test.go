package backup_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
)

var (
	perfMemories = flag.Int("backup.memories", 200, "memories in the TestLongBackupScale deployment")
	perfVersions = flag.Int("backup.versions", 5, "versions per memory in it (the first one a create)")
)

// TestLongBackupScale measures `trove backup` and `trove restore`, run as
// processes, on a SQLite deployment of -backup.memories memories of 1 KiB
// with -backup.versions versions each (1 store per 10,000 memories), built
// through the driver's bulk paths: wall time and the peak RSS of each
// process (getrusage of the child), backup from SQLite, restore into
// PostgreSQL, backup from PostgreSQL, restore into SQLite; and checks that
// the last database has the first one's counters and heads. By default
// it is a quick check of the harness (200 memories × 5 versions);
// docs/perf/backup.md has the command and the figures of larger runs.
func TestLongBackupScale(t *testing.T) {
	skipnote.Long(t)
	pgtest.URL(t)
	dir := t.TempDir()
	// The trove run is this test binary (TestMain: asTroveEnv), not a
	// `go build` of cmd/trove, which on a cold build cache compiled every
	// package a second time. Under -race the figures are the race build's;
	// docs/perf/backup.md's command runs without it.
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srcDir := filepath.Join(dir, "src")
	os.MkdirAll(srcDir, 0o700)
	src, err := sqlite.Open(ctx, filepath.Join(srcDir, "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stores := buildScale(t, src, *perfMemories, *perfVersions)
	t.Logf("built %d memories × %d versions in %d stores in %v", *perfMemories, *perfVersions, len(stores), time.Since(start).Round(time.Millisecond))
	want := scaleState(t, src, stores)
	src.Close()
	dbSize := fileSize(filepath.Join(srcDir, "trove.db"))

	pgURL := pgtest.SchemaURL(t)
	f1, f2 := filepath.Join(dir, "a.trove-backup"), filepath.Join(dir, "b.trove-backup")
	dstDir := filepath.Join(dir, "dst")
	steps := []struct {
		name string
		args []string
		file string
	}{
		{"backup from SQLite", []string{"backup", "--data", srcDir, f1}, f1},
		{"restore into PostgreSQL", []string{"restore", "--database", pgURL, f1}, ""},
		{"backup from PostgreSQL", []string{"backup", "--database", pgURL, f2}, f2},
		{"restore into SQLite", []string{"restore", "--data", dstDir, f2}, ""},
	}
	t.Logf("SQLite database: %.1f MB; machine load: %s", float64(dbSize)/1e6, loadavg())
	for _, s := range steps {
		cmd := exec.Command(bin, s.args...)
		cmd.Env = append(os.Environ(), asTroveEnv+"=1", "TROVE_DATA=", "TROVE_DATABASE=")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		st := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The peak RSS is the child's own VmHWM, polled: getrusage's
		// ru_maxrss of a child counts the RSS of the parent it was
		// forked from (this test process) too.
		hwm := make(chan int64)
		go func() {
			var peak int64
			for {
				if kb := vmHWM(cmd.Process.Pid); kb > peak {
					peak = kb
				}
				select {
				case hwm <- peak:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		err := cmd.Wait()
		took := time.Since(st)
		peak := <-hwm
		if err != nil {
			t.Fatalf("trove %s: %v\n%s", strings.Join(s.args, " "), err, out.String())
		}
		line := fmt.Sprintf("%-24s %8.1f s  peak RSS %6.1f MB  CPU %6.1f s", s.name, took.Seconds(), float64(peak)/1024,
			(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
		if s.file != "" {
			line += fmt.Sprintf("  file %.1f MB", float64(fileSize(s.file))/1e6)
		}
		t.Log(line)
	}
	dst, err := sqlite.Open(ctx, filepath.Join(dstDir, "trove.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if got := scaleState(t, dst, stores); got != want {
		t.Errorf("after SQLite → PostgreSQL → SQLite: %s, want %s", got, want)
	}
	pg, err := postgres.Open(ctx, pgURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if got := scaleState(t, pg, stores); got != want {
		t.Errorf("in PostgreSQL: %s, want %s", got, want)
	}
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// scaleState is every store's counters and head.
func scaleState(t *testing.T, d storage.Driver, stores []string) string {
	t.Helper()
	var b strings.Builder
	err := d.Read(context.Background(), func(tx storage.Tx) error {
		for _, s := range stores {
			st, err := tx.StoreStats(context.Background(), s)
			if err != nil {
				return err
			}
			seq, head, err := tx.StoreHead(context.Background(), s)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s %+v %d %x; ", s, st, seq, head)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// buildScale writes memories of about 1 KiB, 10,000 a store, each with
// versions-1 updates, through the driver's bulk paths (MemoryInsertBatch,
// then MemoryUpdate + VersionInsert, 2,000 a transaction), so the chain,
// the counters and the search index are those of ordinary writes.
func buildScale(t *testing.T, d storage.Driver, memories, versions int) []string {
	t.Helper()
	ctx := context.Background()
	const perStore, batch = 10000, 2000
	actor := trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_scale"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	content := func(i, v int) string {
		s := fmt.Sprintf("memory %d version %d\n", i, v)
		return s + strings.Repeat("alpha bravo charlie delta echo foxtrot golf hotel ", 25)[:1024-len(s)]
	}
	shaOf := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	var stores []string
	var ms []*trove.Memory
	for lo := 0; lo < memories; lo += perStore {
		st := &trove.Store{ID: trove.NewID(trove.PrefixStore, at), WorkspaceID: "wrkspc_default", Name: fmt.Sprintf("s%d", lo/perStore),
			Metadata: map[string]string{}, CreatedAt: at, UpdatedAt: at}
		if err := d.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, st) }); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st.ID)
		for b := lo; b < min(lo+perStore, memories); b += batch {
			var bm []*trove.Memory
			var bv []*trove.MemoryVersion
			for i := b; i < min(b+batch, lo+perStore, memories); i++ {
				c := content(i, 1)
				m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, at), StoreID: st.ID, Path: fmt.Sprintf("/d%03d/m%06d.md", i%1000, i),
					Content: &c, SizeBytes: len(c), SHA256: shaOf(c), VersionID: trove.NewID(trove.PrefixVersion, at), CreatedAt: at, UpdatedAt: at}
				bm = append(bm, m)
				bv = append(bv, &trove.MemoryVersion{ID: m.VersionID, StoreID: st.ID, MemoryID: m.ID, Operation: trove.OpCreated, Path: &m.Path,
					Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256, CreatedBy: &actor, CreatedAt: at})
			}
			if err := d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsertBatch(ctx, bm, bv) }); err != nil {
				t.Fatal(err)
			}
			ms = append(ms, bm...)
		}
	}
	var pending []func(tx storage.Tx) error
	flush := func() {
		if err := d.Write(ctx, func(tx storage.Tx) error {
			for _, f := range pending {
				if err := f(tx); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		pending = pending[:0]
	}
	for v := 2; v <= versions; v++ {
		when := at.Add(time.Duration(v) * time.Hour)
		for i, m := range ms {
			c := content(i, v)
			mm := *m
			mm.Content, mm.SizeBytes, mm.SHA256 = &c, len(c), shaOf(c)
			mm.VersionID, mm.UpdatedAt = trove.NewID(trove.PrefixVersion, when), when
			pending = append(pending, func(tx storage.Tx) error {
				if err := tx.MemoryUpdate(ctx, &mm); err != nil {
					return err
				}
				return tx.VersionInsert(ctx, &trove.MemoryVersion{ID: mm.VersionID, StoreID: mm.StoreID, MemoryID: mm.ID, Operation: trove.OpModified,
					Path: &mm.Path, Content: &c, SizeBytes: &mm.SizeBytes, SHA256: &mm.SHA256, CreatedBy: &actor, CreatedAt: when})
			})
			if len(pending) == batch {
				flush()
			}
		}
	}
	if len(pending) > 0 {
		flush()
	}
	return stores
}

// vmHWM returns the peak resident set size of process pid in KiB (its
// VmHWM), 0 once it is gone.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb
		}
	}
	return 0
}
