package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// TestLongCrashDuringDirectoryRename builds trove, serves SQLite from a child
// process, and SIGKILLs it while it renames a directory of 300 memories,
// once per kill delay (from the moment the request was written). The
// rename is one transaction whatever its size; 300 memories make it last
// long enough (seconds under -race) for kills to land before, during and
// after it, at a third of the cost of 1,000. After each
// restart the rename happened entirely (every memory at its new path, 1,000
// new versions) or not at all (every memory at its old path, no new
// version), whatever the moment of the kill; a rename acknowledged before
// the kill must have happened entirely.
func TestLongCrashDuringDirectoryRename(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	bin := buildTrove(t)
	data := filepath.Join(t.TempDir(), "data")
	start := func() (*exec.Cmd, string) { return startServeProcess(t, bin, data) }
	cmd, url := start()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	b, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	ctx := context.Background()
	client := func(url string) *httpapi.Client {
		return httpapi.NewClient(url, key, httpapi.WithMaxRetries(0), httpapi.WithHTTPClient(&http.Client{Timeout: 5 * time.Minute}))
	}
	c := client(url)
	st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	const n, workers = 300, 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				p := fmt.Sprintf("/d0/%02d/m%04d.md", i%10, i)
				if _, err := c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: "memory " + p}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// state returns the directories holding memories (with their counts)
	// and the number of modified versions.
	state := func(c *httpapi.Client) (map[string]int, int) {
		t.Helper()
		dirs := map[string]int{}
		p := trove.ListMemoriesParams{Limit: 100}
		for {
			pg, err := c.ListMemories(ctx, st.ID, p)
			if err != nil {
				t.Fatalf("ListMemories: %v", err)
			}
			for _, it := range pg.Data {
				top, _, _ := strings.Cut(it.Memory.Path[1:], "/")
				dirs["/"+top]++
			}
			if pg.NextPage == "" {
				break
			}
			p.Cursor = pg.NextPage
		}
		versions := 0
		vp := trove.ListVersionsParams{Operation: trove.OpModified, Limit: 100}
		for {
			pg, err := c.ListVersions(ctx, st.ID, vp)
			if err != nil {
				t.Fatalf("ListVersions: %v", err)
			}
			versions += len(pg.Data)
			if pg.NextPage == "" {
				break
			}
			vp.Cursor = pg.NextPage
		}
		return dirs, versions
	}

	// A rename left to finish moves everything, with one version each, and
	// tells how long one takes: the kills below land before, during and
	// after that time.
	began := time.Now()
	if ch, err := c.RenameDirectory(ctx, st.ID, trove.RenameDirectoryParams{From: "/d0", To: "/d1"}); err != nil || len(ch.Memories) != n {
		t.Fatalf("RenameDirectory of %d memories: %v", n, err)
	}
	took := time.Since(began)
	cur := "/d1"
	dirs, versions := state(c)
	if dirs[cur] != n || len(dirs) != 1 || versions != n {
		t.Fatalf("after a completed rename: memories by directory %v, %d modified versions", dirs, versions)
	}
	t.Logf("a rename of %d memories took %v", n, took)
	outcomes := map[string]int{}
	var delays []time.Duration
	for _, f := range []float64{0, 0.2, 0.4, 0.6, 0.8, 1.1, 1.5} {
		delays = append(delays, time.Duration(f*float64(took)))
	}
	for run, delay := range delays {
		next := fmt.Sprintf("/d%d", run+2)
		written := make(chan struct{})
		var once sync.Once
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(written) }) }}
		done := make(chan error, 1)
		go func() {
			_, err := c.RenameDirectory(httptrace.WithClientTrace(ctx, trace), st.ID, trove.RenameDirectoryParams{From: cur, To: next})
			done <- err
		}()
		select {
		case <-written:
		case err := <-done:
			t.Fatalf("run %d: the rename ended before its request was written: %v", run, err)
		}
		time.Sleep(delay) // varies where the kill lands; nothing waits on it
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		acked := <-done == nil

		cmd, url = start()
		c = client(url)
		dirs, v := state(c)
		var outcome string
		switch {
		case dirs[next] == n && len(dirs) == 1 && v == versions+n:
			outcome, cur, versions = "all", next, v
		case dirs[cur] == n && len(dirs) == 1 && v == versions && !acked:
			outcome = "none"
		default:
			t.Fatalf("run %d (kill %v after the request, acknowledged %v): memories by directory %v and %d modified versions (had %d); want all %d memories at %s with %d new versions, or all at %s with none",
				run, delay, acked, dirs, v, versions, n, next, n, cur)
		}
		if acked {
			outcome += ", acknowledged"
		}
		outcomes[outcome]++
		t.Logf("run %d: kill %v after the request was written: %s", run, delay, outcome)
	}
	t.Logf("outcomes over %d kills: %v", len(delays), outcomes)
}
