package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove/internal/pgtest"
)

// The upgrade test (issue 25): a database made by every schema version
// Trove has shipped, filled through that version's own API with every kind
// of row it had, is upgraded by today's trove and must answer as before.
//
// testdata/upgrade/<version>/ holds, per shipped schema version, what the
// trove built from the newest commit of main at that schema made:
// sqlite.db.gz (its database after the fill, the WAL checkpointed),
// postgres.sql.gz (pg_dump --inserts of its PostgreSQL schema after the same
// fill), api_key-<driver> (the key the fill used, which must still work)
// and expect-<driver>.json (every answer the fill read back from that
// version: stores, memories, versions, sessions and their transcripts).
// Regenerate, from binaries built at those commits (see
// docs/testing.md, "Upgrade test"):
//
//	go test ./cmd/trove/cli -run TestUpgrade -upgrade-generate /tmp/old/bin
var upgradeGenerate = flag.String("upgrade-generate", "", "directory of old trove binaries trove-<version> to regenerate testdata/upgrade from")

const upgradeSrcSchema = "trove_upgrade_src"

// upgradeClient speaks the HTTP API of any Trove version.
type upgradeClient struct {
	t   testing.TB
	url string
	key string
}

// do sends a request and returns the status and body; a transport error
// fails the test.
func (c *upgradeClient) do(method, path string, body any) (int, json.RawMessage) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	beta := "agent-memory-2026-07-22"
	switch {
	case strings.HasPrefix(path, "/v1/dreams"):
		beta = "dreaming-2026-04-21"
	case strings.HasPrefix(path, "/v1/agents"), strings.HasPrefix(path, "/v1/environments"), strings.HasPrefix(path, "/v1/sessions"):
		beta = "managed-agents-2026-04-01"
	}
	req.Header.Set("anthropic-beta", beta)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// must is do, failing the test unless the answer is 200.
