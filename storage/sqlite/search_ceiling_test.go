package sqlite_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/loadgen"
)

// ftsVariants are the search index shapes BenchmarkSearchIndexCeiling
// compares, as the statements that create them over the bare tables of
// ceilingSchema ("" is no index at all) and, for "deferred", the
// statements run before each COMMIT: 0007's table, its triggers only
// queueing rowids, the queue applied once per transaction (FTS5 writes a
// segment at every statement savepoint, which each memories write with a
// trigger opens; see docs/perf/search.md). "bare-fts" drops the UNINDEXED
// columns, "bare-fts-ascii" also the Unicode tokenizer (neither is usable
// by Trove: they show what those parts cost).
var ftsVariants = []struct{ name, schema, flush string }{
	{"none", "", ""},
	{"0007", `CREATE VIRTUAL TABLE memories_search USING fts5(
    path, content, store_id UNINDEXED, memory_id UNINDEXED, path_key UNINDEXED,
    content = '', contentless_delete = 1, contentless_unindexed = 1,
    tokenize = 'unicode61 remove_diacritics 0 categories ''L* N* M* Co''');
CREATE TRIGGER memories_search_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key)
    VALUES (NEW.rowid, NEW.path, NEW.content, NEW.store_id, NEW.id, NEW.path);
END;
CREATE TRIGGER memories_search_update AFTER UPDATE OF path, content, store_id, id ON memories
WHEN OLD.path IS NOT NEW.path OR OLD.content IS NOT NEW.content OR OLD.store_id IS NOT NEW.store_id OR OLD.id IS NOT NEW.id
BEGIN
    DELETE FROM memories_search WHERE rowid = OLD.rowid;
    INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key)
    VALUES (NEW.rowid, NEW.path, NEW.content, NEW.store_id, NEW.id, NEW.path);
END;`, ""},
	{"bare-fts", `CREATE VIRTUAL TABLE memories_search USING fts5(
    path, content, content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0 categories ''L* N* M* Co''');
CREATE TRIGGER memories_search_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_search (rowid, path, content) VALUES (NEW.rowid, NEW.path, NEW.content);
END;
CREATE TRIGGER memories_search_update AFTER UPDATE OF path, content ON memories
BEGIN
    DELETE FROM memories_search WHERE rowid = OLD.rowid;
    INSERT INTO memories_search (rowid, path, content) VALUES (NEW.rowid, NEW.path, NEW.content);
END;`, ""},
	{"bare-fts-ascii", `CREATE VIRTUAL TABLE memories_search USING fts5(
    path, content, content = '', contentless_delete = 1, tokenize = 'ascii');
CREATE TRIGGER memories_search_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_search (rowid, path, content) VALUES (NEW.rowid, NEW.path, NEW.content);
END;
CREATE TRIGGER memories_search_update AFTER UPDATE OF path, content ON memories
BEGIN
    DELETE FROM memories_search WHERE rowid = OLD.rowid;
    INSERT INTO memories_search (rowid, path, content) VALUES (NEW.rowid, NEW.path, NEW.content);
END;`, ""},
	{"deferred", `CREATE VIRTUAL TABLE memories_search USING fts5(
    path, content, store_id UNINDEXED, memory_id UNINDEXED, path_key UNINDEXED,
    content = '', contentless_delete = 1, contentless_unindexed = 1,
    tokenize = 'unicode61 remove_diacritics 0 categories ''L* N* M* Co''');
CREATE TABLE memories_search_queue (rowid INTEGER PRIMARY KEY, indexed INTEGER NOT NULL);
CREATE TRIGGER memories_search_insert AFTER INSERT ON memories BEGIN
    INSERT OR IGNORE INTO memories_search_queue VALUES (NEW.rowid, 0);
END;
CREATE TRIGGER memories_search_update AFTER UPDATE OF path, content, store_id, id ON memories
WHEN OLD.path IS NOT NEW.path OR OLD.content IS NOT NEW.content OR OLD.store_id IS NOT NEW.store_id OR OLD.id IS NOT NEW.id
BEGIN
    INSERT OR IGNORE INTO memories_search_queue VALUES (OLD.rowid, 1);
END;`, `DELETE FROM memories_search WHERE rowid IN (SELECT rowid FROM memories_search_queue WHERE indexed);
INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key)
SELECT m.rowid, m.path, m.content, m.store_id, m.id, m.path FROM memories_search_queue q JOIN memories m ON m.rowid = q.rowid ORDER BY q.rowid;
DELETE FROM memories_search_queue;`},
}

// ceilingSchema is the bare shape of a memory write: the memories and
// versions tables of migration 0001 with their indexes, nothing else.
const ceilingSchema = `
CREATE TABLE memories (
    id TEXT NOT NULL PRIMARY KEY, store_id TEXT NOT NULL, path TEXT NOT NULL,
    content TEXT NOT NULL, size_bytes INTEGER NOT NULL, sha256 TEXT NOT NULL,
    version_id TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
CREATE UNIQUE INDEX memories_by_path ON memories (store_id, path);
CREATE TABLE versions (
    id TEXT NOT NULL PRIMARY KEY, store_id TEXT NOT NULL, memory_id TEXT NOT NULL,
    operation TEXT NOT NULL, path TEXT, content TEXT, size_bytes INTEGER, sha256 TEXT,
    created_by_type TEXT, created_by_id TEXT, created_at INTEGER NOT NULL) STRICT;
CREATE INDEX versions_by_store ON versions (store_id, created_at DESC, id DESC);
CREATE INDEX versions_by_memory ON versions (memory_id, created_at DESC, id DESC);
`

