package syncer

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove/storetree"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestPlanSync walks every row of the decision table (the L \ R grid of the
// sync spec §9.4 plus renames, grace, caps, refusals and read-only stores).
func TestPlanSync(t *testing.T) {
	type (
		E = map[string]*Entry
		L = map[string]LocalFile
		R = map[string]RemoteFile
	)
	ent := func(id, sha string) *Entry { return &Entry{MemoryID: id, BaseSHA: sha} }
	lf := func(sha string) LocalFile { return LocalFile{SHA: sha} }
	bad := func(sha string) LocalFile { return LocalFile{SHA: sha, Problem: "not UTF-8"} }
	rf := func(id, sha string) RemoteFile { return RemoteFile{ID: id, SHA: sha} }
	absent := func(id, sha string, since time.Time) *Entry {
		return &Entry{MemoryID: id, BaseSHA: sha, AbsentSince: since}
	}
	tests := []struct {
		name        string
		in          PlanInput
		want        []Action
		wantPending []string
		wantWiped   bool
	}{
		{name: "L=B R=B: nothing",
			in: PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("B")}, Remote: R{"/a": rf("m1", "B")}}},
		{name: "L=B R changed: download",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("B")}, Remote: R{"/a": rf("m1", "R")}},
			want: []Action{{Kind: KindDownload, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "B", RemoteSHA: "R"}}},
		{name: "L=B R deleted: delete local",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("B")}, Remote: R{}},
			want: []Action{{Kind: KindDeleteLocal, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "B"}}},
		{name: "L changed R=B: upload with precondition",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("L")}, Remote: R{"/a": rf("m1", "B")}},
			want: []Action{{Kind: KindUpload, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "L", RemoteSHA: "B"}}},
		{name: "both changed equal: adopt",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("X")}, Remote: R{"/a": rf("m1", "X")}},
			want: []Action{{Kind: KindAdopt, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "X", RemoteSHA: "X"}}},
		{name: "both changed differently: merge",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("L")}, Remote: R{"/a": rf("m1", "R")}},
			want: []Action{{Kind: KindMerge, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "L", RemoteSHA: "R"}}},
		{name: "L changed R deleted: re-create (edit beats delete)",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("L")}, Remote: R{}},
			want: []Action{{Kind: KindCreate, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "L"}}},
		{name: "L deleted R changed: restore (edit beats delete)",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{}, Remote: R{"/a": rf("m1", "R")}},
			want: []Action{{Kind: KindDownload, Path: "/a", MemoryID: "m1", BaseSHA: "B", RemoteSHA: "R"}}},
		{name: "both deleted: forget",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{}, Remote: R{}},
			want: []Action{{Kind: KindForget, Path: "/a", MemoryID: "m1", BaseSHA: "B"}}},
		{name: "new local: create",
			in:   PlanInput{Entries: E{}, Local: L{"/n": lf("N")}, Remote: R{}},
			want: []Action{{Kind: KindCreate, Path: "/n", LocalSHA: "N"}}},
		{name: "new remote: download",
			in:   PlanInput{Entries: E{}, Local: L{}, Remote: R{"/n": rf("m9", "N")}},
			want: []Action{{Kind: KindDownload, Path: "/n", MemoryID: "m9", RemoteSHA: "N"}}},
		{name: "both created equal: adopt",
			in:   PlanInput{Entries: E{}, Local: L{"/n": lf("N")}, Remote: R{"/n": rf("m9", "N")}},
			want: []Action{{Kind: KindAdopt, Path: "/n", MemoryID: "m9", LocalSHA: "N", RemoteSHA: "N"}}},
		{name: "both created different: conflict",
			in:   PlanInput{Entries: E{}, Local: L{"/n": lf("X")}, Remote: R{"/n": rf("m9", "Y")}},
			want: []Action{{Kind: KindConflict, Path: "/n", MemoryID: "m9", LocalSHA: "X", RemoteSHA: "Y"}}},
		{name: "L deleted R=B: grace starts",
			in:          PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{}, Remote: R{"/a": rf("m1", "B")}, Now: t0, DeleteGrace: 30 * time.Second, MaxDeletes: 8},
			want:        []Action{{Kind: KindMarkAbsent, Path: "/a", MemoryID: "m1", BaseSHA: "B", RemoteSHA: "B", Since: t0}},
			wantPending: []string{"/a"}},
		{name: "L deleted R=B: within grace waits",
			in:          PlanInput{Entries: E{"/a": absent("m1", "B", t0)}, Local: L{}, Remote: R{"/a": rf("m1", "B")}, Now: t0.Add(29 * time.Second), DeleteGrace: 30 * time.Second, MaxDeletes: 8},
			wantPending: []string{"/a"}},
		{name: "L deleted R=B: after grace deletes with base precondition",
			in:   PlanInput{Entries: E{"/a": absent("m1", "B", t0)}, Local: L{}, Remote: R{"/a": rf("m1", "B")}, Now: t0.Add(30 * time.Second), DeleteGrace: 30 * time.Second, MaxDeletes: 8},
			want: []Action{{Kind: KindDeleteRemote, Path: "/a", MemoryID: "m1", BaseSHA: "B", RemoteSHA: "B"}}},
		{name: "final pass waives the grace",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{}, Remote: R{"/a": rf("m1", "B")}, Now: t0, DeleteGrace: 30 * time.Second, MaxDeletes: 8, Final: true},
			want: []Action{{Kind: KindDeleteRemote, Path: "/a", MemoryID: "m1", BaseSHA: "B", RemoteSHA: "B"}}},
		{name: "file back during grace: clear",
			in:   PlanInput{Entries: E{"/a": absent("m1", "B", t0)}, Local: L{"/a": lf("B")}, Remote: R{"/a": rf("m1", "B")}, Now: t0.Add(time.Second)},
			want: []Action{{Kind: KindMarkAbsent, Path: "/a"}}},
		{name: "delete cap",
			in: PlanInput{Entries: E{"/a": absent("1", "A", t0), "/b": absent("2", "B", t0), "/c": absent("3", "C", t0), "/keep": ent("4", "K")},
				Local: L{"/keep": lf("K")}, Remote: R{"/a": rf("1", "A"), "/b": rf("2", "B"), "/c": rf("3", "C"), "/keep": rf("4", "K")},
				Now: t0.Add(time.Minute), DeleteGrace: 30 * time.Second, MaxDeletes: 2},
			want: []Action{
				{Kind: KindDeleteRemote, Path: "/a", MemoryID: "1", BaseSHA: "A", RemoteSHA: "A"},
				{Kind: KindDeleteRemote, Path: "/b", MemoryID: "2", BaseSHA: "B", RemoteSHA: "B"},
			},
			wantPending: []string{"/c"}},
		{name: "wiped directory: restore, never mass delete",
			in: PlanInput{Entries: E{"/a": absent("1", "A", t0), "/b": ent("2", "B")}, Local: L{}, Remote: R{"/a": rf("1", "A"), "/b": rf("2", "B")},
				Now: t0.Add(time.Hour), DeleteGrace: 30 * time.Second, MaxDeletes: 8},
			want: []Action{
				{Kind: KindDownload, Path: "/a", MemoryID: "1", BaseSHA: "A", RemoteSHA: "A"},
				{Kind: KindDownload, Path: "/b", MemoryID: "2", BaseSHA: "B", RemoteSHA: "B"},
			},
			wantWiped: true},
		{name: "rename: same content at a new path, old gone",
			in:   PlanInput{Entries: E{"/old": ent("m1", "B")}, Local: L{"/new": lf("B")}, Remote: R{"/old": rf("m1", "B")}, Now: t0, DeleteGrace: 30 * time.Second, MaxDeletes: 8},
			want: []Action{{Kind: KindRename, Path: "/old", To: "/new", MemoryID: "m1", BaseSHA: "B", LocalSHA: "B", RemoteSHA: "B"}}},
		{name: "rename with an edit: create + delayed delete",
			in: PlanInput{Entries: E{"/old": ent("m1", "B")}, Local: L{"/new": lf("X")}, Remote: R{"/old": rf("m1", "B")}, Now: t0, DeleteGrace: 30 * time.Second, MaxDeletes: 8},
			want: []Action{
				{Kind: KindCreate, Path: "/new", LocalSHA: "X"},
				{Kind: KindMarkAbsent, Path: "/old", MemoryID: "m1", BaseSHA: "B", RemoteSHA: "B", Since: t0},
			},
			wantPending: []string{"/old"}},
		{name: "copy (old still there): plain create",
			in:   PlanInput{Entries: E{"/old": ent("m1", "B")}, Local: L{"/old": lf("B"), "/new": lf("B")}, Remote: R{"/old": rf("m1", "B")}},
			want: []Action{{Kind: KindCreate, Path: "/new", LocalSHA: "B"}}},
		{name: "refused new file: reported once, never uploaded",
			in:   PlanInput{Entries: E{}, Local: L{"/bin": bad("X")}, Remote: R{}},
			want: []Action{{Kind: KindRefuse, Path: "/bin", LocalSHA: "X", Reason: "not UTF-8"}}},
		{name: "refused file already recorded: nothing",
			in: PlanInput{Entries: E{"/bin": {RefusedSHA: "X", RefusedReason: "not UTF-8"}}, Local: L{"/bin": bad("X")}, Remote: R{}}},
		{name: "refused edit of a synced file: kept local, not uploaded",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": bad("X")}, Remote: R{"/a": rf("m1", "B")}},
			want: []Action{{Kind: KindRefuse, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "X", RemoteSHA: "B", Reason: "not UTF-8"}}},
		{name: "refused edit while the store changed: conflict copy kept locally",
			in:   PlanInput{Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": bad("X")}, Remote: R{"/a": rf("m1", "R")}},
			want: []Action{{Kind: KindConflict, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "X", RemoteSHA: "R", Reason: "not UTF-8"}}},
		{name: "read-only: local edit restored",
			in: PlanInput{ReadOnly: true, Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("L")}, Remote: R{"/a": rf("m1", "B")}},
			want: []Action{{Kind: KindRestore, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "L", RemoteSHA: "B",
				Reason: "read-only store: local changes are not uploaded; the store's version was restored"}}},
		{name: "read-only: local delete restored at once",
			in:   PlanInput{ReadOnly: true, Entries: E{"/a": ent("m1", "B")}, Local: L{}, Remote: R{"/a": rf("m1", "B")}, Now: t0, DeleteGrace: 30 * time.Second, MaxDeletes: 8},
			want: []Action{{Kind: KindDownload, Path: "/a", MemoryID: "m1", BaseSHA: "B", RemoteSHA: "B"}}},
		{name: "read-only: new local file quarantined",
			in: PlanInput{ReadOnly: true, Entries: E{}, Local: L{"/n": lf("N")}, Remote: R{}},
			want: []Action{{Kind: KindRestore, Path: "/n", LocalSHA: "N",
				Reason: "read-only store: local file is not in the store and was moved to quarantine"}}},
		{name: "read-only: remote edit pulled",
			in:   PlanInput{ReadOnly: true, Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("B")}, Remote: R{"/a": rf("m1", "R")}},
			want: []Action{{Kind: KindDownload, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "B", RemoteSHA: "R"}}},
		{name: "read-only: remote delete removes the unchanged local file",
			in:   PlanInput{ReadOnly: true, Entries: E{"/a": ent("m1", "B")}, Local: L{"/a": lf("B")}, Remote: R{}},
			want: []Action{{Kind: KindDeleteLocal, Path: "/a", MemoryID: "m1", BaseSHA: "B", LocalSHA: "B"}}},
		{name: "read-only: nothing is ever renamed or deleted remotely",
			in: PlanInput{ReadOnly: true, Entries: E{"/old": ent("m1", "B")}, Local: L{"/new": lf("B")}, Remote: R{"/old": rf("m1", "B")}, Final: true, MaxDeletes: 8},
			want: []Action{
				{Kind: KindRestore, Path: "/new", LocalSHA: "B", Reason: "read-only store: local file is not in the store and was moved to quarantine"},
				{Kind: KindDownload, Path: "/old", MemoryID: "m1", BaseSHA: "B", RemoteSHA: "B"},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanSync(tc.in)
			if diff := cmp.Diff(tc.want, got.Actions, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPending, got.PendingDeletes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pending deletes (-want +got):\n%s", diff)
			}
			if got.Wiped != tc.wantWiped {
				t.Errorf("wiped = %v, want %v", got.Wiped, tc.wantWiped)
			}
		})
	}
}

