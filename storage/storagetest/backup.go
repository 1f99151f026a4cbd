package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- whole-deployment backups (storage.Dumper, storage.Loader) ----

// Opener opens a new, empty, migrated driver of one kind (see RunDriver).
type Opener struct {
	Name string
	Open func(t *testing.T) storage.Driver
}

// RunBackup checks storage.Dumper and storage.Loader across drivers: for
// every ordered pair of drivers (each with itself too), a deployment that
// fills every backed-up table (FillDeployment) is dumped from the first
// and loaded into the second, and the second's dump holds the same rows
// (bytes, IDs, seqs, hashes, times), the same derived counters, heads and
// search results; a load into a database that is not empty is refused and
// changes nothing; a load whose source fails lands nothing; a dump is one
// snapshot while writes go on. Each driver's own tests run it with that
// driver alone; a test that opens both runs it with both.
func RunBackup(t *testing.T, drivers ...Opener) {
	t.Helper()
	for _, a := range drivers {
		for _, b := range drivers {
			t.Run(a.Name+"To"+b.Name, func(t *testing.T) {
				t.Parallel()
				testBackupRoundTrip(t, a.Open(t), b.Open(t))
			})
		}
		t.Run(a.Name+"/RefusesNonEmpty", func(t *testing.T) {
			t.Parallel()
			testLoadRefusesNonEmpty(t, a.Open(t), a.Open(t))
		})
		t.Run(a.Name+"/AllOrNothing", func(t *testing.T) {
			t.Parallel()
			testLoadAllOrNothing(t, a.Open(t))
		})
		t.Run(a.Name+"/Snapshot", func(t *testing.T) {
			t.Parallel()
			testDumpSnapshot(t, a.Open(t))
		})
	}
}

// Dump is every row a Dump wrote, table by table, values copied.
type Dump struct {
	Info storage.DumpInfo
	Rows map[string][][]any
}

// Begin and Row make *Dump a storage.DumpWriter.
func (d *Dump) Begin(info storage.DumpInfo) error {
	d.Info, d.Rows = info, map[string][][]any{}
	return nil
}

func (d *Dump) Row(t *storage.BackupTable, row []any) error {
	cp := make([]any, len(row))
	for i, v := range row {
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		if s, ok := v.([]string); ok {
			v = slices.Clone(s)
		}
		cp[i] = v
	}
	d.Rows[t.Name] = append(d.Rows[t.Name], cp)
	return nil
}

// DumpAll dumps d into memory (small test deployments only).
func DumpAll(t *testing.T, d storage.Driver) *Dump {
	t.Helper()
	dm, ok := d.(storage.Dumper)
	if !ok {
		t.Fatalf("%T does not implement storage.Dumper", d)
	}
	out := &Dump{}
	if err := dm.Dump(context.Background(), out); err != nil {
		t.Fatalf("Dump: %v", err)
	}
	for _, tb := range storage.BackupTables {
		if got, want := int64(len(out.Rows[tb.Name])), out.Info.Rows[tb.Name]; got != want {
			t.Errorf("Dump of %s: %d rows, DumpInfo says %d", tb.Name, got, want)
		}
	}
	return out
}

// LoadAll loads src into d.
func LoadAll(ctx context.Context, d storage.Driver, src *Dump) error {
	l, ok := d.(storage.Loader)
	if !ok {
		return fmt.Errorf("%T does not implement storage.Loader", d)
	}
	return l.Load(ctx, func(tx storage.LoadTx) error {
		for i := range storage.BackupTables {
			tb := &storage.BackupTables[i]
			rows := src.Rows[tb.Name]
			k := 0
			n, err := tx.Insert(ctx, tb, func() ([]any, error) {
				if k == len(rows) {
					return nil, io.EOF
				}
				k++
				return rows[k-1], nil
			})
			if err != nil {
				return err
			}
			if n != int64(len(rows)) {
				return fmt.Errorf("insert %s: %d rows, want %d", tb.Name, n, len(rows))
			}
		}
		return nil
	})
}