// BenchmarkSearchIndexCeiling: what FTS5 in modernc.org/sqlite costs with
// nothing of Trove around it. One connection (WAL, synchronous=FULL, as
// the driver's writer) writes memory rows and their version rows into the
// bare tables of ceilingSchema, in transactions of `group` writes (1: a
// commit per write; 16: group commit's shape at 16 writers), with each
// index variant of ftsVariants, the variants in alternating rounds.
// Reported per variant: writes per second of wall time (<v>-ops/s), CPU
// per write (<v>-cpu-us, process CPU: steadier than wall time on a busy
// machine), and the ratio to no index (<v>-%, by CPU).
//
//	go test -run '^$' -bench SearchIndexCeiling -benchtime 1x ./storage/sqlite/
func BenchmarkSearchIndexCeiling(b *testing.B) {
	const rounds, perRound, preload = 5, 1000, 2000
	corpus := loadgen.NewCorpus() // internal/bench's texts
	texts := make([]string, 2*(preload+rounds*perRound))
	for i := range texts {
		texts[i] = corpus.Text(i)
	}
	for _, op := range []string{"create", "update"} {
		for _, group := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/group=%d", op, group), func(b *testing.B) {
				type side struct {
					db       *sql.DB
					k        int
					next     int
					wall     time.Duration
					cpu      time.Duration
					n        int
					ins, upd *sql.Stmt
					ver      *sql.Stmt
				}
				sides := make([]*side, len(ftsVariants))
				for k, v := range ftsVariants {
					path := filepath.Join(b.TempDir(), "c.db")
					db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()+
						"?_journal_mode=WAL&_synchronous=FULL&_txlock=immediate&_pragma=temp_store(memory)")
					if err != nil {
						b.Fatal(err)
					}
					db.SetMaxOpenConns(1)
					b.Cleanup(func() { db.Close() })
					for _, q := range []string{ceilingSchema, v.schema} {
						if q != "" {
							if _, err := db.Exec(q); err != nil {
								b.Fatalf("%s: %v", v.name, err)
							}
						}
					}
					s := &side{db: db, k: k}
					if s.ins, err = db.Prepare(`INSERT INTO memories VALUES (?, 'st', ?, ?, 1024, 'h', ?, 1, 1)`); err != nil {
						b.Fatal(err)
					}
					if s.upd, err = db.Prepare(`UPDATE memories SET content = ?, version_id = ?, updated_at = 2 WHERE id = ? AND store_id = 'st'`); err != nil {
						b.Fatal(err)
					}
					if s.ver, err = db.Prepare(`INSERT INTO versions VALUES (?, 'st', ?, 'created', ?, ?, 1024, 'h', 'api_key', 'k', 1)`); err != nil {
						b.Fatal(err)
					}
					sides[k] = s
				}
				// write runs n writes, g per transaction: a create inserts
				// memory i, an update rewrites memory i%preload.
				write := func(s *side, n, g int, create bool) {
					for done := 0; done < n; {
						tx, err := s.db.Begin()
						if err != nil {
							b.Fatal(err)
						}
						for k := 0; k < g && done < n; k++ {
							i := s.next
							s.next++
							done++
							id, vid := fmt.Sprintf("mem_%08d", i), fmt.Sprintf("ver_%08d", i)
							if create {
								_, err = tx.Stmt(s.ins).Exec(id, fmt.Sprintf("/g%d/m%05d.md", i%16, i), texts[i], vid)
							} else {
								id = fmt.Sprintf("mem_%08d", i%preload)
								_, err = tx.Stmt(s.upd).Exec(texts[i], vid, id)
							}
							if err == nil {
								_, err = tx.Stmt(s.ver).Exec(vid, id, "/p", texts[i])
							}
							if err != nil {
								b.Fatal(err)
							}
						}
						if f := ftsVariants[s.k].flush; f != "" {
							if _, err := tx.Exec(f); err != nil {
								b.Fatal(err)
							}
						}
						if err := tx.Commit(); err != nil {
							b.Fatal(err)
						}
					}
				}
				for _, s := range sides {
					write(s, preload, 16, true)
				}
				b.ResetTimer()
				for range b.N * rounds {
					for _, s := range sides {
						t0, c0 := time.Now(), loadgen.ProcessCPU()
						write(s, perRound, group, op == "create")
						s.wall += time.Since(t0)
						s.cpu += loadgen.ProcessCPU() - c0
						s.n += perRound
					}
				}
				b.StopTimer()
				base := float64(sides[0].cpu) / float64(sides[0].n)
				for k, s := range sides {
					name := ftsVariants[k].name
					cpu := float64(s.cpu) / float64(s.n)
					b.ReportMetric(float64(s.n)/s.wall.Seconds(), name+"-ops/s")
					b.ReportMetric(cpu/1e3, name+"-cpu-us")
					b.ReportMetric(100*base/cpu, name+"-%")
				}
			})
		}
	}
}
