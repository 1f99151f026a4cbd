package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// httpNode is a plain net/http client of one `trove serve` process: the
// wire API as any SDK sends it, with error envelopes mapped back to codes.
type httpNode struct {
	base string
	key  string
	hc   *http.Client
}

type wireMemory struct {
	ID              string  `json:"id"`
	Path            string  `json:"path"`
	Content         *string `json:"content"`
	MemoryVersionID string  `json:"memory_version_id"`
}

// httpError is a non-2xx answer, mapped to a trove code by status and
// error type.
func httpError(status int, body []byte) error {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	code := trove.EINTERNAL
	switch {
	case env.Error.Type == "memory_path_conflict_error":
		code = trove.EPATHCONFLICT
	case env.Error.Type == "memory_precondition_failed_error":
		code = trove.EPRECONDITION
	case status == http.StatusNotFound:
		code = trove.ENOTFOUND
	case status == http.StatusBadRequest:
		code = trove.EINVALID
	case status == http.StatusServiceUnavailable:
		code = trove.EUNAVAILABLE
	}
	return &trove.Error{Code: code, Message: fmt.Sprintf("HTTP %d %s: %s", status, env.Error.Type, env.Error.Message)}
}

// do sends a request and decodes a 200 answer into out. A transport error
// has an unknown outcome and is reported as EUNAVAILABLE.
func (n *httpNode) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+n.key)
	req.Header.Set("anthropic-beta", "agent-memory-2026-07-22")
	req.Header.Set("anthropic-version", "2023-06-01")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.hc.Do(req)
	if err != nil {
		return &trove.Error{Code: trove.EUNAVAILABLE, Message: "transport error", Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return &trove.Error{Code: trove.EUNAVAILABLE, Message: "transport error", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return httpError(resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func memPath(storeID string, rest ...string) string {
	p := "/v1/memory_stores/" + url.PathEscape(storeID) + "/memories"
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func (n *httpNode) Create(ctx context.Context, storeID, path, content string) (string, string, error) {
	var m wireMemory
	err := n.do(ctx, "POST", memPath(storeID), map[string]any{"path": path, "content": content}, &m)
	return m.ID, m.MemoryVersionID, err
}

func (n *httpNode) Update(ctx context.Context, storeID, id string, content, path *string, pre string) (string, error) {
	body := map[string]any{}
	if content != nil {
		body["content"] = *content
	}
	if path != nil {
		body["path"] = *path
	}
	if pre != "" {
		body["precondition"] = map[string]string{"type": "content_sha256", "content_sha256": pre}
	}
	var m wireMemory
	err := n.do(ctx, "POST", memPath(storeID, id), body, &m)
	return m.MemoryVersionID, err
}

func (n *httpNode) Get(ctx context.Context, storeID, id string) (string, string, error) {
	var m wireMemory
	if err := n.do(ctx, "GET", memPath(storeID, id)+"?view=full", nil, &m); err != nil {
		return "", "", err
	}
	if m.Content == nil {
		return "", "", fmt.Errorf("GET memory %s: content is null under view=full", id)
	}
	return m.Path, *m.Content, nil
}

func (n *httpNode) Delete(ctx context.Context, storeID, id string) error {
	return n.do(ctx, "DELETE", memPath(storeID, id), nil, nil)
}

func (n *httpNode) VersionIDs(ctx context.Context, storeID, memoryID string) (map[string]trove.Operation, error) {
	out := map[string]trove.Operation{}
	page := ""
	for {
		q := url.Values{"memory_id": {memoryID}, "limit": {"100"}}
		if page != "" {
			q.Set("page", page)
		}
		var resp struct {
			Data []struct {
				ID        string `json:"id"`
				Operation string `json:"operation"`
			} `json:"data"`
			NextPage *string `json:"next_page"`
		}
		if err := n.do(ctx, "GET", "/v1/memory_stores/"+url.PathEscape(storeID)+"/memory_versions?"+q.Encode(), nil, &resp); err != nil {
			return nil, err
		}
		for _, v := range resp.Data {
			out[v.ID] = trove.Operation(v.Operation)
		}
		if resp.NextPage == nil || *resp.NextPage == "" {
			return out, nil
		}
		page = *resp.NextPage
	}
}

func (n *httpNode) Count(ctx context.Context, storeID string) (int, error) {
	total, page := 0, ""
	for {
		q := url.Values{"limit": {"100"}}
		if page != "" {
			q.Set("page", page)
		}
		var resp struct {
			Data     []json.RawMessage `json:"data"`
			NextPage *string           `json:"next_page"`
		}
		if err := n.do(ctx, "GET", memPath(storeID)+"?"+q.Encode(), nil, &resp); err != nil {
			return 0, err
		}
		total += len(resp.Data)
		if resp.NextPage == nil || *resp.NextPage == "" {
			return total, nil
		}
		page = *resp.NextPage
	}
}

func (n *httpNode) CreateStore(ctx context.Context, name string) (string, error) {
	var st struct {
		ID string `json:"id"`
	}
	err := n.do(ctx, "POST", "/v1/memory_stores", map[string]any{"name": name}, &st)
	return st.ID, err
}

// ---- trove serve processes ----

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildDir  string
)

// troveBinary builds ./cmd/trove once per test process (with -race when
// the tests run with it, so the build cache is shared) and returns its path.
func troveBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "trove-multinode-bin-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "trove")
		args := []string{"build", "-o", buildBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/trovehq/trove/cmd/trove")
		cmd := exec.Command("go", args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/trove: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

var listenRE = regexp.MustCompile(`listening on (http://[0-9.:\[\]a-z]+)`)

// startServe starts `trove serve` on a free loopback port with extra
// arguments (flags such as --max-memories 5) and returns its base URL. The
// process is stopped (SIGTERM, then killed) when the test ends.
func startServe(t testing.TB, bin, dbURL string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--database", dbURL, "--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var logBuf strings.Builder
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			logBuf.WriteString(line + "\n")
			logMu.Unlock()
			if m := listenRE.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); exited <- err }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			logMu.Lock()
			t.Logf("trove serve output:\n%s", logBuf.String())
			logMu.Unlock()
		}
	})
	select {
	case u := <-found:
		return u
	case err := <-exited:
		exited <- err
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("trove serve exited before listening (%v):\n%s", err, logBuf.String())
	case <-time.After(30 * time.Second):
		t.Fatal("trove serve did not print its listening address within 30 s")
	}
	return ""
}
