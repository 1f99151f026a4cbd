package cli

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage/postgres"
)

// syncBuffer is a goroutine-safe output sink that can wait for text.
type syncBuffer struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{} // closed and replaced on every Write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// waitFor blocks until the output contains substr, or the timeout passes.
func (s *syncBuffer) waitFor(substr string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), substr) {
			s.mu.Unlock()
			return true
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listenRE = regexp.MustCompile(`listening on (https?://[0-9.]+:[0-9]+)`)

// server is a `trove serve` running in this process.
type server struct {
	url    string
	stdout string // everything printed up to the listening line
	cancel context.CancelFunc
	done   chan int
	stderr *syncBuffer
}

// startServe runs `trove serve` in-process on 127.0.0.1:0 and waits for its
// listening line.
func startServe(t *testing.T, args ...string) *server {
	t.Helper()
	return launchServe(t, args...).await(t)
}

// launching is a `trove serve` started in-process whose listening line is
// not read yet.
type launching struct {
	s  *server
	pr *io.PipeReader
}

// launchServe starts `trove serve` in-process on 127.0.0.1:0 and returns
// at once; await waits for its listening line.
func launchServe(t *testing.T, args ...string) launching {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &server{cancel: cancel, done: make(chan int, 1), stderr: &syncBuffer{}}
	go func() {
		s.done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), pw, s.stderr)
		pw.Close()
	}()
	t.Cleanup(func() { s.stop(t) })
	return launching{s, pr}
}

// await reads the server's output up to its listening line (which it must
// print) and keeps draining the rest.
func (l launching) await(t *testing.T) *server {
	t.Helper()
	s := l.s
	sc := bufio.NewScanner(l.pr)
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
			s.url = m[1]
			break
		}
	}
	if s.url == "" {
		s.cancel()
		t.Fatalf("serve did not print its address; stdout:\n%s\nstderr:\n%s", out.String(), s.stderr)
	}
	go io.Copy(io.Discard, l.pr)
	s.stdout = out.String()
	return s
}

// stop cancels the server's context (as SIGTERM would) and returns its exit
// code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop; stderr:\n%s", s.stderr)
		return -1
	}
}

// runTrove runs a CLI command in-process and returns its exit code and output.
func runTrove(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb syncBuffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestServeFirstRunKeysAndRestart(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	// Without the credential cache, a key revoked by another process
	// (trove keys revoke below) is refused at once.
	s := startServe(t, "--data", data, "--auth-cache", "0s")
	keyFile := filepath.Join(data, "api_key")
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatalf("first serve wrote no api_key: %v\nstdout:\n%s", err, s.stdout)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("api_key mode = %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(keyFile)
	key := strings.TrimSpace(string(b))
	if !strings.Contains(s.stdout, key) {
		t.Errorf("the first key is not printed:\n%s", s.stdout)
	}

	ctx := context.Background()
	c := anthropic.NewClient(option.WithBaseURL(s.url), option.WithAPIKey(key))
	st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "CLI"})
	if err != nil {
		t.Fatalf("New via served API: %v", err)
	}
	res, err := http.Get(s.url + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/healthz = %v, %v", res, err)
	}
	res.Body.Close()

	// keys create prints the key alone on its last line; it works while
	// serve runs.
	code, out, errOut := runTrove(t, "keys", "create", "--data", data, "--workspace", "wrkspc_default", "--name", "second")
	if code != 0 {
		t.Fatalf("keys create = %d: %s%s", code, out, errOut)
	}
	second := lastLine(out)
	if !strings.HasPrefix(second, "trove_sk_") || strings.Contains(second, " ") {
		t.Fatalf("keys create last line = %q", second)
	}
	c2 := anthropic.NewClient(option.WithBaseURL(s.url), option.WithAPIKey(second))
	if _, err := c2.Beta.MemoryStores.Get(ctx, st.ID, anthropic.BetaMemoryStoreGetParams{}); err != nil {
		t.Fatalf("second key in the same workspace: %v", err)
	}
	code, out, _ = runTrove(t, "keys", "list", "--data", data)
	if code != 0 || strings.Count(out, "apikey_") != 2 || !strings.Contains(out, "second") || strings.Contains(out, second) {
		t.Fatalf("keys list = %d:\n%s", code, out)
	}
	id := regexp.MustCompile(`apikey_\S+`).FindAllString(out, -1)[1]
	if code, out, errOut := runTrove(t, "keys", "revoke", "--data", data, id); code != 0 {
		t.Fatalf("keys revoke = %d: %s%s", code, out, errOut)
	}
	_, err = c2.Beta.MemoryStores.Get(ctx, st.ID, anthropic.BetaMemoryStoreGetParams{})
	var apierr *anthropic.Error
	if !errors.As(err, &apierr) || apierr.StatusCode != 401 {
		t.Errorf("revoked key = %v, want 401", err)
	}
	if code, _, errOut := runTrove(t, "keys", "revoke", "--data", data, "apikey_nope"); code != 3 || !strings.Contains(errOut, "no API key with ID or name \"apikey_nope\"") {
		t.Errorf("revoke unknown key = %d %q", code, errOut)
	}

	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exit code %d; stderr:\n%s", code, s.stderr)
	}
	// A restart on the same data keeps the data and creates no new key.
	s2 := startServe(t, "--data", data)
	if strings.Contains(s2.stdout, "created API key") {
		t.Errorf("second serve created a key:\n%s", s2.stdout)
	}
	c = anthropic.NewClient(option.WithBaseURL(s2.url), option.WithAPIKey(key))
	if got, err := c.Beta.MemoryStores.Get(ctx, st.ID, anthropic.BetaMemoryStoreGetParams{}); err != nil || got.Name != "CLI" {
		t.Errorf("store after restart = %v, %v", got, err)
	}
}

func TestServeGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startServe(t, "--data", data)
	b, _ := os.ReadFile(filepath.Join(data, "api_key"))
	key := strings.TrimSpace(string(b))
	// A request whose handler is reading its body is in flight. With
	// Expect: 100-continue the server says so (the 100 arrives when the
	// handler first reads the body); the body follows only after shutdown
	// has begun.
	pr, pw := io.Pipe()
	gotContinue := make(chan struct{})
	trace := &httptrace.ClientTrace{Got100Continue: func() { close(gotContinue) }}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", s.url+"/v1/memory_stores", pr)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("anthropic-beta", "agent-memory-2026-07-22")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	type result struct {
		status int
		err    error
	}
	got := make(chan result, 1)
	go func() {
		res, err := client.Do(req)
		if err != nil {
			got <- result{0, err}
			return
		}
		res.Body.Close()
		got <- result{res.StatusCode, nil}
	}()
	select {
	case <-gotContinue:
	case r := <-got:
		t.Fatalf("request ended before its body was sent: %+v", r)
	}
	stopped := make(chan int, 1)
	go func() { stopped <- s.stop(t) }()
	// Shutdown closes the listener first: once new connections are
	// refused, the request is in flight during the shutdown.
	if !s.stderr.waitFor("shutting down", 10*time.Second) {
		t.Fatalf("no shutdown log line; stderr:\n%s", s.stderr)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := http.Get(s.url + "/healthz")
		if err != nil {
			break
		}
		res.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("server still accepts connections after shutdown began")
		}
	}
	if _, err := pw.Write([]byte(`{"name":"late"}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-got
	if r.err != nil || r.status != 200 {
		t.Errorf("in-flight request = %d, %v; want 200; stderr:\n%s", r.status, r.err, s.stderr)
	}
	if code := <-stopped; code != 0 {
		t.Errorf("serve exit code %d", code)
	}
}

func TestMigrateAndNewerSchema(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	code, out, errOut := runTrove(t, "migrate", "--data", data)
	if code != 0 || !regexp.MustCompile(`schema at version (\d+) \(this trove knows (\d+)\)`).MatchString(out) {
		t.Fatalf("migrate = %d %q %q", code, out, errOut)
	}
	m := regexp.MustCompile(`version (\d+) \(this trove knows (\d+)\)`).FindStringSubmatch(out)
	if m[1] != m[2] {
		t.Errorf("after migrate: %s", out)
	}
	// A schema from a newer trove: serve and migrate refuse it.
	db, err := sql.Open("sqlite", filepath.Join(data, "trove.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0", "--data", data}, {"migrate", "--data", data}} {
		code, _, errOut := runTrove(t, args...)
		if code == 0 || !strings.Contains(errOut, "newer") {
			t.Errorf("%v on a newer schema = %d %q, want a refusal", args[0], code, errOut)
		}
	}
	if code, _, errOut := runTrove(t, "migrate", "--database", "mysql://x"); code == 0 || !strings.Contains(errOut, "postgres://") {
		t.Errorf("migrate --database mysql:// = %d %q", code, errOut)
	}
}

func TestDefaultDataDir(t *testing.T) {
	home, _ := os.UserHomeDir()
	cases := []struct {
		troveData, xdg, want string
	}{
		{"/srv/trove", "/xdg", "/srv/trove"},
		{"", "/xdg", "/xdg/trove"},
		{"", "", filepath.Join(home, ".local", "share", "trove")},
	}
	for _, tc := range cases {
		t.Setenv("TROVE_DATA", tc.troveData)
		t.Setenv("XDG_DATA_HOME", tc.xdg)
		if got := defaultDataDir(); got != tc.want {
			t.Errorf("TROVE_DATA=%q XDG_DATA_HOME=%q: %q, want %q", tc.troveData, tc.xdg, got, tc.want)
		}
	}
}

// TestServePostgres serves from the test PostgreSQL (pgtest.URL); it fails
// when the database is unreachable.
func TestServePostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.SchemaURL(t)
	ws := fmt.Sprintf("wrkspc_clitest_%d", rand.Int64())
	code, out, errOut := runTrove(t, "keys", "create", "--database", url, "--workspace", ws)
	if code != 0 {
		t.Fatalf("keys create on PostgreSQL = %d: %s%s", code, out, errOut)
	}
	key := lastLine(out)
	s := startServe(t, "--database", url, "--data", t.TempDir())
	ctx := context.Background()
	c := anthropic.NewClient(option.WithBaseURL(s.url), option.WithAPIKey(key))
	st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "pg"})
	if err != nil {
		t.Fatalf("New on PostgreSQL: %v", err)
	}
	defer c.Beta.MemoryStores.Delete(ctx, st.ID, anthropic.BetaMemoryStoreDeleteParams{})
	m, err := c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/a", Content: anthropic.String("pg")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Beta.MemoryStores.Memories.Get(ctx, m.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: st.ID})
	if err != nil || got.Content != "pg" {
		t.Fatalf("Get on PostgreSQL = %v, %v", got, err)
	}
}

// TestServePostgresFirstRunOneKey: nodes starting together on one empty
// PostgreSQL database make one first API key between them; the node that
// made it prints and saves it, the others print nothing about a key, and
// it works on every node.
func TestServePostgresFirstRunOneKey(t *testing.T) {
	t.Parallel()
	url := pgtest.SchemaURL(t)
	const nodes = 3
	data := make([]string, nodes)
	ls := make([]launching, nodes)
	for i := range ls {
		data[i] = t.TempDir()
		ls[i] = launchServe(t, "--database", url, "--data", data[i])
	}
	var creators []int
	var key string
	servers := make([]*server, nodes)
	for i, l := range ls {
		servers[i] = l.await(t)
		b, err := os.ReadFile(filepath.Join(data[i], "api_key"))
		saved := err == nil
		if printed := strings.Contains(servers[i].stdout, "API key"); printed != saved {
			t.Errorf("node %d: printed a key %v, saved one %v (%v); stdout:\n%s", i, printed, saved, err, servers[i].stdout)
		}
		if saved {
			creators = append(creators, i)
			key = strings.TrimSpace(string(b))
			if want := "trove: created API key "; !strings.Contains(servers[i].stdout, want) || !strings.Contains(servers[i].stdout, "\n"+key+"\n") {
				t.Errorf("node %d saved %q but printed:\n%s", i, key, servers[i].stdout)
			}
		}
	}
	if len(creators) != 1 {
		t.Fatalf("nodes %v made a first key; want exactly one", creators)
	}
	for i, s := range servers {
		c := anthropic.NewClient(option.WithBaseURL(s.url), option.WithAPIKey(key))
		if _, err := c.Beta.MemoryStores.List(context.Background(), anthropic.BetaMemoryStoreListParams{}); err != nil {
			t.Errorf("node %d with the first key: %v", i, err)
		}
	}
	code, out, errOut := runTrove(t, "keys", "list", "--database", url)
	if code != 0 || strings.Count(out, "apikey_") != 1 {
		t.Errorf("keys list = %d: %s%s; want one key", code, out, errOut)
	}
}

// TestLongCrashKeepsAcknowledgedWrites builds trove, serves from a child
// process, SIGKILLs it during a write load, restarts it on the same data
// and checks that every acknowledged write and its version survived.
func TestLongCrashKeepsAcknowledgedWrites(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	bin := buildTrove(t)
	data := filepath.Join(t.TempDir(), "data")
	start := func() (*exec.Cmd, string) { return startServeProcess(t, bin, data) }
	cmd, url := start()
	b, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	ctx := context.Background()
	c := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey(key), option.WithMaxRetries(0))
	st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}

	type ack struct{ id, path, content, version string }
	var mu sync.Mutex
	var acks []ack
	const writers = 6
	var wg sync.WaitGroup
	killAfter := make(chan struct{})
	var once sync.Once
	for w := range writers {
		wg.Go(func() {
			var memID string
			for i := 0; ; i++ {
				content := fmt.Sprintf("writer %d write %d", w, i)
				var m *anthropic.BetaManagedAgentsMemory
				var err error
				if memID == "" {
					m, err = c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: fmt.Sprintf("/w%d.md", w), Content: anthropic.String(content)})
				} else {
					m, err = c.Beta.MemoryStores.Memories.Update(ctx, memID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: st.ID, Content: anthropic.String(content)})
				}
				if err != nil {
					return // the server died (or the write was refused): stop
				}
				memID = m.ID
				mu.Lock()
				acks = append(acks, ack{m.ID, m.Path, content, m.MemoryVersionID})
				if len(acks) >= 60 {
					once.Do(func() { close(killAfter) })
				}
				mu.Unlock()
			}
		})
	}
	select {
	case <-killAfter:
	case <-time.After(20 * time.Second):
		t.Fatal("write load too slow")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	wg.Wait()

	cmd2, url2 := start()
	defer func() { cmd2.Process.Signal(syscall.SIGTERM); cmd2.Wait() }()
	c = anthropic.NewClient(option.WithBaseURL(url2), option.WithAPIKey(key))
	latest := map[string]ack{}
	for _, a := range acks {
		latest[a.id] = a // acks of one writer are in order
		v, err := c.Beta.MemoryStores.MemoryVersions.Get(ctx, a.version, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: st.ID})
		if err != nil {
			t.Errorf("acknowledged version %s (%q) lost: %v", a.version, a.content, err)
			continue
		}
		if v.Content != a.content || v.MemoryID != a.id {
			t.Errorf("version %s = %q of %s, acknowledged %q of %s", a.version, v.Content, v.MemoryID, a.content, a.id)
		}
	}
	for id, a := range latest {
		m, err := c.Beta.MemoryStores.Memories.Get(ctx, id, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: st.ID})
		if err != nil {
			t.Errorf("memory %s lost: %v", id, err)
			continue
		}
		// The memory holds the last acknowledged write or a later one that
		// committed before the kill but was never acknowledged.
		if m.MemoryVersionID < a.version {
			t.Errorf("memory %s at version %s, older than acknowledged %s", id, m.MemoryVersionID, a.version)
		}
	}
	if diff := cmp.Diff(writers, len(latest)); diff != "" {
		t.Errorf("writers with acknowledged writes (-want +got):\n%s", diff)
	}
	t.Logf("%d acknowledged writes survived kill -9", len(acks))
}

// TestServeAuthCacheDefault: serve caches verified credentials by default
// (its help says how long and what that means for revocation), and a
// session ended through the server is refused on the very next request.
// The cross-process window is tested with an injected clock in core.
func TestServeAuthCacheDefault(t *testing.T) {
	t.Parallel()
	code, out, _ := runTrove(t, "serve", "--help")
	for _, want := range []string{"--auth-cache duration", "(default 2s)", "refused at once", "trove keys revoke"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	if code, _, errOut := runTrove(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--auth-cache", "-1s"); code == 0 || !strings.Contains(errOut, "--auth-cache") {
		t.Errorf("negative --auth-cache = %d %q, want a usage error", code, errOut)
	}

	data := t.TempDir()
	s := startServe(t, "--data", data)
	b, _ := os.ReadFile(filepath.Join(data, "api_key"))
	ctx := context.Background()
	admin := httpapi.NewClient(s.url, strings.TrimSpace(string(b)))
	st, err := admin.CreateStore(ctx, trove.CreateStoreParams{Name: "cache"})
	if err != nil {
		t.Fatal(err)
	}
	sess, token, err := admin.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	agent := httpapi.NewClient(s.url, token)
	for range 2 { // the second one is served from the cache
		if _, err := agent.GetStore(ctx, st.ID); err != nil {
			t.Fatalf("session token: %v", err)
		}
	}
	if _, err := admin.EndSession(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.GetStore(ctx, st.ID); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
		t.Errorf("session ended through this server = %v, want EUNAUTHENTICATED at once", err)
	}
}

// TestServeLimitFlagsRefused: every bad limit is refused before serve
// opens anything, with the flag or environment variable at fault named.
func TestServeLimitFlagsRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"zero memories", []string{"--max-memories", "0"}, nil, "--max-memories must be a positive integer, got 0"},
		{"negative memories", []string{"--max-memories", "-3"}, nil, "--max-memories must be a positive integer, got -3"},
		{"zero content", []string{"--max-content-bytes", "0"}, nil, "--max-content-bytes must be a positive integer, got 0"},
		{"huge content", []string{"--max-content-bytes", "1000000000"}, nil, "--max-content-bytes must be at most 67108864, got 1000000000"},
		{"zero pairs", []string{"--max-metadata-pairs", "0"}, nil, "--max-metadata-pairs must be a positive integer, got 0"},
		{"zero stores", []string{"--max-stores-per-workspace", "0"}, nil, "--max-stores-per-workspace must be a positive integer, got 0"},
		{"negative store bytes", []string{"--max-store-bytes", "-1"}, nil, "--max-store-bytes must be a positive integer, got -1"},
		{"env versions", nil, map[string]string{"TROVE_MAX_VERSIONS_PER_STORE": "many"}, `TROVE_MAX_VERSIONS_PER_STORE must be a positive integer, got "many"`},
		{"zero retention", []string{"--version-retention", "0s"}, nil, "--version-retention must be a positive duration such as 720h, got 0s"},
		{"negative retention", []string{"--version-retention", "-1h"}, nil, "--version-retention must be a positive duration such as 720h, got -1h0m0s"},
		{"env text", nil, map[string]string{"TROVE_MAX_MEMORIES_PER_STORE": "lots"}, `TROVE_MAX_MEMORIES_PER_STORE must be a positive integer, got "lots"`},
		{"env zero", nil, map[string]string{"TROVE_MAX_MEMORIES_PER_STORE": "0"}, "TROVE_MAX_MEMORIES_PER_STORE must be a positive integer, got 0"},
		{"env content", nil, map[string]string{"TROVE_MAX_CONTENT_BYTES": "-1"}, "TROVE_MAX_CONTENT_BYTES must be a positive integer, got -1"},
		{"env retention days", nil, map[string]string{"TROVE_VERSION_RETENTION": "30d"}, `TROVE_VERSION_RETENTION must be a positive duration such as 720h, got "30d"`},
		{"env retention negative", nil, map[string]string{"TROVE_VERSION_RETENTION": "-5m"}, "TROVE_VERSION_RETENTION must be a positive duration such as 720h, got -5m0s"},
		{"flag beats a bad env", []string{"--max-memories", "0"}, map[string]string{"TROVE_MAX_MEMORIES_PER_STORE": "5"}, "--max-memories must be a positive integer, got 0"},
		{"negative pool", []string{"--db-max-conns", "-1"}, nil, "--db-max-conns must be a non-negative integer (0: the URL's pool_max_conns or 8), got -1"},
		{"pool overflow", []string{"--db-max-conns", "4294967296"}, nil, "--db-max-conns must be a non-negative integer"},
		{"env pool text", nil, map[string]string{"TROVE_DB_MAX_CONNS": "many"}, `TROVE_DB_MAX_CONNS must be a non-negative integer (0: the URL's pool_max_conns or 8), got "many"`},
		{"negative connect timeout", []string{"--db-connect-timeout", "-1s"}, nil, "--db-connect-timeout must be a non-negative duration such as 5s (0: the URL's connect_timeout or 5s), got -1s"},
		{"zero write timeout", []string{"--write-timeout", "0s"}, nil, "--write-timeout must be a positive duration such as 30s, got 0s"},
		{"negative body timeout", []string{"--body-timeout", "-1s"}, nil, "--body-timeout must be a positive duration such as 30s, got -1s"},
		{"zero header timeout", []string{"--read-header-timeout", "0"}, nil, "--read-header-timeout must be a positive duration such as 30s, got 0s"},
		{"zero idle timeout", []string{"--idle-timeout", "0s"}, nil, "--idle-timeout must be a positive duration such as 30s, got 0s"},
		{"negative lock timeout", []string{"--db-lock-timeout", "-1s"}, nil, "--db-lock-timeout must be a non-negative duration such as 5s (0: the URL's lock_timeout or 10s), got -1s"},
		{"env statement timeout text", nil, map[string]string{"TROVE_DB_STATEMENT_TIMEOUT": "soon"}, `TROVE_DB_STATEMENT_TIMEOUT must be a non-negative duration such as 5s (0: the URL's statement_timeout or 20s), got "soon"`},
		{"env idle timeout negative", nil, map[string]string{"TROVE_DB_IDLE_IN_TRANSACTION_TIMEOUT": "-2s"}, "TROVE_DB_IDLE_IN_TRANSACTION_TIMEOUT must be a non-negative duration such as 5s (0: 5s), got -2s"},
		{"negative tcp timeout", []string{"--db-tcp-timeout", "-1s"}, nil, "--db-tcp-timeout must be a non-negative duration such as 5s (0: 20s), got -1s"},
		{"zero request timeout", []string{"--request-timeout", "0s"}, nil, "--request-timeout must be a positive duration such as 30s, got 0s"},
		{"env request timeout negative", nil, map[string]string{"TROVE_REQUEST_TIMEOUT": "-1s"}, "TROVE_REQUEST_TIMEOUT must be a positive duration such as 30s, got -1s"},
		{"request timeout within the settle time", []string{"--database", "postgres://u@127.0.0.1:1/db", "--request-timeout", "3s", "--db-idle-in-transaction-timeout", "2s"}, nil, "--request-timeout (3s) must be more than --db-idle-in-transaction-timeout (2s) plus 1s"},
		{"env connect timeout text", nil, map[string]string{"TROVE_DB_CONNECT_TIMEOUT": "5"}, `TROVE_DB_CONNECT_TIMEOUT must be a non-negative duration such as 5s (0: the URL's connect_timeout or 5s), got "5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			// Should serve start by mistake, the timeout stops it with
			// exit code 0, which fails the test.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb syncBuffer
			args := append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, tt.args...)
			code := run(ctx, args, strings.NewReader(""), &out, &errb)
			if code == 0 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("serve %v = %d, stderr %q, want an error containing %q", tt.args, code, errb.String(), tt.want)
			}
			if strings.Contains(out.String(), "listening") {
				t.Errorf("serve %v started:\n%s", tt.args, out.String())
			}
		})
	}

	code, out, _ := runTrove(t, "serve", "--help")
	for _, want := range []string{
		"--max-memories int", "(env TROVE_MAX_MEMORIES_PER_STORE) (default 10000)",
		"--max-content-bytes int", "(env TROVE_MAX_CONTENT_BYTES) (default 102400)",
		"--version-retention duration", "(env TROVE_VERSION_RETENTION) (default 720h0m0s)",
		"--max-stores-per-session int", "(default 8)",
		"--max-stores-per-workspace int", "(env TROVE_MAX_STORES_PER_WORKSPACE) (default 1000)",
		"--max-store-bytes int", "(env TROVE_MAX_STORE_BYTES) (default 104857600)",
		"--max-versions-per-store int", "(env TROVE_MAX_VERSIONS_PER_STORE) (default 250000)",
		"--db-max-conns int", "(env TROVE_DB_MAX_CONNS)", "--db-connect-timeout duration", "(env TROVE_DB_CONNECT_TIMEOUT)",
		"--read-header-timeout duration", "(default 10s)", "--body-timeout duration", "--write-timeout duration", "(default 1m0s)",
		"--idle-timeout duration", "(default 2m0s)", "unencrypted HTTP/2",
		"--request-timeout duration", "(env TROVE_REQUEST_TIMEOUT) (default 30s)",
		"--db-statement-timeout duration", "(env TROVE_DB_STATEMENT_TIMEOUT)", "--db-lock-timeout duration", "(env TROVE_DB_LOCK_TIMEOUT)",
		"--db-idle-in-transaction-timeout duration", "(env TROVE_DB_IDLE_IN_TRANSACTION_TIMEOUT)", "--db-tcp-timeout duration", "(env TROVE_DB_TCP_TIMEOUT)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

// TestServeTimeoutFlags: --body-timeout reaches the running server (a
// trickling body gets 408 at it), and the server speaks HTTP/1.1 and
// unencrypted HTTP/2 on one port.
func TestServeTimeoutFlags(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	s := startServe(t, "--data", data, "--body-timeout", "300ms", "--write-timeout", "5s")
	b, _ := os.ReadFile(filepath.Join(data, "api_key"))
	key := strings.TrimSpace(string(b))
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	fmt.Fprintf(c, "POST /v1/memory_stores HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\nanthropic-beta: agent-memory-2026-07-22\r\n"+
		"Content-Type: application/json\r\nContent-Length: 50\r\n\r\n{\"na", key)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to a trickling body: %v", err)
	}
	res.Body.Close()
	if took := time.Since(start); res.StatusCode != http.StatusRequestTimeout || took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("trickling body: %d after %s, want 408 after --body-timeout 300ms", res.StatusCode, took)
	}

	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Transport: &http.Transport{Protocols: &protos}}
	res, err = h2.Get(s.url + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over unencrypted HTTP/2: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.ProtoMajor != 2 {
		t.Errorf("GET /healthz over unencrypted HTTP/2: %d %s", res.StatusCode, res.Proto)
	}
}

// TestServeLimitFlags: --max-memories, --max-content-bytes and
// --version-retention (and their environment variables, which a flag
// overrides) reach both core and the HTTP edge of a running serve.
func TestServeLimitFlags(t *testing.T) {
	data := t.TempDir()
	t.Setenv("TROVE_MAX_MEMORIES_PER_STORE", "7") // the flag wins
	s := startServe(t, "--data", data, "--max-memories", "2", "--max-content-bytes", "200000")
	b, _ := os.ReadFile(filepath.Join(data, "api_key"))
	key := strings.TrimSpace(string(b))
	ctx := context.Background()
	c := anthropic.NewClient(option.WithBaseURL(s.url), option.WithAPIKey(key))
	st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "limits"})
	if err != nil {
		t.Fatal(err)
	}
	create := func(c anthropic.Client, path string) (*anthropic.BetaManagedAgentsMemory, error) {
		return c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: path, Content: anthropic.String(path)})
	}
	wantLimit := func(err error, what string) {
		t.Helper()
		var apierr *anthropic.Error
		if !errors.As(err, &apierr) || apierr.StatusCode != 400 || string(apierr.Type()) != "invalid_request_error" {
			t.Fatalf("%s = %v, want 400 invalid_request_error", what, err)
		}
	}
	a, err := create(c, "/a")
	if err != nil {
		t.Fatal(err)
	}
	bm, err := create(c, "/b")
	if err != nil {
		t.Fatal(err)
	}
	_, err = create(c, "/c")
	wantLimit(err, "third create past --max-memories 2")
	if _, err := c.Beta.MemoryStores.Memories.Update(ctx, a.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: st.ID, Content: anthropic.String("edited")}); err != nil {
		t.Fatalf("update at the limit: %v", err)
	}
	if _, err := c.Beta.MemoryStores.Memories.Delete(ctx, bm.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: st.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := create(c, "/c"); err != nil {
		t.Fatalf("create after a delete freed a slot: %v", err)
	}

	// --max-content-bytes 200000: a maximal memory sent with every byte
	// escaped (1.2 MB, above httpapi's default body bound) is accepted, one
	// byte more is a 400 from core, not a 413.
	big, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	post := func(n int) (int, string) {
		t.Helper()
		body := `{"path":"/big","content":"` + strings.Repeat(`\u003c`, n) + `"}`
		req, _ := http.NewRequest("POST", s.url+"/v1/memory_stores/"+big.ID+"/memories", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		rb, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(rb)
	}
	if code, body := post(200001); code != 400 || !strings.Contains(body, "invalid_request_error") {
		t.Errorf("content of 200001 bytes = %d %s, want 400 invalid_request_error", code, body)
	}
	if code, body := post(200000); code != 200 {
		t.Errorf("content of 200000 escaped bytes = %d %.300s, want 200", code, body)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exit code %d; stderr:\n%s", code, s.stderr)
	}

	// The environment applies when the flags are not given. Retention runs
	// at start: with 1ns every version but the current ones goes (/a's
	// create, /b's create and delete).
	t.Setenv("TROVE_MAX_MEMORIES_PER_STORE", "3")
	t.Setenv("TROVE_VERSION_RETENTION", "1ns")
	s = startServe(t, "--data", data)
	if !s.stderr.waitFor(`msg="core: purged expired memory versions" count=3 `, 20*time.Second) {
		t.Fatalf("retention with TROVE_VERSION_RETENTION=1ns did not purge 3 versions; stderr:\n%s", s.stderr)
	}
	c = anthropic.NewClient(option.WithBaseURL(s.url), option.WithAPIKey(key))
	var kept []string
	it := c.Beta.MemoryStores.MemoryVersions.ListAutoPaging(ctx, st.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{})
	for it.Next() {
		v := it.Current()
		kept = append(kept, string(v.Operation)+":"+v.Path)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"created:/c", "modified:/a"}, kept); diff != "" {
		t.Errorf("versions after retention (-want +got):\n%s", diff)
	}
	if _, err := create(c, "/d"); err != nil {
		t.Fatalf("third create under TROVE_MAX_MEMORIES_PER_STORE=3: %v", err)
	}
	_, err = create(c, "/e")
	wantLimit(err, "fourth create past TROVE_MAX_MEMORIES_PER_STORE=3")
}

// TestServePostgresPoolSettings: the pool takes --db-max-conns and
// --db-connect-timeout (or their environment variables) over the URL's
// pool_max_conns and connect_timeout, and those over the defaults.
func TestServePostgresPoolSettings(t *testing.T) {
	url := pgtest.SchemaURL(t)
	u3 := url + "&pool_max_conns=3&connect_timeout=7"
	if !strings.Contains(url, "?") {
		u3 = url + "?pool_max_conns=3&connect_timeout=7"
	}
	ctx := context.Background()
	tests := []struct {
		name    string
		url     string
		dbo     dbOptions
		max     int32
		timeout time.Duration
	}{
		{"defaults", url, dbOptions{}, postgres.DefaultMaxConns, postgres.DefaultConnectTimeout},
		{"URL", u3, dbOptions{}, 3, 7 * time.Second},
		{"options over URL", u3, dbOptions{maxConns: 6, connectTimeout: 2 * time.Second}, 6, 2 * time.Second},
	}
	for _, tt := range tests {
		b, err := openBackendWith(ctx, t.TempDir(), tt.url, true, core.Options{}, tt.dbo)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		pc := b.driver.(*postgres.DB).Pool().Config()
		got, gotT := pc.MaxConns, pc.ConnConfig.ConnectTimeout
		b.close()
		if got != tt.max || gotT != tt.timeout {
			t.Errorf("%s: pool of %d, connect timeout %s; want %d, %s", tt.name, got, gotT, tt.max, tt.timeout)
		}
	}

	// Through serve: the flag, then the environment, over the URL.
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"URL", []string{"--database", u3}, nil, "max_conns=3 connect_timeout=7s"},
		{"flags over env and URL", []string{"--database", u3, "--db-max-conns", "5", "--db-connect-timeout", "3s"}, map[string]string{"TROVE_DB_MAX_CONNS": "9"}, "max_conns=5 connect_timeout=3s"},
		{"env over URL", []string{"--database", u3}, map[string]string{"TROVE_DB_MAX_CONNS": "4", "TROVE_DB_CONNECT_TIMEOUT": "4s"}, "max_conns=4 connect_timeout=4s"},
		{"default guards", []string{"--database", url}, nil, "statement_timeout_ms=20000 lock_timeout_ms=10000 idle_in_transaction_session_timeout_ms=5000 tcp_user_timeout_ms=20000 request_timeout=30s"},
		{"guards from flags and env", []string{"--database", url, "--db-lock-timeout", "1500ms", "--db-idle-in-transaction-timeout", "2s", "--request-timeout", "7s"},
			map[string]string{"TROVE_DB_STATEMENT_TIMEOUT": "3s", "TROVE_DB_TCP_TIMEOUT": "9s", "TROVE_DB_LOCK_TIMEOUT": "4s"},
			"statement_timeout_ms=3000 lock_timeout_ms=1500 idle_in_transaction_session_timeout_ms=2000 tcp_user_timeout_ms=9000 request_timeout=7s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			s := startServe(t, append(tc.args, "--data", t.TempDir())...)
			if !s.stderr.waitFor(tc.want, 10*time.Second) {
				t.Fatalf("serve %v did not log %q; stderr:\n%s", tc.args, tc.want, s.stderr)
			}
		})
	}
}