func (c *upgradeClient) must(method, path string, body any) map[string]any {
	c.t.Helper()
	code, b := c.do(method, path, body)
	if code != http.StatusOK {
		c.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return m
}

// fillUpgrade makes every kind of row the API of the server at c offers:
// stores (one with metadata, one archived), memories created, updated,
// moved, deleted, a redacted version, agent-less sessions with transcripts
// (when the version has them) and an ended session.
func fillUpgrade(c *upgradeClient) {
	c.t.Helper()
	notes := c.must("POST", "/v1/memory_stores", map[string]any{"name": "notes", "description": "kept across upgrades", "metadata": map[string]string{"team": "core"}})["id"].(string)
	docs := c.must("POST", "/v1/memory_stores", map[string]any{"name": "Team Docs"})["id"].(string)
	old := c.must("POST", "/v1/memory_stores", map[string]any{"name": "old"})["id"].(string)
	mem := func(store, path, content string) string {
		return c.must("POST", "/v1/memory_stores/"+store+"/memories", map[string]any{"path": path, "content": content})["id"].(string)
	}
	a := mem(notes, "/a.md", "alpha\n")
	b := mem(notes, "/dir/b.md", "beta\n")
	cc := mem(notes, "/dir/c.md", "gamma: a secret by mistake\n")
	e := mem(notes, "/e.md", "epsilon\n")
	mem(notes, "/dir/deep/d.md", "delta\n")
	mem(docs, "/x.md", "x\n")
	mem(old, "/gone.md", "in an archived store\n")
	c.must("POST", "/v1/memory_stores/"+notes+"/memories/"+a, map[string]any{"content": "alpha, edited\n"})
	c.must("POST", "/v1/memory_stores/"+notes+"/memories/"+b, map[string]any{"path": "/dir/b2.md"})
	c.must("POST", "/v1/memory_stores/"+notes+"/memories/"+cc, map[string]any{"content": "gamma\n"})
	if code, body := c.do("DELETE", "/v1/memory_stores/"+notes+"/memories/"+e, nil); code != http.StatusOK {
		c.t.Fatalf("delete: %d %s", code, body)
	}
	// The first version of /dir/c.md held a secret: redact it.
	vs := c.must("GET", "/v1/memory_stores/"+notes+"/memory_versions?memory_id="+cc+"&limit=10", nil)["data"].([]any)
	first := vs[len(vs)-1].(map[string]any)["id"].(string)
	c.must("POST", "/v1/memory_stores/"+notes+"/memory_versions/"+first+"/redact", nil)
	c.must("POST", "/v1/memory_stores/"+old+"/archive", nil)

	// Sessions: one open with a transcript (when the version keeps
	// transcripts), one ended.
	s1 := c.must("POST", "/trove/v1/sessions", map[string]any{"resources": []any{
		map[string]any{"type": "memory_store", "memory_store_id": notes, "access": "read_write", "instructions": "keep it short"},
		map[string]any{"type": "memory_store", "memory_store_id": docs, "access": "read_only"},
	}})["id"].(string)
	c.do("POST", "/trove/v1/sessions/"+s1+"/events", map[string]any{"events": []any{
		map[string]any{"type": "user.message", "content": []any{map[string]any{"type": "text", "text": "remember tea"}}},
		map[string]any{"type": "agent.message", "content": []any{map[string]any{"type": "text", "text": "noted"}}},
	}})
	s2 := c.must("POST", "/trove/v1/sessions", map[string]any{"resources": []any{
		map[string]any{"type": "memory_store", "memory_store_id": docs, "access": "read_write"}}})["id"].(string)
	c.must("POST", "/trove/v1/sessions/"+s2+"/end", nil)

	// A dream over the session (versions with dreams), canceled so that no
	// runner touches it later: its row and status stay as made.
	if code, b := c.do("POST", "/v1/dreams", map[string]any{"model": "claude-sonnet-5-5", "inputs": []any{
		map[string]any{"type": "memory_store", "memory_store_id": notes},
		map[string]any{"type": "sessions", "session_ids": []string{s1}},
	}}); code == http.StatusOK {
		var d struct{ ID string }
		json.Unmarshal(b, &d)
		c.must("POST", "/v1/dreams/"+d.ID+"/cancel", nil)
	}
	// Managed Agents (versions with agents): an agent with a second version,
	// a self-hosted environment and a session of both with a store; no
	// event is sent, so the session stays idle and nothing runs.
	if code, b := c.do("POST", "/v1/agents", map[string]any{"name": "helper", "model": "claude-sonnet-5-5", "system": "be brief",
		"tools": []any{map[string]any{"type": "agent_toolset_20260401"}}, "metadata": map[string]string{"k": "v"}}); code == http.StatusOK {
		var ag struct {
			ID      string
			Version int
		}
		json.Unmarshal(b, &ag)
		c.must("POST", "/v1/agents/"+ag.ID, map[string]any{"version": ag.Version, "system": "be briefer"})
		env := c.must("POST", "/v1/environments", map[string]any{"name": "laptop", "config": map[string]any{"type": "self_hosted"}})["id"].(string)
		if code, b := c.do("POST", "/v1/sessions", map[string]any{"agent": ag.ID, "environment_id": env, "title": "kept", "resources": []any{
			map[string]any{"type": "memory_store", "memory_store_id": notes, "access": "read_only"}}}); code != http.StatusOK && code != http.StatusNotFound {
			c.t.Fatalf("POST /v1/sessions: %d %s", code, b)
		}
	}
}

// upgradeSnapshot is every answer the upgrade test compares, keyed by the
// request that gave it.
type upgradeSnapshot map[string]json.RawMessage

// snapshotUpgrade reads every object through the API: the stores (archived
// included), each store's memories and versions (each also by ID), the
// sessions and their transcripts.
func snapshotUpgrade(c *upgradeClient) upgradeSnapshot {
	c.t.Helper()
	snap := upgradeSnapshot{}
	get := func(path string) map[string]any {
		code, b := c.do("GET", path, nil)
		if code != http.StatusOK {
			return nil // this version does not have it
		}
		snap[path] = b
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Fatalf("GET %s: %v", path, err)
		}
		return m
	}
	ids := func(m map[string]any) []string {
		var out []string
		data, _ := m["data"].([]any)
		for _, d := range data {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		return out
	}
	for _, d := range ids(get("/v1/dreams?limit=100")) {
		get("/v1/dreams/" + d)
	}
	for _, a := range ids(get("/v1/agents?limit=100")) {
		get("/v1/agents/" + a)
		get("/v1/agents/" + a + "/versions?limit=100")
	}
	for _, e := range ids(get("/v1/environments?limit=100")) {
		get("/v1/environments/" + e)
	}
	for _, s := range ids(get("/v1/sessions?limit=100")) {
		get("/v1/sessions/" + s)
		get("/v1/sessions/" + s + "/events?limit=100")
	}
	for _, st := range ids(get("/v1/memory_stores?include_archived=true&limit=100")) {
		get("/v1/memory_stores/" + st)
		for _, m := range ids(get("/v1/memory_stores/" + st + "/memories?limit=100")) {
			get("/v1/memory_stores/" + st + "/memories/" + m)
		}
		for _, v := range ids(get("/v1/memory_stores/" + st + "/memory_versions?limit=100")) {
			get("/v1/memory_stores/" + st + "/memory_versions/" + v)
		}
		for _, s := range ids(get("/trove/v1/sessions?memory_store_id=" + st)) {
			get("/trove/v1/sessions/" + s)
			get("/trove/v1/sessions/" + s + "/events?limit=100")
		}
	}
	return snap
}

// upgradeVersionRE names an old binary: trove-<schema version>.
var upgradeVersionRE = regexp.MustCompile(`^trove-(\d{4}[a-z0-9]*)$`)

// startUpgradeServe starts bin serve with args and returns its URL.
func startUpgradeServe(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TROVE_DATA=", "TROVE_URL=", "TROVE_API_KEY=", "TROVE_DATABASE="), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stdout)
			return m[1]
		}
	}
	cmd.Wait()
	t.Fatalf("%s serve printed no address; stderr:\n%s", bin, stderr.String())
	return ""
}

