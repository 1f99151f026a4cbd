package cli

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/trovehq/trove"
)

// TestLongImportKilledSubprocess SIGKILLs a real `trove import` once it has
// imported its first 100 memories, runs the same import again, and checks
// that the target ends with one store holding each memory exactly once
// (one version each: nothing was written twice).
func TestLongImportKilledSubprocess(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	bin := buildTrove(t)
	const n = 200 // a progress line every 100: killed at the first, half done
	src, dst := t.TempDir(), t.TempDir()
	svc, closeDB := openData(t, src)
	ctx := workspaceCtx()
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "Big"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := fmt.Sprintf("/d%d/m%03d.md", i%9, i)
		if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: strings.Repeat("x", i)}); err != nil {
			t.Fatal(err)
		}
	}
	closeDB()
	file := filepath.Join(t.TempDir(), "big.tar.gz")
	if code, out, errOut := runTrove(t, "export", "Big", "--data", src, "-o", file); code != 0 {
		t.Fatalf("export = %d: %s%s", code, out, errOut)
	}

	cmd := exec.Command(bin, "import", file, "--data", dst)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	killed := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "importing: 100/") {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
			break
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("the import printed no progress line before ending")
	}
	count := func() (stores, memories, versions int) {
		t.Helper()
		svc, closeDB := openData(t, dst)
		defer closeDB()
		all, err := listAllStores(ctx, svc, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			seen := map[string]bool{}
			cursor := ""
			for {
				page, err := svc.ListMemories(ctx, s.ID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Data {
					if seen[it.Memory.Path] {
						t.Errorf("path %s listed twice", it.Memory.Path)
					}
					seen[it.Memory.Path] = true
				}
				memories += len(page.Data)
				if cursor = page.NextPage; cursor == "" {
					break
				}
			}
			for {
				page, err := svc.ListVersions(ctx, s.ID, trove.ListVersionsParams{Limit: 100, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				versions += len(page.Data)
				if cursor = page.NextPage; cursor == "" {
					break
				}
			}
		}
		return len(all), memories, versions
	}
	_, before, _ := count()
	t.Logf("killed with %d of %d memories imported", before, n)
	if before < 100 {
		t.Errorf("only %d memories before the kill, want at least 100", before)
	}

	code, out, errOut := runTrove(t, "import", file, "--data", dst)
	if code != 0 || !strings.Contains(out, `resumed into store "Big"`) {
		t.Fatalf("re-run = %d\nstdout:%s\nstderr:%s", code, out, errOut)
	}
	wantLine := fmt.Sprintf("%d memories written, %d already there, 0 left as they are", n-before, before)
	if !strings.Contains(out, wantLine) {
		t.Errorf("re-run said %q, want %q", out, wantLine)
	}
	stores, memories, versions := count()
	if stores != 1 || memories != n || versions != n {
		t.Errorf("after the re-run: %d stores, %d memories, %d versions; want 1, %d, %d", stores, memories, versions, n, n)
	}
}