// sortedRows returns a table's rows ordered by key bytewise (drivers order
// them by their own collation).
func sortedRows(tb *storage.BackupTable, rows [][]any) [][]any {
	var idx []int
	for _, k := range tb.Key {
		idx = append(idx, slices.Index(tb.Names(), k))
	}
	out := slices.Clone(rows)
	slices.SortFunc(out, func(a, b []any) int {
		for _, i := range idx {
			if c := strings.Compare(fmt.Sprint(a[i]), fmt.Sprint(b[i])); c != 0 {
				if x, ok := a[i].(int64); ok {
					y := b[i].(int64)
					if x < y {
						return -1
					}
					return 1
				}
				return c
			}
		}
		return 0
	})
	return out
}

// DiffDumps returns the differences between two dumps' rows, "" when
// there are none.
func DiffDumps(a, b *Dump) string {
	var out []string
	for i := range storage.BackupTables {
		tb := &storage.BackupTables[i]
		if d := cmp.Diff(sortedRows(tb, a.Rows[tb.Name]), sortedRows(tb, b.Rows[tb.Name])); d != "" {
			out = append(out, tb.Name+" (-a +b):\n"+d)
		}
	}
	return strings.Join(out, "\n")
}

// FillDeployment writes rows into every backed-up table through the Tx
// methods (and a console session, which backups leave out), with the
// corners a backup must keep: content with NUL bytes and non-ASCII text,
// empty content, redacted and deleted versions, a fork's origins, a
// history whose oldest versions retention deleted (the seq counter then
// exceeds the versions kept), revoked keys, ended and managed sessions
// with transcripts, dreams, agents with several versions, environments
// with keys, work items and pollers, and leased jobs. It returns the
// workspace's stores.
func FillDeployment(t *testing.T, d storage.Driver) []*trove.Store {
	t.Helper()
	ws := "wrkspc_bk"
	api := &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bk1"}
	s1 := newStore(ws, secs(1))
	s1.Name, s1.Description, s1.Metadata = "notes", "the team's notes", map[string]string{"team": "a", "ünï": "cödé"}
	s2 := newStore(ws, secs(2))
	s2.Name = "fork"
	s3 := newStore("wrkspc_bk2", secs(-200))
	s3.Name = "old"
	for _, s := range []*trove.Store{s1, s2, s3} {
		insertStore(t, d, s)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		s2.ArchivedAt, s2.UpdatedAt = timePtr(secs(50)), secs(50)
		return tx.StoreUpdate(ctx, s2)
	})
	m1, v1 := insertMemory(t, d, s1.ID, "/notes/a.md", "first\x00with a NUL and émoji 🎉", secs(3))
	m2, _ := insertMemory(t, d, s1.ID, "/notes/empty.md", "", secs(4))
	m3, _ := insertMemory(t, d, s1.ID, "/gone.md", "to be deleted", secs(5))
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		c := "second\nversion"
		m1.Path, m1.Content, m1.SizeBytes, m1.SHA256 = "/notes/b.md", &c, len(c), sha(c)
		m1.VersionID, m1.UpdatedAt = trove.NewID(trove.PrefixVersion, secs(6)), secs(6)
		if err := tx.MemoryUpdate(ctx, m1); err != nil {
			return err
		}
		if err := tx.VersionInsert(ctx, &trove.MemoryVersion{ID: m1.VersionID, StoreID: s1.ID, MemoryID: m1.ID, Operation: trove.OpModified,
			Path: &m1.Path, Content: &c, SizeBytes: intPtr(len(c)), SHA256: strPtr(sha(c)), CreatedBy: api, CreatedAt: secs(6)}); err != nil {
			return err
		}
		if err := tx.MemoryDelete(ctx, s1.ID, m3.ID); err != nil {
			return err
		}
		sess := &trove.Actor{Type: trove.ActorSession, SessionID: "sesn_bk"}
		return tx.VersionInsert(ctx, &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, secs(7)), StoreID: s1.ID, MemoryID: m3.ID,
			Operation: trove.OpDeleted, Path: strPtr("/gone.md"), CreatedBy: sess, CreatedAt: secs(7)})
	})
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.VersionRedact(ctx, s1.ID, v1.ID, secs(8), trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bk2"})
	})
	// A fork of m2 into s2, naming its origin.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		m, v := newMemory(s2.ID, "/notes/empty.md", "", secs(9))
		v.Origin = &trove.VersionOrigin{StoreID: s1.ID, VersionID: m2.VersionID}
		return tx.MemoryInsertBatch(ctx, []*trove.Memory{m}, []*trove.MemoryVersion{v})
	})
	// s3: three versions, the two oldest deleted by retention.
	m4, _ := insertMemory(t, d, s3.ID, "/x.md", "x1", secs(-100))
	for i, at := range []int{-90, -80} {
		write(t, d, func(ctx context.Context, tx storage.Tx) error {
			c := fmt.Sprintf("x%d", i+2)
			m4.Content, m4.SizeBytes, m4.SHA256 = &c, len(c), sha(c)
			m4.VersionID, m4.UpdatedAt = trove.NewID(trove.PrefixVersion, secs(at)), secs(at)
			if err := tx.MemoryUpdate(ctx, m4); err != nil {
				return err
			}
			return tx.VersionInsert(ctx, &trove.MemoryVersion{ID: m4.VersionID, StoreID: s3.ID, MemoryID: m4.ID, Operation: trove.OpModified,
				Path: &m4.Path, Content: &c, SizeBytes: intPtr(len(c)), SHA256: strPtr(sha(c)), CreatedBy: api, CreatedAt: secs(at)})
		})
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		n, err := tx.VersionDeleteExpired(ctx, secs(-85))
		if err == nil && n != 2 {
			err = fmt.Errorf("VersionDeleteExpired deleted %d versions, want 2", n)
		}
		return err
	})

	// Keys, sessions and their transcripts, dreams.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i, k := range []*trove.APIKey{
			{ID: "apikey_bk1", WorkspaceID: ws, Name: "first", Hint: "abcd", CreatedAt: secs(1)},
			{ID: "apikey_bk2", WorkspaceID: ws, Name: "second", Hint: "efgh", CreatedAt: secs(2)},
		} {
			if err := tx.KeyInsert(ctx, k, hash(fmt.Sprint("key", i))); err != nil {
				return err
			}
		}
		if err := tx.KeyRevoke(ctx, "apikey_bk2", secs(20)); err != nil {
			return err
		}
		plain := &trove.Session{ID: "sesn_bk", WorkspaceID: ws, CreatedBy: *api, CreatedAt: secs(10), UpdatedAt: secs(10),
			Metadata: map[string]string{}, Status: trove.SessionIdle,
			Stores: []trove.SessionStore{
				{StoreID: s1.ID, Access: trove.AccessReadWrite, Name: "notes", Description: "d", Instructions: "be brief", MountPath: "/mnt/memory/notes"},
				{StoreID: s2.ID, Access: trove.AccessReadOnly, Name: "fork", MountPath: "/mnt/memory/fork"},
			}}
		managed := &trove.Session{ID: "sesn_bkm", WorkspaceID: ws, CreatedBy: *api, CreatedAt: secs(11), UpdatedAt: secs(12),
			Title: "a managed one", Metadata: map[string]string{"k": "v", "z": "ä"}, Status: trove.SessionRunning,
			Managed: &trove.ManagedSession{AgentID: "agent_bk", AgentVersion: 2, EnvironmentID: "env_bk1",
				Usage:         trove.SessionUsage{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 30, CacheCreationInputTokens: 40},
				ActiveSeconds: 1.5, RunningSince: timePtr(secs(12)), Budget: &trove.SessionBudget{Currency: "USD", Amount: "12.50"}}}
		for i, se := range []*trove.Session{plain, managed} {
			if err := tx.SessionInsert(ctx, se, hash(fmt.Sprint("session", i))); err != nil {
				return err
			}
		}
		if err := tx.SessionEnd(ctx, plain.ID, secs(13)); err != nil {
			return err
		}
		var evs []trove.SessionEvent
		for i, typ := range []string{"user.message", "agent.tool_use", "user.tool_confirmation"} {
			ev := trove.SessionEvent{ID: fmt.Sprintf("sevt_bk%d", i), SessionID: managed.ID, Seq: int64(i + 1), Type: typ,
				Body: fmt.Sprintf(`{"content":[{"type":"text","text":"n°%d"}]}`, i), CreatedBy: *api, ProcessedAt: secs(14 + i)}
			if i == 2 {
				ev.RefID = "sevt_bk1"
			}
			evs = append(evs, ev)
		}
		if _, _, err := tx.EventStats(ctx, managed.ID); err != nil {
			return err
		}
		if err := tx.EventInsert(ctx, evs); err != nil {
			return err
		}
		dr := newDream(ws, s1.ID, 15)
		dr.Status, dr.Instructions, dr.SessionIDs = trove.DreamFailed, "tidy up", []string{"sesn_bk", "sesn_bkm"}
		if err := tx.DreamInsert(ctx, dr); err != nil {
			return err
		}
		dr.OutputStoreID, dr.SessionID, dr.EndedAt = s2.ID, "sesn_dream", timePtr(secs(16))
		dr.Error = &trove.DreamError{Type: "runner_lost", Message: "the runner died"}
		dr.Usage = trove.DreamUsage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}
		if err := tx.DreamUpdate(ctx, dr); err != nil {
			return err
		}
		// Its runner still holds its job's lease (the jobs table keeps it).
		if err := tx.JobWake(ctx, storage.JobDream, dr.ID, secs(15)); err != nil {
			return err
		}
		_, err := tx.JobClaim(ctx, storage.JobDream, "node-1", secs(15), secs(17))
		return err
	})

	// A webhook endpoint with one delivered and one pending delivery.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		wh := &trove.Webhook{ID: "whep_bk", WorkspaceID: ws, Name: "ops", URL: "https://hooks.example.com/trove",
			EnabledEvents: []string{"memory_store.created", "trove.memory.updated"}, State: trove.WebhookEnabled, CreatedAt: secs(18), UpdatedAt: secs(18)}
		if err := tx.WebhookInsert(ctx, wh, "whsec_c2VjcmV0LWZvci1iYWNrdXA="); err != nil {
			return err
		}
		sent := &trove.WebhookDelivery{WebhookID: wh.ID, EventID: "whe_bk1", EventType: "memory_store.created", Payload: []byte(`{"type":"event","data":{"id":"x"}}`),
			CreatedAt: secs(18), Status: trove.DeliveryPending, NextAttemptAt: secs(18)}
		if err := tx.DeliveryInsert(ctx, sent); err != nil {
			return err
		}
		sent.Status, sent.Attempts, sent.LastAttemptAt, sent.LastStatus, sent.DeliveredAt = trove.DeliveryDelivered, 1, timePtr(secs(19)), 200, timePtr(secs(19))
		if err := tx.DeliveryUpdate(ctx, sent); err != nil {
			return err
		}
		return tx.DeliveryInsert(ctx, &trove.WebhookDelivery{WebhookID: wh.ID, EventID: "whe_bk2", EventType: "trove.memory.updated", Payload: []byte(`{"ünï":"cödé"}`),
			CreatedAt: secs(19), Status: trove.DeliveryPending, NextAttemptAt: secs(40)})
	})

	// Agents, environments, keys, the work queue, jobs, a console session.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		a := &trove.Agent{ID: "agent_bk", WorkspaceID: ws, Version: 1, Name: "helper", Model: trove.AgentModel{ID: "claude-sonnet-4-6", Speed: "standard", Effort: "high"},
			Metadata: map[string]string{"x": "y"}, CreatedAt: secs(20), UpdatedAt: secs(20),
			Tools: []trove.AgentTool{{Type: trove.ToolCustom, Name: "lookup", Description: "looks up", InputSchema: []byte(`{"type": "object"}`)}}}
		if err := tx.AgentInsert(ctx, a); err != nil {
			return err
		}
		a.Version, a.System, a.UpdatedAt = 2, "be kind", secs(21)
		if err := tx.AgentUpdate(ctx, a, true); err != nil {
			return err
		}
		e1 := &trove.Environment{ID: "env_bk1", WorkspaceID: ws, Name: "self", Type: trove.EnvironmentSelfHosted, Metadata: map[string]string{}, CreatedAt: secs(22), UpdatedAt: secs(22)}
		e2 := &trove.Environment{ID: "env_bk2", WorkspaceID: ws, Name: "other", Description: strPtr(""), Type: trove.EnvironmentSelfHosted, Metadata: map[string]string{"a": "b"},
			CreatedAt: secs(23), UpdatedAt: secs(24), ArchivedAt: timePtr(secs(24))}
		for _, e := range []*trove.Environment{e1, e2} {
			if err := tx.EnvironmentInsert(ctx, e); err != nil {
				return err
			}
		}
		if err := tx.EnvironmentKeyInsert(ctx, &trove.EnvironmentKey{ID: "envkey_bk", WorkspaceID: ws, EnvironmentID: e1.ID, Name: "worker", Hint: "wxyz", CreatedAt: secs(25)}, hash("envkey")); err != nil {
			return err
		}
		if err := tx.EnvironmentKeyRevoke(ctx, "envkey_bk", secs(26)); err != nil {
			return err
		}
		w := &trove.WorkItem{ID: "work_bk", WorkspaceID: ws, EnvironmentID: e1.ID, SessionID: "sesn_bkm", State: trove.WorkQueued,
			Metadata: map[string]string{"m": "n"}, CreatedAt: secs(27), LastHeartbeat: "", LeaseTTL: 30 * time.Second}
		if err := tx.WorkInsert(ctx, w); err != nil {
			return err
		}
		w.State, w.PolledAt, w.AcknowledgedAt, w.StartedAt, w.LatestHeartbeatAt = trove.WorkActive, timePtr(secs(28)), timePtr(secs(28)), timePtr(secs(29)), timePtr(secs(30))
		w.LastHeartbeat, w.LeaseExpiresAt, w.WorkerID, w.Claims = "hb-1", timePtr(secs(60)), "worker-1", 1
		if err := tx.WorkUpdate(ctx, w); err != nil {
			return err
		}
		if err := tx.WorkSetToken(ctx, w.ID, hash("worktoken")); err != nil {
			return err
		}
		if err := tx.WorkPollerSeen(ctx, e1.ID, "worker-1", secs(28)); err != nil {
			return err
		}
		if err := tx.JobWake(ctx, "session_run", "sesn_bkm", secs(31)); err != nil {
			return err
		}
		if err := tx.JobWake(ctx, "session_run", "sesn_other", secs(32)); err != nil {
			return err
		}
		if _, err := tx.JobClaim(ctx, "session_run", "node-1", secs(33), secs(90)); err != nil {
			return err
		}
		return tx.ConsoleSessionInsert(ctx, &storage.ConsoleSession{TokenHash: hash("console"), KeyID: "apikey_bk1", WorkspaceID: ws, CreatedAt: secs(34), ExpiresAt: secs(99)})
	})
	return []*trove.Store{s1, s2, s3}
}