// gzipFile writes src gzipped to dst.
func gzipFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gunzipFile(t testing.TB, src string) []byte {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeUpgradeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pgSchemaURL is base with search_path set to schema.
func pgSchemaURL(t testing.TB, base, schema string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func pgExec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("%v\n%.300s", err, sql)
	}
}

// generateUpgrade runs each old binary in dir over a fresh SQLite and
// PostgreSQL database, fills and snapshots it, and writes testdata/upgrade.
func generateUpgrade(t *testing.T, dir string) {
	pg := pgtest.URL(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m := upgradeVersionRE.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		bin := filepath.Join(dir, e.Name())
		out := filepath.Join("testdata", "upgrade", m[1])
		t.Run(m[1], func(t *testing.T) {
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			// SQLite.
			func() {
				data := t.TempDir()
				url := startUpgradeServe(t, bin, nil, "--data", data)
				key := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(data, "api_key")))))
				c := &upgradeClient{t: t, url: url, key: key}
				fillUpgrade(c)
				writeUpgradeJSON(t, filepath.Join(out, "expect-sqlite.json"), snapshotUpgrade(c))
				os.WriteFile(filepath.Join(out, "api_key-sqlite"), []byte(key+"\n"), 0o644)
				// A copy of the database through SQLite's own backup path
				// (VACUUM INTO) while the server runs: one file, WAL folded.
				vac := filepath.Join(t.TempDir(), "trove.db")
				if out, err := exec.Command("sqlite3", filepath.Join(data, "trove.db"), "VACUUM INTO '"+vac+"'").CombinedOutput(); err != nil {
					t.Fatalf("sqlite3 VACUUM INTO: %v %s", err, out)
				}
				gzipFile(t, vac, filepath.Join(out, "sqlite.db.gz"))
			}()
			// PostgreSQL.
			pgExec(t, pg, "DROP SCHEMA IF EXISTS "+upgradeSrcSchema+" CASCADE; CREATE SCHEMA "+upgradeSrcSchema)
			data := t.TempDir()
			url := startUpgradeServe(t, bin, nil, "--data", data, "--database", pgSchemaURL(t, pg, upgradeSrcSchema))
			// The first start with a database prints no key file on older
			// versions: mint one through the CLI of the same version.
			key := upgradeKey(t, bin, data, pgSchemaURL(t, pg, upgradeSrcSchema))
			c := &upgradeClient{t: t, url: url, key: key}
			fillUpgrade(c)
			writeUpgradeJSON(t, filepath.Join(out, "expect-postgres.json"), snapshotUpgrade(c))
			os.WriteFile(filepath.Join(out, "api_key-postgres"), []byte(key+"\n"), 0o644)
			dump, err := exec.Command("pg_dump", "--schema="+upgradeSrcSchema, "--inserts", "--no-owner", "--no-privileges", pg).Output()
			if err != nil {
				t.Fatalf("pg_dump: %v", err)
			}
			// Plain SQL: pg_dump's psql meta-commands (\\restrict …) dropped.
			dump = regexp.MustCompile(`(?m)^\\.*\n`).ReplaceAll(dump, nil)
			p := filepath.Join(t.TempDir(), "dump.sql")
			os.WriteFile(p, dump, 0o644)
			gzipFile(t, p, filepath.Join(out, "postgres.sql.gz"))
			pgExec(t, pg, "DROP SCHEMA "+upgradeSrcSchema+" CASCADE")
		})
	}
}

