package syncer_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/storetree"
	"github.com/trovehq/trove/syncer"
)

// TestUnrepresentablePathsAreReported (F2): a memory whose path has a
// segment over 255 bytes (the API accepts it) cannot be a local file: it is
// reported in every pass (and once as new), left alone in the store, and
// never takes the other files down with it.
func TestUnrepresentablePathsAreReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := "/" + strings.Repeat("x", 300) + ".md"
	deep := "/dir/" + strings.Repeat("é", 130) + "/a.md" // 260 bytes
	e.rwrite("/ok.md", "fine\n")
	e.rwrite(long, "long\n")
	e.rwrite(deep, "deep\n")
	en := e.engine("dir", nil)
	rep := e.sync(en)
	if diff := cmp.Diff(map[string]string{"/ok.md": "fine\n"}, readDir(t, en.Dir())); diff != "" {
		t.Errorf("local (-want +got):\n%s", diff)
	}
	var got []string
	for _, p := range rep.Unrepresentable {
		got = append(got, p.Path)
		if !strings.Contains(p.Reason, "255 bytes") {
			t.Errorf("reason for %.20s…: %q", p.Path, p.Reason)
		}
	}
	want := []string{long, deep}
	if long > deep {
		want = []string{deep, long}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unrepresentable (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rep.Unrepresentable, rep.NewUnrepresentable); diff != "" {
		t.Errorf("the first pass does not report them as new (-all +new):\n%s", diff)
	}
	notice := syncer.Notices("Notes", rep)
	for _, p := range want {
		if !strings.Contains(notice, "- [Notes] "+p+" is in the store but not synced here: ") {
			t.Errorf("notices do not name %.30s…:\n%s", p, notice)
		}
	}
	// The next pass lists them again, but not as new; the store is intact.
	rep = e.sync(en)
	if len(rep.Unrepresentable) != 2 || len(rep.NewUnrepresentable) != 0 {
		t.Errorf("second pass: %d unrepresentable, %d new; want 2, 0", len(rep.Unrepresentable), len(rep.NewUnrepresentable))
	}
	if diff := cmp.Diff(map[string]string{"/ok.md": "fine\n", long: "long\n", deep: "deep\n"}, e.remote()); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
}

// TestConflictOfLongNamesConverges (F2): a 253-byte name changed on both sides
// gets a conflict copy whose name fits 255 bytes, locally and in the store,
// and the next pass has nothing left to do.
func TestConflictOfLongNamesConverges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := "/notes/" + strings.Repeat("n", 250) + ".md" // a 253-byte segment
	e.rwrite(name, "base\n")
	en := e.engine("dir", nil)
	e.sync(en)
	writeFile(t, en.Dir(), name, "local edit\n")
	e.rwrite(name, "remote edit\n")
	rep := e.sync(en)
	if len(rep.Conflicts) != 1 {
		t.Fatalf("conflicts: %+v", rep.Conflicts)
	}
	c := rep.Conflicts[0]
	if !c.InStore || len(storetree.Base(c.CopyPath)) > storetree.MaxNameBytes || !storetree.IsConflictCopyOf(name, c.CopyPath) {
		t.Errorf("conflict copy %q (%d bytes, in store %v)", c.CopyPath, len(storetree.Base(c.CopyPath)), c.InStore)
	}
	want := map[string]string{name: "remote edit\n", c.CopyPath: "local edit\n"}
	if diff := cmp.Diff(want, readDir(t, en.Dir())); diff != "" {
		t.Errorf("local (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.remote()); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	rep = e.sync(en)
	for k, n := range rep.Counts {
		if n > 0 {
			t.Errorf("the pass after the conflict still did %d %s", n, k)
		}
	}
	if len(rep.Conflicts)+len(rep.Unrepresentable) > 0 {
		t.Errorf("the pass after the conflict: %+v", rep)
	}
}