// observe reads what a deployment answers through the port beyond its
// rows: the derived counters, heads and the search index.
func observe(t *testing.T, d storage.Driver, stores []*trove.Store) map[string]any {
	t.Helper()
	out := map[string]any{}
	ctx := context.Background()
	err := storage.ReadSearch(ctx, d, func(tx storage.Tx) error {
		for _, s := range stores {
			st, err := tx.StoreStats(ctx, s.ID)
			if err != nil {
				return err
			}
			seq, head, err := tx.StoreHead(ctx, s.ID)
			if err != nil {
				return err
			}
			out[s.ID+" stats"], out[s.ID+" head"] = st, fmt.Sprint(seq, head)
			n, err := tx.WorkspaceStoreCount(ctx, s.WorkspaceID)
			if err != nil {
				return err
			}
			out[s.WorkspaceID+" stores"] = n
			hits, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: s.WorkspaceID, StoreIDs: []string{s.ID}, Query: mustQuery(t, "version"), Limit: 10})
			if err != nil {
				return err
			}
			var ids []string
			for _, h := range hits {
				ids = append(ids, h.Memory.ID)
			}
			out[s.ID+" search"] = ids
		}
		k, err := tx.KeyGetByHash(ctx, hash("key0"))
		if err != nil {
			return err
		}
		out["key"] = *k
		se, err := tx.SessionGetByTokenHash(ctx, hash("session1"))
		if err != nil {
			return err
		}
		out["session"] = *se
		return nil
	})
	if err != nil {
		t.Fatalf("ReadSearch: %v", err)
	}
	return out
}