// upgradeKey returns an API key of the database: the one serve saved in
// data, else one made with bin keys create.
func upgradeKey(t *testing.T, bin, data, dbURL string) string {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(data, "api_key")); err == nil {
		return strings.TrimSpace(string(b))
	}
	cmd := exec.Command(bin, "keys", "create", "--database", dbURL, "--name", "upgrade")
	cmd.Env = append(os.Environ(), "TROVE_DATA=", "TROVE_URL=", "TROVE_API_KEY=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v %s", err, out)
	}
	k := regexp.MustCompile(`trove_sk_\S+`).FindString(string(out))
	if k == "" {
		t.Fatalf("keys create printed no key: %s", out)
	}
	return k
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestUpgrade upgrades a database of every shipped schema version with
// today's trove (trove migrate, then serve) on both drivers, and checks
// that every answer the old version gave is given again (a field the old
// version had keeps its value; new fields may be added), that the old key
// still works, that audit verify passes on every store, that every version
// is read back as of its own time, and that the stores take writes with
// counters that agree with their listings.
func TestUpgrade(t *testing.T) {
	bin := buildTrove(t)
	if *upgradeGenerate != "" {
		generateUpgrade(t, *upgradeGenerate)
		return
	}
	dirs, err := filepath.Glob(filepath.Join("testdata", "upgrade", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no testdata/upgrade versions: %v", err)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		version := filepath.Base(dir)
		for _, driver := range []string{"sqlite", "postgres"} {
			t.Run(version+"/"+driver, func(t *testing.T) {
				t.Parallel()
				data := t.TempDir()
				var args []string
				switch driver {
				case "sqlite":
					if err := os.WriteFile(filepath.Join(data, "trove.db"), gunzipFile(t, filepath.Join(dir, "sqlite.db.gz")), 0o600); err != nil {
						t.Fatal(err)
					}
					args = []string{"--data", data}
				case "postgres":
					pg := pgtest.URL(t)
					schema := fmt.Sprintf("trove_upgrade_%s_%d", strings.ToLower(version), time.Now().UnixNano())
					dump := strings.ReplaceAll(string(gunzipFile(t, filepath.Join(dir, "postgres.sql.gz"))), upgradeSrcSchema, schema)
					pgExec(t, pg, dump)
					t.Cleanup(func() { pgExec(t, pg, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
					args = []string{"--data", data, "--database", pgSchemaURL(t, pg, schema)}
				}
				// trove migrate, as docs/deploy.md says to upgrade.
				cmd := exec.Command(bin, append([]string{"migrate"}, args...)...)
				cmd.Env = append(os.Environ(), "TROVE_DATA=", "TROVE_URL=", "TROVE_API_KEY=", "TROVE_DATABASE=")
				if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "schema at version") {
					t.Fatalf("trove migrate: %v\n%s", err, out)
				}
				url := startUpgradeServe(t, bin, nil, args...)
				key := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "api_key-"+driver)))))
				c := &upgradeClient{t: t, url: url, key: key}
				var want upgradeSnapshot
				if err := json.Unmarshal(must(os.ReadFile(filepath.Join(dir, "expect-"+driver+".json"))), &want); err != nil {
					t.Fatal(err)
				}
				checkUpgrade(t, c, want)
			})
		}
	}
}

