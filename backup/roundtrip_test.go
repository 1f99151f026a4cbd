package backup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/backup"
	"github.com/trovehq/trove/cmd/trove/cli"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/internal/racechild"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
	"github.com/trovehq/trove/storage/storagetest"
)

// asTroveEnv, set to 1 in the environment of this test binary, makes it the
// trove command (cmd/trove's main) instead of the tests: TestLongBackupScale
// runs `trove backup` and `trove restore` as processes without building
// trove.
const asTroveEnv = "TROVE_TEST_AS_TROVE"

func TestMain(m *testing.M) {
	if os.Getenv(asTroveEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	racechild.Setenv()
	os.Exit(pgtest.Main(m))
}

func openSQLite(t *testing.T) storage.Driver {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openPostgres(t *testing.T) storage.Driver {
	t.Helper()
	db, err := postgres.Open(context.Background(), pgtest.SchemaURL(t), postgres.Options{AutoMigrate: true, MaxConns: 4})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestBackupAcrossDrivers runs the port's backup conformance with every
// pair of drivers: SQLite to PostgreSQL and back included.
func TestBackupAcrossDrivers(t *testing.T) {
	t.Parallel()
	pgtest.URL(t) // skips, saying why, without PostgreSQL
	storagetest.RunBackup(t,
		storagetest.Opener{Name: "SQLite", Open: openSQLite},
		storagetest.Opener{Name: "PostgreSQL", Open: openPostgres})
}

// clock is core's clock in the build: one second more at every call, so
// every write has its own moment.
type clock struct{ n atomic.Int64 }

var epoch = time.Date(2026, 11, 2, 9, 0, 0, 123456000, time.UTC)

func (c *clock) now() time.Time { return epoch.Add(time.Duration(c.n.Add(1)) * time.Second) }

// frozen is the clock of every read after the build: answers that depend
// on now (a running session's active time, queue stats) are the same.
func frozen() time.Time { return epoch.Add(24 * time.Hour) }

const ws = "wrkspc_default"

// built is what buildDeployment made that a test needs afterwards.
type built struct {
	key, revokedKey string
}

// buildDeployment makes a deployment through core with random histories
// (seeded): stores with memories created, edited, moved, deleted and
// redacted, a fork, an archived store; keys (one revoked); agent-less
// sessions with transcripts and ended ones; an agent with two versions,
// environments with keys, managed sessions with events; dreams.
func buildDeployment(t *testing.T, d storage.Driver, seed uint64) built {
	t.Helper()
	var c clock
	svc := core.New(d, core.Options{Now: c.now})
	ctx := context.Background()
	k, key, err := svc.CreateKey(ctx, ws, "admin")
	if err != nil {
		t.Fatal(err)
	}
	k2, revoked, err := svc.CreateKey(ctx, ws, "old")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RevokeKey(ctx, k2.ID); err != nil {
		t.Fatal(err)
	}
	pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: ws, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"alpha", "bravo", "charlie", "delta", "écho", "foxtrot", "日本", "golf\x00nul", "hotel\n"}
	text := func() string {
		var b strings.Builder
		for range 1 + r.IntN(30) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	var stores []*trove.Store
	kinds := map[string]int{} // operations done, by kind
	for i := range 3 {
		st, err := svc.CreateStore(pctx, trove.CreateStoreParams{Name: fmt.Sprintf("store-%d", i), Description: "random history", Metadata: map[string]string{"i": fmt.Sprint(i)}})
		must(err)
		stores = append(stores, st)
		var live []*trove.Memory
		// 40 random operations a store: every kind below happens (checked
		// after the loop), and the crawl of the result, which reads every
		// store as of every seq, stays a few thousand requests.
		for op := range 40 {
			switch n := r.IntN(10); {
			case len(live) == 0 || n < 4:
				kinds["create"]++
				m, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/d%d/m%03d.md", r.IntN(3), op), Content: text()})
				must(err)
				live = append(live, m)
			case n < 7:
				kinds["update"]++
				j := r.IntN(len(live))
				c := text()
				m, err := svc.UpdateMemory(pctx, st.ID, live[j].ID, trove.UpdateMemoryParams{Content: &c})
				must(err)
				live[j] = m
			case n < 8:
				kinds["move"]++
				j := r.IntN(len(live))
				p := fmt.Sprintf("/moved/m%03d.md", op)
				m, err := svc.UpdateMemory(pctx, st.ID, live[j].ID, trove.UpdateMemoryParams{Path: &p})
				must(err)
				live[j] = m
			case n < 9:
				kinds["delete"]++
				j := r.IntN(len(live))
				must(svc.DeleteMemory(pctx, st.ID, live[j].ID, ""))
				live = append(live[:j], live[j+1:]...)
			default:
				vs, err := svc.ListVersions(pctx, st.ID, trove.ListVersionsParams{Limit: 20})
				must(err)
				if v := vs.Data[r.IntN(len(vs.Data))]; v.RedactedAt == nil && v.Operation != trove.OpDeleted {
					if !isCurrent(live, v.ID) {
						kinds["redact"]++
						_, err := svc.RedactVersion(pctx, st.ID, v.ID)
						must(err)
					}
				}
			}
		}
	}
	for _, k := range []string{"create", "update", "move", "delete", "redact"} {
		if kinds[k] == 0 {
			t.Fatalf("the random histories (seed %d) have no %s: %v", seed, k, kinds)
		}
	}
	_, err = svc.ForkStore(pctx, stores[0].ID, trove.ForkStoreParams{Name: "fork", AsOf: trove.Moment{Seq: 20}})
	must(err)
	_, err = svc.ArchiveStore(pctx, stores[2].ID)
	must(err)

	// Agent-less sessions with transcripts, one ended.
	var sessions []string
	for i := range 2 {
		se, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: stores[0].ID, Instructions: "be brief"}, {StoreID: stores[1].ID, Access: trove.AccessReadOnly}}})
		must(err)
		sessions = append(sessions, se.ID)
		_, err = svc.AppendEvents(pctx, se.ID, []trove.NewSessionEvent{
			{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"hello ` + fmt.Sprint(i) + `"}]}`},
			{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"hi ✓"}]}`},
		})
		must(err)
		if i == 1 {
			_, err = svc.EndSession(pctx, se.ID)
			must(err)
		}
	}
	// Managed Agents: an agent with two versions, environments and keys,
	// managed sessions with events.
	a, err := svc.CreateAgent(pctx, trove.CreateAgentParams{Name: "helper", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"}, Metadata: map[string]string{"team": "x"}})
	must(err)
	sys := "be helpful"
	_, err = svc.UpdateAgent(pctx, a.ID, trove.UpdateAgentParams{Version: 1, System: &sys})
	must(err)
	env, err := svc.CreateEnvironment(pctx, trove.CreateEnvironmentParams{Name: "node", Metadata: map[string]string{"rack": "2"}})
	must(err)
	_, _, err = svc.CreateEnvironmentKey(pctx, env.ID, "worker")
	must(err)
	for i := range 2 {
		se, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{Agent: &trove.AgentRef{ID: a.ID, Version: int64(i + 1)}, EnvironmentID: env.ID,
			Title: fmt.Sprintf("managed %d", i), Metadata: map[string]string{"n": fmt.Sprint(i)}, Stores: []trove.AttachStoreParams{{StoreID: stores[0].ID}}})
		must(err)
		_, err = svc.AppendEvents(pctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"do it"}]}`}})
		must(err)
	}
	_, err = svc.CreateDream(pctx, trove.CreateDreamParams{StoreID: stores[0].ID, SessionIDs: sessions, Model: "claude-sonnet-4-6", Instructions: "tidy"})
	must(err)
	return built{key: key, revokedKey: revoked}
}

func isCurrent(live []*trove.Memory, versionID string) bool {
	for _, m := range live {
		if m.VersionID == versionID {
			return true
		}
	}
	return false
}

var wallClock = regexp.MustCompile(`"duration_seconds":[0-9.e+-]+`)

// answers is every GET the API serves on a deployment, URL → body.
type answers map[string]string

// crawl reads every object of the deployment through the HTTP API, every
// list page by page and every object listed, each store's changes, stats,
// audit, diff and its as-of listing and memories at every seq and at every
// version's time.
func crawl(t *testing.T, d storage.Driver, key string) answers {
	t.Helper()
	svc := core.New(d, core.Options{Now: frozen})
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Events: svc, Dreams: svc, Auth: svc,
		Agents: svc, Environments: svc, Work: svc}))
	defer srv.Close()
	out := answers{}
	get := func(path string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("x-api-key", key)
		req.Header.Set("anthropic-version", "2023-06-01")
		switch {
		case strings.HasPrefix(path, "/v1/memory_stores"):
			req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
		case strings.HasPrefix(path, "/v1/dreams"):
			req.Header.Set("anthropic-beta", httpapi.BetaDreaming)
		case strings.HasPrefix(path, "/v1/"):
			req.Header.Set("anthropic-beta", httpapi.BetaManagedAgents)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		// A live session's duration is counted by httpapi to the wall
		// clock (not core's), so it differs between any two reads.
		out[path] = fmt.Sprintf("%d %s", resp.StatusCode, wallClock.ReplaceAll(b, []byte(`"duration_seconds":"wall clock"`)))
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
			return nil
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return v
	}
	// listField follows every page of a list and returns the items'
	// field (their IDs).
	var listField func(path, field string) []string
	list := func(path string) []string { return listField(path, "id") }
	_ = list
	listField = func(path, field string) []string {
		t.Helper()
		var ids []string
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		page := ""
		for {
			p := path
			if page != "" {
				p += sep + "page=" + url.QueryEscape(page)
			}
			v := get(p)
			if v == nil {
				return ids
			}
			data, _ := v["data"].([]any)
			for _, x := range data {
				if m, ok := x.(map[string]any); ok {
					if id, ok := m[field].(string); ok {
						ids = append(ids, id)
					}
				}
			}
			next, _ := v["next_page"].(string)
			if next == "" {
				return ids
			}
			page = next
		}
	}
	for _, st := range list("/v1/memory_stores?include_archived=true&limit=5") {
		base := "/v1/memory_stores/" + st
		get(base)
		for _, m := range list(base + "/memories?limit=7") {
			get(base + "/memories/" + m)
		}
		var times []string
		for _, v := range list(base + "/memory_versions?limit=9") {
			ver := get(base + "/memory_versions/" + v)
			if at, ok := ver["created_at"].(string); ok {
				times = append(times, at)
			}
		}
		hist := "/trove/v1/memory_stores/" + st
		get(hist + "/stats")
		audit := get(hist + "/audit/verify")
		get(hist + "/changes?after=0&limit=100")
		get(hist + "/diff?from=1&to=now")
		last := 0
		if audit != nil {
			if n, ok := audit["head_seq"].(float64); ok {
				last = int(n)
			}
		}
		if last == 0 || audit["ok"] != true {
			t.Errorf("store %s: audit verify = %v, want ok with a head seq", st, audit)
		}
		moments := times
		for seq := 1; seq <= last; seq++ {
			moments = append(moments, fmt.Sprint(seq))
		}
		for _, at := range moments {
			for _, m := range listField(hist+"/as_of/memories?limit=50&at="+url.QueryEscape(at), "memory_id") {
				get(hist + "/as_of/memory?at=" + url.QueryEscape(at) + "&ref=" + m)
			}
		}
	}
	get("/trove/v1/search?q=alpha&limit=50")
	for _, se := range list("/trove/v1/sessions?limit=3") {
		get("/trove/v1/sessions/" + se)
		list("/trove/v1/sessions/" + se + "/events?limit=1")
	}
	for _, se := range list("/v1/sessions?limit=3") {
		get("/v1/sessions/" + se)
		list("/v1/sessions/" + se + "/events?limit=1")
		list("/v1/sessions/" + se + "/resources")
	}
	for _, dr := range list("/v1/dreams?limit=3") {
		get("/v1/dreams/" + dr)
	}
	for _, a := range list("/v1/agents?limit=3") {
		get("/v1/agents/" + a)
		list("/v1/agents/" + a + "/versions")
	}
	for _, e := range list("/v1/environments?limit=3") {
		get("/v1/environments/" + e)
		list("/trove/v1/environments/" + e + "/keys")
		list("/v1/environments/" + e + "/work")
		get("/v1/environments/" + e + "/work/stats")
	}
	keys, err := svc.ListKeys(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(keys)
	out["core ListKeys"] = string(b)
	return out
}

// backupTo writes a backup of d to a file and returns its path.
func backupTo(t *testing.T, d storage.Driver, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Write(context.Background(), f, d.(storage.Dumper), backup.Options{}); err != nil {
		t.Fatalf("backup.Write: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func restoreFrom(t *testing.T, path string, d storage.Driver) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := backup.Restore(context.Background(), f, d.(storage.Loader), backup.Options{}); err != nil {
		t.Fatalf("backup.Restore: %v", err)
	}
}

// TestRoundTripThroughPostgres: a deployment with random histories,
// backed up from SQLite, restored into PostgreSQL, backed up from there
// and restored into SQLite again, answers every GET of the API with the
// same bytes at every step (same IDs, versions, times, seqs, audit heads,
// as-of reads at every moment), and the last database holds the same rows
// as the first. Search answers are compared between the SQLite databases
// only (relevance scores are each driver's own).
func TestRoundTripThroughPostgres(t *testing.T) {
	t.Parallel()
	pgtest.URL(t)
	first := openSQLite(t)
	b := buildDeployment(t, first, 7)
	want := crawl(t, first, b.key)

	pg := openPostgres(t)
	restoreFrom(t, backupTo(t, first, "sqlite.trove-backup"), pg)
	got := crawl(t, pg, b.key)
	drop := func(a answers) answers {
		out := answers{}
		for k, v := range a {
			if !strings.HasPrefix(k, "/trove/v1/search") {
				out[k] = v
			}
		}
		return out
	}
	if d := cmp.Diff(drop(want), drop(got)); d != "" {
		t.Errorf("PostgreSQL after the restore answers otherwise (-SQLite +PostgreSQL):\n%s", d)
	}

	last := openSQLite(t)
	restoreFrom(t, backupTo(t, pg, "postgres.trove-backup"), last)
	if d := cmp.Diff(want, crawl(t, last, b.key)); d != "" {
		t.Errorf("SQLite after PostgreSQL answers otherwise (-first +last):\n%s", d)
	}
	if d := storagetest.DiffDumps(storagetest.DumpAll(t, first), storagetest.DumpAll(t, last)); d != "" {
		t.Errorf("the rows differ after SQLite → PostgreSQL → SQLite:\n%s", d)
	}
	if len(want) < 300 {
		t.Errorf("the crawl made only %d requests; the deployment is too small to mean much", len(want))
	}
	// Keys are kept as their hashes: the same secrets authenticate (and
	// the revoked one does not).
	for _, d := range []storage.Driver{pg, last} {
		svc := core.New(d, core.Options{Now: frozen})
		if _, err := svc.Authenticate(context.Background(), b.key); err != nil {
			t.Errorf("the key after a restore: %v", err)
		}
		if _, err := svc.Authenticate(context.Background(), b.revokedKey); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
			t.Errorf("the revoked key after a restore: %v, want EUNAUTHENTICATED", err)
		}
	}
	paths := make([]string, 0, len(want))
	for k := range want {
		paths = append(paths, k)
	}
	sort.Strings(paths)
	t.Logf("%d API answers compared, e.g. %s", len(want), strings.Join(paths[:3], ", "))
}