func testBackupRoundTrip(t *testing.T, src, dst storage.Driver) {
	stores := FillDeployment(t, src)
	a := DumpAll(t, src)
	for _, tb := range storage.BackupTables {
		if len(a.Rows[tb.Name]) == 0 {
			t.Errorf("FillDeployment left table %s empty: the round trip does not cover it", tb.Name)
		}
	}
	if err := LoadAll(context.Background(), dst, a); err != nil {
		t.Fatalf("Load: %v", err)
	}
	b := DumpAll(t, dst)
	if d := DiffDumps(a, b); d != "" {
		t.Errorf("the loaded database dumps other rows:\n%s", d)
	}
	// EquateEmpty: drivers differ on nil and empty lists in their own
	// results (not in the rows), which is not the backup's doing.
	if d := cmp.Diff(observe(t, src, stores), observe(t, dst, stores), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("the loaded database answers otherwise (-source +loaded):\n%s", d)
	}
	read(t, dst, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.ConsoleSessionGet(ctx, hash("console"))
		wantCode(t, "console session after a load", err, trove.ENOTFOUND)
		return nil
	})
	// The loaded database goes on from where the source was: the next
	// version of s3 takes seq 4 (retention left 1 version of 3), chained
	// to the same head.
	m, v := newMemory(stores[2].ID, "/y.md", "y", secs(40))
	for _, d := range []storage.Driver{src, dst} {
		m, v := *m, *v
		write(t, d, func(ctx context.Context, tx storage.Tx) error {
			if err := tx.MemoryInsert(ctx, &m); err != nil {
				return err
			}
			return tx.VersionInsert(ctx, &v)
		})
		if v.Seq != 4 {
			t.Errorf("the next version after a load has seq %d, want 4", v.Seq)
		}
	}
	read(t, src, func(ctx context.Context, tx storage.Tx) error {
		_, h1, err := tx.StoreHead(ctx, stores[2].ID)
		if err != nil {
			return err
		}
		read(t, dst, func(ctx context.Context, tx storage.Tx) error {
			_, h2, err := tx.StoreHead(ctx, stores[2].ID)
			if err == nil && !bytes.Equal(h1, h2) {
				t.Errorf("after one more version each, heads differ: %x vs %x", h1, h2)
			}
			return err
		})
		return nil
	})
}