// checkUpgrade compares today's answers with the old version's and checks
// audit, as-of reads and writes.
func checkUpgrade(t *testing.T, c *upgradeClient, want upgradeSnapshot) {
	t.Helper()
	got := snapshotUpgrade(c)
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		g, ok := got[p]
		if !ok {
			t.Errorf("GET %s: answered before the upgrade, not after", p)
			continue
		}
		var w, gv any
		json.Unmarshal(want[p], &w)
		json.Unmarshal(g, &gv)
		if diff := cmp.Diff(w, keepFields(w, gv)); diff != "" {
			t.Errorf("GET %s changed with the upgrade (-before +after):\n%s", p, diff)
		}
	}
	// Every store: the audit passes; every version that has content is
	// read back as of its own time.
	for p, raw := range want {
		if !strings.HasPrefix(p, "/v1/memory_stores?") {
			continue
		}
		var list struct {
			Data []struct {
				ID         string  `json:"id"`
				ArchivedAt *string `json:"archived_at"`
			} `json:"data"`
		}
		json.Unmarshal(raw, &list)
		for _, st := range list.Data {
			audit := c.must("GET", "/trove/v1/memory_stores/"+st.ID+"/audit/verify", nil)
			if ok, _ := audit["ok"].(bool); !ok {
				t.Errorf("audit of %s after the upgrade: %v", st.ID, audit)
			}
			for vp, vraw := range want {
				if !strings.HasPrefix(vp, "/v1/memory_stores/"+st.ID+"/memory_versions/") {
					continue
				}
				var v struct {
					MemoryID  string  `json:"memory_id"`
					Operation string  `json:"operation"`
					Content   *string `json:"content"`
					CreatedAt string  `json:"created_at"`
				}
				json.Unmarshal(vraw, &v)
				if v.Content == nil || v.Operation == "deleted" {
					continue
				}
				q := url.Values{"at": {v.CreatedAt}, "ref": {v.MemoryID}}
				asOf := c.must("GET", "/trove/v1/memory_stores/"+st.ID+"/as_of/memory?"+q.Encode(), nil)
				if asOf["content"] != *v.Content {
					t.Errorf("as of %s, %s reads %q, want %q", v.CreatedAt, v.MemoryID, asOf["content"], *v.Content)
				}
			}
			if st.ArchivedAt != nil {
				continue
			}
			// Writes work, and the stored counters agree with the listing.
			c.must("POST", "/v1/memory_stores/"+st.ID+"/memories", map[string]any{"path": "/after-upgrade.md", "content": "new\n"})
			stats := c.must("GET", "/trove/v1/memory_stores/"+st.ID+"/stats", nil)
			mems := c.must("GET", "/v1/memory_stores/"+st.ID+"/memories?depth=0&limit=100", nil)["data"].([]any)
			if n, _ := stats["memory_count"].(float64); int(n) != len(mems) {
				t.Errorf("store %s: stats count %v memories, the listing %d", st.ID, stats["memory_count"], len(mems))
			}
			bytes := 0
			for _, m := range mems {
				id := m.(map[string]any)["id"].(string)
				full := c.must("GET", "/v1/memory_stores/"+st.ID+"/memories/"+id, nil)
				bytes += len(full["content"].(string))
			}
			if n, _ := stats["content_bytes"].(float64); int(n) != bytes {
				t.Errorf("store %s: stats count %v content bytes, the memories hold %d", st.ID, stats["content_bytes"], bytes)
			}
		}
	}
}

// keepFields returns got with only the object members want has (at every
// depth), so that fields a newer version added do not count as changes.
func keepFields(want, got any) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := map[string]any{}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				out[k] = keepFields(wv, gv)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return got
		}
		out := make([]any, len(g))
		for i := range g {
			out[i] = keepFields(w[i], g[i])
		}
		return out
	}
	return got
}
