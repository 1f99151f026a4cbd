package sessionrun_test

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/sessionrun"
	"github.com/trovehq/trove/syncer"
)

// TestNotices: a pass's notable parts become lines, and concurrent appends
// through one value never interleave.
func TestNotices(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), sessionrun.NoticesName)
	n := sessionrun.NewNotices(path)
	n.Pass("Notes", &syncer.Report{
		Counts:      map[syncer.Kind]int{syncer.KindRefuse: 1},
		Conflicts:   []syncer.Conflict{{Path: "/a.md", CopyPath: "/a.conflict-local-x.md"}},
		Refused:     []syncer.Problem{{Path: "/big.md", Reason: "too large"}},
		Quarantined: []syncer.Problem{{Path: "/ro.md", Reason: "restored"}},
	})
	n.Pass("Notes", &syncer.Report{Refused: []syncer.Problem{{Path: "/big.md", Reason: "too large"}}}) // not newly refused
	n.Pass("Notes", nil)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "- [Notes] /a.md changed in the store while you edited it: the store's version is at /a.md, yours was saved as /a.conflict-local-x.md\n" +
		"- [Notes] /big.md is not saved to the store: too large\n" +
		"- [Notes] /ro.md: restored\n"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}

	path = filepath.Join(t.TempDir(), sessionrun.NoticesName)
	n = sessionrun.NewNotices(path)
	var wg sync.WaitGroup
	var wantLines []string
	for g := range 8 {
		store := "s" + strconv.Itoa(g)
		for i := range 50 {
			wantLines = append(wantLines, "- ["+store+"] /"+strconv.Itoa(i)+".md is not saved to the store: "+strings.Repeat("x", 300))
		}
		wg.Go(func() {
			for i := range 50 {
				n.Refusal(store, "/"+strconv.Itoa(i)+".md", strings.Repeat("x", 300))
			}
		})
	}
	wg.Wait()
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	sort.Strings(got)
	sort.Strings(wantLines)
	if diff := cmp.Diff(wantLines, got); diff != "" {
		t.Errorf("concurrent notices (-want +got):\n%s", diff)
	}
}