func TestDefaultMaxDeletes(t *testing.T) {
	for n, want := range map[int]int{0: 8, 40: 10, 1000: 50} {
		if got := DefaultMaxDeletes(n); got != want {
			t.Errorf("DefaultMaxDeletes(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestConflictName(t *testing.T) {
	taken := map[string]bool{"/d/a.conflict-local-20260102T030405Z.md": true}
	tests := []struct{ p, tag, want string }{
		{"/d/a.md", "abcdefgh", "/d/a.conflict-abcdefgh-20260102T030405Z.md"},
		{"/d/a.md", "local", "/d/a.conflict-local-20260102T030405Z-2.md"},
		{"/notes", "local", "/notes.conflict-local-20260102T030405Z"},
		{"/.env", "local", "/.env.conflict-local-20260102T030405Z"},
		{"/x.tar.gz", "local", "/x.tar.conflict-local-20260102T030405Z.gz"},
	}
	for _, tc := range tests {
		got := storetree.ConflictName(tc.p, tc.tag, t0.In(time.FixedZone("X", 3600)), func(p string) bool { return taken[p] })
		if got != tc.want {
			t.Errorf("conflictName(%q) = %q, want %q", tc.p, got, tc.want)
		}
		if !storetree.IsConflictCopyOf(tc.p, got) {
			t.Errorf("storetree.IsConflictCopyOf(%q, %q) = false", tc.p, got)
		}
	}
	if storetree.IsConflictCopyOf("/d/a.md", "/e/a.conflict-local-x.md") || storetree.IsConflictCopyOf("/d/a.md", "/d/b.conflict-local-x.md") {
		t.Error("isConflictCopyOf matched a copy of another file")
	}
}
