package syncer_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMergeBaseFromHistory: a download keeps no base object (the store
// holds the bytes as a version), so a later change on both sides merges
// against the base read from the memory's history; once that version is
// redacted, the same situation becomes a conflict copy, never a merge
// against a guessed base.
func TestMergeBaseFromHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := "# Notes\none\ntwo\nthree\n"
	e.rwrite("/n.md", base)
	en := e.engine("dir", nil)
	e.sync(en)
	objs, err := os.ReadDir(filepath.Join(e.root, "dir.state", "objects"))
	if err != nil || len(objs) != 0 {
		t.Fatalf("objects after a download: %v %v, want none", objs, err)
	}

	writeFile(t, en.Dir(), "/n.md", "# Notes\nONE\ntwo\nthree\n")
	e.rwrite("/n.md", "# Notes\none\ntwo\nTHREE\n")
	rep := e.sync(en)
	if diff := cmp.Diff([]string{"/n.md"}, rep.Merged); diff != "" {
		t.Fatalf("merged: %s", diff)
	}
	want := map[string]string{"/n.md": "# Notes\nONE\ntwo\nTHREE\n"}
	if diff := cmp.Diff(want, readDir(t, en.Dir())); diff != "" {
		t.Errorf("local after merge: %s", diff)
	}

	// The agreed base is now the merge the engine uploaded (kept as an
	// object too). Drop the objects and redact the base version: no base.
	m := e.memory("/n.md")
	os.RemoveAll(filepath.Join(e.root, "dir.state", "objects"))
	os.Mkdir(filepath.Join(e.root, "dir.state", "objects"), 0o755)
	writeFile(t, en.Dir(), "/n.md", "# Notes\nONE\ntwo\nTHREE\nlocal\n")
	e.rwrite("/n.md", "remote\n# Notes\nONE\ntwo\nTHREE\n")
	if _, err := e.svc.RedactVersion(e.ctx, e.storeID, m.VersionID); err != nil {
		t.Fatal(err)
	}
	rep = e.sync(en)
	if len(rep.Merged) != 0 || len(rep.Conflicts) != 1 {
		t.Fatalf("with the base redacted: merged %v, conflicts %+v; want one conflict copy", rep.Merged, rep.Conflicts)
	}
	got := readDir(t, en.Dir())
	if got["/n.md"] != "remote\n# Notes\nONE\ntwo\nTHREE\n" || got[rep.Conflicts[0].CopyPath] != "# Notes\nONE\ntwo\nTHREE\nlocal\n" {
		t.Errorf("local after conflict: %q", got)
	}
}