func testLoadRefusesNonEmpty(t *testing.T, d, e storage.Driver) {
	FillDeployment(t, d)
	a := DumpAll(t, d)
	err := LoadAll(context.Background(), d, a)
	wantCode(t, "Load into a full database", err, trove.ECONFLICT)
	if diff := DiffDumps(a, DumpAll(t, d)); diff != "" {
		t.Errorf("a refused Load changed the database:\n%s", diff)
	}
	// A console session alone makes a database not empty either.
	write(t, e, func(ctx context.Context, tx storage.Tx) error {
		return tx.ConsoleSessionInsert(ctx, &storage.ConsoleSession{TokenHash: hash("c"), KeyID: "apikey_1", WorkspaceID: "wrkspc_1", CreatedAt: secs(1), ExpiresAt: secs(2)})
	})
	wantCode(t, "Load into a database with a console session", LoadAll(context.Background(), e, a), trove.ECONFLICT)
	if n := len(DumpAll(t, e).Rows["stores"]); n != 0 {
		t.Errorf("a refused Load left %d stores", n)
	}
}

func testLoadAllOrNothing(t *testing.T, d storage.Driver) {
	src := &Dump{Rows: map[string][][]any{}}
	s := newStore("wrkspc_x", secs(1))
	src.Rows["stores"] = [][]any{{s.ID, s.WorkspaceID, "n", "", "{}", secs(1), secs(1), nil}}
	l := d.(storage.Loader)
	boom := errors.New("the source broke")
	err := l.Load(context.Background(), func(tx storage.LoadTx) error {
		k := 0
		_, err := tx.Insert(context.Background(), storage.BackupTableNamed("stores"), func() ([]any, error) {
			if k == 1 {
				return nil, boom
			}
			k++
			return src.Rows["stores"][0], nil
		})
		return err
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Load with a failing source = %v, want its error", err)
	}
	if n := len(DumpAll(t, d).Rows["stores"]); n != 0 {
		t.Fatalf("a failed Load left %d stores", n)
	}
	// A value of the wrong type is refused, and nothing lands either.
	bad := slices.Clone(src.Rows["stores"][0])
	bad[5] = "yesterday"
	err = l.Load(context.Background(), func(tx storage.LoadTx) error {
		k := 0
		_, err := tx.Insert(context.Background(), storage.BackupTableNamed("stores"), func() ([]any, error) {
			if k == 1 {
				return nil, io.EOF
			}
			k++
			return bad, nil
		})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "created_at") {
		t.Errorf("Load of a string time = %v, want an error naming the column", err)
	}
	// After the failures the database is still empty: a good load works.
	if err := LoadAll(context.Background(), d, src); err != nil {
		t.Fatalf("Load after failed ones: %v", err)
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		n, err := tx.WorkspaceStoreCount(ctx, "wrkspc_x")
		if err == nil && n != 1 {
			t.Errorf("WorkspaceStoreCount after a load = %d, want 1", n)
		}
		return err
	})
}

// snapshotWriter writes a store through the driver once the dump began.
type snapshotWriter struct {
	Dump
	d    storage.Driver
	late *trove.Store
	err  error
}

func (w *snapshotWriter) Begin(info storage.DumpInfo) error {
	w.err = w.d.Write(context.Background(), func(tx storage.Tx) error { return tx.StoreInsert(context.Background(), w.late) })
	return w.Dump.Begin(info)
}

func testDumpSnapshot(t *testing.T, d storage.Driver) {
	FillDeployment(t, d)
	w := &snapshotWriter{d: d, late: newStore("wrkspc_bk", secs(70))}
	if err := d.(storage.Dumper).Dump(context.Background(), w); err != nil {
		t.Fatalf("Dump: %v", err)
	}
	if w.err != nil {
		t.Fatalf("a Write during a Dump: %v", w.err)
	}
	for _, row := range w.Rows["stores"] {
		if row[0] == w.late.ID {
			t.Errorf("the dump holds a store written after it began")
		}
	}
	if n := len(w.Rows["stores"]); n != 3 {
		t.Errorf("the dump holds %d stores, want the 3 of its snapshot", n)
	}
	if n := len(DumpAll(t, d).Rows["stores"]); n != 4 {
		t.Errorf("a dump after the write holds %d stores, want 4", n)
	}
}
