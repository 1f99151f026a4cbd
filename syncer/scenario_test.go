package syncer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// Scenario tests in a compact golden format: a base state agreed by both
// sides, steps applied to the local directory (l*) and the store (r*), sync
// passes, and the exact files wanted on each side afterwards. Conflict copy
// names are exact: the clock is fixed at t0 and the tag is "local".

type step struct {
	kind string // lw ld lr rw rd rr tick pass flush
	a, b string
	d    time.Duration
}

func lw(p, c string) step           { return step{kind: "lw", a: p, b: c} }
func ld(p string) step              { return step{kind: "ld", a: p} }
func lr(from, to string) step       { return step{kind: "lr", a: from, b: to} }
func rw(p, c string) step           { return step{kind: "rw", a: p, b: c} }
func rd(p string) step              { return step{kind: "rd", a: p} }
func rr(from, to string) step       { return step{kind: "rr", a: from, b: to} }
func tick(d time.Duration) step     { return step{kind: "tick", d: d} }
func pass() step                    { return step{kind: "pass"} }
func flush() step                   { return step{kind: "flush"} }
func copyName(p, ext string) string { return p + ".conflict-local-20260102T030405Z" + ext }

type scenario struct {
	name       string
	base       map[string]string
	readOnly   bool
	maxDeletes int
	steps      []step
	wantLocal  map[string]string
	wantRemote map[string]string
	// history is the store's whole version history afterwards, as
	// env.history renders it: created-at path → one line per version of
	// that memory, oldest first. The engine writes as session_actor (with
	// the precondition it sent), the test's store-side writes as api_actor.
	history map[string][]string
	// check runs extra assertions; ids maps base paths to their memory ids.
	check func(t *testing.T, e *env, last *syncer.Report, ids map[string]string)
}

var big = strings.Repeat("x", 102401)

var scenarios = []scenario{
	{name: "no change",
		base:       map[string]string{"/a.md": "A\n", "/d/b.md": "B\n"},
		wantLocal:  map[string]string{"/a.md": "A\n", "/d/b.md": "B\n"},
		wantRemote: map[string]string{"/a.md": "A\n", "/d/b.md": "B\n"},
		history: map[string][]string{
			"/a.md":   {`created /a.md "A\n" by api_actor`},
			"/d/b.md": {`created /d/b.md "B\n" by api_actor`},
		}},
	{name: "local edit uploads with the base precondition",
		base:       map[string]string{"/a.md": "A\n"},
		steps:      []step{lw("/a.md", "A2\n")},
		wantLocal:  map[string]string{"/a.md": "A2\n"},
		wantRemote: map[string]string{"/a.md": "A2\n"},
		history:    map[string][]string{"/a.md": {`created /a.md "A\n" by api_actor`, `modified /a.md "A2\n" by session_actor if "A\n"`}},
		check: func(t *testing.T, e *env, _ *syncer.Report, ids map[string]string) {
			vs := versions(t, e, ids["/a.md"])
			if len(vs) != 2 || vs[0].Operation != trove.OpModified {
				t.Errorf("versions = %+v, want created+modified", vs)
			}
		}},
	{name: "remote edit downloads",
		base:       map[string]string{"/a.md": "A\n"},
		steps:      []step{rw("/a.md", "R\n")},
		wantLocal:  map[string]string{"/a.md": "R\n"},
		wantRemote: map[string]string{"/a.md": "R\n"},
		history:    map[string][]string{"/a.md": {`created /a.md "A\n" by api_actor`, `modified /a.md "R\n" by api_actor`}}},
	{name: "remote delete removes the unchanged local file",
		base:       map[string]string{"/a.md": "A\n", "/d/b.md": "B\n"},
		steps:      []step{rd("/d/b.md")},
		wantLocal:  map[string]string{"/a.md": "A\n"},
		wantRemote: map[string]string{"/a.md": "A\n"},
		history: map[string][]string{
			"/a.md":   {`created /a.md "A\n" by api_actor`},
			"/d/b.md": {`created /d/b.md "B\n" by api_actor`, `deleted /d/b.md by api_actor`},
		}},
	{name: "local edit beats remote delete",
		base:       map[string]string{"/a.md": "A\n"},
		steps:      []step{lw("/a.md", "mine\n"), rd("/a.md")},
		wantLocal:  map[string]string{"/a.md": "mine\n"},
		wantRemote: map[string]string{"/a.md": "mine\n"},
		history: map[string][]string{
			"/a.md":   {`created /a.md "A\n" by api_actor`, `deleted /a.md by api_actor`},
			"/a.md#2": {`created /a.md "mine\n" by session_actor`},
		}},
	{name: "remote edit beats local delete",
		base:       map[string]string{"/a.md": "A\n"},
		steps:      []step{ld("/a.md"), rw("/a.md", "theirs\n"), pass(), tick(time.Hour)},
		wantLocal:  map[string]string{"/a.md": "theirs\n"},
		wantRemote: map[string]string{"/a.md": "theirs\n"},
		history:    map[string][]string{"/a.md": {`created /a.md "A\n" by api_actor`, `modified /a.md "theirs\n" by api_actor`}}},
	{name: "both deleted",
		base:       map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		steps:      []step{ld("/a.md"), rd("/a.md")},
		wantLocal:  map[string]string{"/b.md": "B\n"},
		wantRemote: map[string]string{"/b.md": "B\n"},
		history: map[string][]string{
			"/a.md": {`created /a.md "A\n" by api_actor`, `deleted /a.md by api_actor`},
			"/b.md": {`created /b.md "B\n" by api_actor`},
		}},
	{name: "local delete waits for the grace period",
		base:       map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		steps:      []step{ld("/a.md"), pass(), tick(29 * time.Second), pass()},
		wantLocal:  map[string]string{"/b.md": "B\n"},
		wantRemote: map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		history: map[string][]string{
			"/a.md": {`created /a.md "A\n" by api_actor`},
			"/b.md": {`created /b.md "B\n" by api_actor`},
		},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			if diff := cmp.Diff([]string{"/a.md"}, rep.PendingDeletes); diff != "" {
				t.Errorf("pending deletes: %s", diff)
			}
		}},
	{name: "local delete reaches the store after the grace period",
		base:       map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		steps:      []step{ld("/a.md"), pass(), tick(30 * time.Second), pass()},
		wantLocal:  map[string]string{"/b.md": "B\n"},
		wantRemote: map[string]string{"/b.md": "B\n"},
		history: map[string][]string{
			"/a.md": {`created /a.md "A\n" by api_actor`, `deleted /a.md by session_actor if "A\n"`},
			"/b.md": {`created /b.md "B\n" by api_actor`},
		}},
	{name: "a file back within the grace period is not deleted",
		base:       map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		steps:      []step{ld("/a.md"), pass(), lw("/a.md", "A\n"), pass(), tick(time.Minute), pass()},
		wantLocal:  map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		wantRemote: map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		history: map[string][]string{
			"/a.md": {`created /a.md "A\n" by api_actor`},
			"/b.md": {`created /b.md "B\n" by api_actor`},
		}},
	{name: "final flush waives the grace period",
		base:       map[string]string{"/a.md": "A\n", "/b.md": "B\n"},
		steps:      []step{ld("/a.md"), flush()},
		wantLocal:  map[string]string{"/b.md": "B\n"},
		wantRemote: map[string]string{"/b.md": "B\n"},
		history: map[string][]string{
			"/a.md": {`created /a.md "A\n" by api_actor`, `deleted /a.md by session_actor if "A\n"`},
			"/b.md": {`created /b.md "B\n" by api_actor`},
		}},
	{name: "delete cap per pass",
		base:       map[string]string{"/a": "1", "/b": "2", "/c": "3", "/keep": "k"},
		maxDeletes: 2,
		steps:      []step{ld("/a"), ld("/b"), ld("/c"), pass(), tick(time.Minute), pass()},
		wantLocal:  map[string]string{"/keep": "k"},
		wantRemote: map[string]string{"/c": "3", "/keep": "k"},
		history: map[string][]string{
			"/a":    {`created /a "1" by api_actor`, `deleted /a by session_actor if "1"`},
			"/b":    {`created /b "2" by api_actor`, `deleted /b by session_actor if "2"`},
			"/c":    {`created /c "3" by api_actor`},
			"/keep": {`created /keep "k" by api_actor`},
		},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			if diff := cmp.Diff([]string{"/c"}, rep.PendingDeletes); diff != "" {
				t.Errorf("pending deletes: %s", diff)
			}
		}},
	{name: "wiped directory is restored, not mass-deleted",
		base:       map[string]string{"/a": "1", "/b": "2", "/c/d": "3"},
		steps:      []step{ld("/a"), ld("/b"), ld("/c/d"), tick(time.Hour), flush()},
		wantLocal:  map[string]string{"/a": "1", "/b": "2", "/c/d": "3"},
		wantRemote: map[string]string{"/a": "1", "/b": "2", "/c/d": "3"},
		history: map[string][]string{
			"/a":   {`created /a "1" by api_actor`},
			"/b":   {`created /b "2" by api_actor`},
			"/c/d": {`created /c/d "3" by api_actor`},
		}},
	{name: "both changed to the same bytes: adopt",
		base:       map[string]string{"/a.md": "A\n"},
		steps:      []step{lw("/a.md", "same\n"), rw("/a.md", "same\n")},
		wantLocal:  map[string]string{"/a.md": "same\n"},
		wantRemote: map[string]string{"/a.md": "same\n"},
		history:    map[string][]string{"/a.md": {`created /a.md "A\n" by api_actor`, `modified /a.md "same\n" by api_actor`}}},
	{name: "both changed, clean three-way merge",
		base:       map[string]string{"/n.md": "# Notes\none\ntwo\nthree\n"},
		steps:      []step{lw("/n.md", "# Notes\nONE\ntwo\nthree\n"), rw("/n.md", "# Notes\none\ntwo\nTHREE\n")},
		wantLocal:  map[string]string{"/n.md": "# Notes\nONE\ntwo\nTHREE\n"},
		wantRemote: map[string]string{"/n.md": "# Notes\nONE\ntwo\nTHREE\n"},
		history: map[string][]string{
			"/n.md": {
				`created /n.md "# Notes\none\ntwo\nthree\n" by api_actor`,
				`modified /n.md "# Notes\none\ntwo\nTHREE\n" by api_actor`,
				`modified /n.md "# Notes\nONE\ntwo\nTHREE\n" by session_actor if "# Notes\none\ntwo\nTHREE\n"`},
		},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			if diff := cmp.Diff([]string{"/n.md"}, rep.Merged); diff != "" {
				t.Errorf("merged: %s", diff)
			}
		}},
	{name: "both changed, conflicting: store keeps its version, local bytes become a conflict copy",
		base:       map[string]string{"/d/n.md": "line\n"},
		steps:      []step{lw("/d/n.md", "mine\n"), rw("/d/n.md", "theirs\n")},
		wantLocal:  map[string]string{"/d/n.md": "theirs\n", copyName("/d/n", ".md"): "mine\n"},
		wantRemote: map[string]string{"/d/n.md": "theirs\n", copyName("/d/n", ".md"): "mine\n"},
		history: map[string][]string{
			"/d/n.md":               {`created /d/n.md "line\n" by api_actor`, `modified /d/n.md "theirs\n" by api_actor`},
			copyName("/d/n", ".md"): {`created ` + copyName("/d/n", ".md") + ` "mine\n" by session_actor`},
		},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			want := []syncer.Conflict{{Path: "/d/n.md", CopyPath: copyName("/d/n", ".md"), InStore: true}}
			if diff := cmp.Diff(want, rep.Conflicts); diff != "" {
				t.Errorf("conflicts: %s", diff)
			}
		}},
	{name: "new local file is created",
		base:       map[string]string{},
		steps:      []step{lw("/x/y/new.md", "N\n")},
		wantLocal:  map[string]string{"/x/y/new.md": "N\n"},
		wantRemote: map[string]string{"/x/y/new.md": "N\n"},
		history:    map[string][]string{"/x/y/new.md": {`created /x/y/new.md "N\n" by session_actor`}}},
	{name: "new remote memory is downloaded",
		base:       map[string]string{"/a": "A"},
		steps:      []step{rw("/x/y/new.md", "N\n")},
		wantLocal:  map[string]string{"/a": "A", "/x/y/new.md": "N\n"},
		wantRemote: map[string]string{"/a": "A", "/x/y/new.md": "N\n"},
		history: map[string][]string{
			"/a":          {`created /a "A" by api_actor`},
			"/x/y/new.md": {`created /x/y/new.md "N\n" by api_actor`},
		}},
	{name: "both created the same bytes: adopt",
		base:       map[string]string{},
		steps:      []step{lw("/n.md", "same"), rw("/n.md", "same")},
		wantLocal:  map[string]string{"/n.md": "same"},
		wantRemote: map[string]string{"/n.md": "same"},
		history:    map[string][]string{"/n.md": {`created /n.md "same" by api_actor`}}},
	{name: "both created different bytes: conflict copy",
		base:       map[string]string{},
		steps:      []step{lw("/n.md", "mine"), rw("/n.md", "theirs")},
		wantLocal:  map[string]string{"/n.md": "theirs", copyName("/n", ".md"): "mine"},
		wantRemote: map[string]string{"/n.md": "theirs", copyName("/n", ".md"): "mine"},
		history: map[string][]string{
			"/n.md":               {`created /n.md "theirs" by api_actor`},
			copyName("/n", ".md"): {`created ` + copyName("/n", ".md") + ` "mine" by session_actor`},
		}},
	{name: "local rename keeps the memory id and history",
		base:       map[string]string{"/old.md": "content\n"},
		steps:      []step{lr("/old.md", "/sub/new.md")},
		wantLocal:  map[string]string{"/sub/new.md": "content\n"},
		wantRemote: map[string]string{"/sub/new.md": "content\n"},
		history:    map[string][]string{"/old.md": {`created /old.md "content\n" by api_actor`, `modified /sub/new.md "content\n" by session_actor if "content\n"`}},
		check: func(t *testing.T, e *env, _ *syncer.Report, ids map[string]string) {
			m := e.memory("/sub/new.md")
			if m == nil || m.ID != ids["/old.md"] {
				t.Errorf("renamed memory = %+v, want id %s", m, ids["/old.md"])
			}
		}},
	{name: "remote rename moves the local file",
		base:       map[string]string{"/old.md": "content\n", "/other": "o"},
		steps:      []step{rr("/old.md", "/new.md")},
		wantLocal:  map[string]string{"/new.md": "content\n", "/other": "o"},
		wantRemote: map[string]string{"/new.md": "content\n", "/other": "o"},
		history: map[string][]string{
			"/old.md": {`created /old.md "content\n" by api_actor`, `modified /new.md "content\n" by api_actor`},
			"/other":  {`created /other "o" by api_actor`},
		}},
	{name: "binary file is refused, kept intact, never uploaded",
		base:       map[string]string{"/a": "A"},
		steps:      []step{lw("/img.png", "\x89PNG\r\n\x1a\n\x00\xff"), pass(), pass()},
		wantLocal:  map[string]string{"/a": "A", "/img.png": "\x89PNG\r\n\x1a\n\x00\xff"},
		wantRemote: map[string]string{"/a": "A"},
		history:    map[string][]string{"/a": {`created /a "A" by api_actor`}},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			want := []syncer.Problem{{Path: "/img.png", Reason: "file is not valid UTF-8 text (binary files are not synced)"}}
			if diff := cmp.Diff(want, rep.Refused); diff != "" {
				t.Errorf("refused: %s", diff)
			}
		}},
	{name: "edit to a too large file is refused, store keeps the last good version",
		base:       map[string]string{"/a": "A"},
		steps:      []step{lw("/a", big)},
		wantLocal:  map[string]string{"/a": big},
		wantRemote: map[string]string{"/a": "A"},
		history:    map[string][]string{"/a": {`created /a "A" by api_actor`}},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			if len(rep.Refused) != 1 || !strings.Contains(rep.Refused[0].Reason, "102401 bytes") {
				t.Errorf("refused = %+v", rep.Refused)
			}
		}},
	{name: "illegal store path is refused",
		base:       map[string]string{},
		steps:      []step{lw("/bad\u2028name", "x")},
		wantLocal:  map[string]string{"/bad\u2028name": "x"},
		wantRemote: map[string]string{},
		history:    map[string][]string{}},
	{name: "look-alike names are refused: a no-break space or an invisible mark never becomes a second memory",
		base:       map[string]string{"/my notes.md": "A", "/notes.md": "B"},
		steps:      []step{lw("/my\u00a0notes.md", "x"), lw("/notes.md\u034f", "y"), lw("/notes.md\ufe0f", "z")},
		wantLocal:  map[string]string{"/my notes.md": "A", "/notes.md": "B", "/my\u00a0notes.md": "x", "/notes.md\u034f": "y", "/notes.md\ufe0f": "z"},
		wantRemote: map[string]string{"/my notes.md": "A", "/notes.md": "B"},
		history: map[string][]string{
			"/my notes.md": {`created /my notes.md "A" by api_actor`},
			"/notes.md":    {`created /notes.md "B" by api_actor`},
		},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			var got []string
			for _, p := range rep.Refused {
				if !strings.Contains(p.Reason, "invisible or look like a space") {
					t.Errorf("refused %q: %s", p.Path, p.Reason)
				}
				got = append(got, p.Path)
			}
			if diff := cmp.Diff([]string{"/my\u00a0notes.md", "/notes.md\u034f", "/notes.md\ufe0f"}, got); diff != "" {
				t.Errorf("refused paths (-want +got):\n%s", diff)
			}
		}},
	{name: "refused file edited while the store changed: conflict copy stays local",
		base:       map[string]string{"/a": "A"},
		steps:      []step{lw("/a", "\xff\xfe"), rw("/a", "R")},
		wantLocal:  map[string]string{"/a": "R", copyName("/a", ""): "\xff\xfe"},
		wantRemote: map[string]string{"/a": "R"},
		history:    map[string][]string{"/a": {`created /a "A" by api_actor`, `modified /a "R" by api_actor`}}},
	{name: "read-only: local edit, new file and delete are restored; remote edit pulled",
		base:       map[string]string{"/a": "A", "/b": "B", "/c": "C"},
		readOnly:   true,
		steps:      []step{lw("/a", "tampered"), lw("/new", "N"), ld("/b"), rw("/c", "C2")},
		wantLocal:  map[string]string{"/a": "A", "/b": "B", "/c": "C2"},
		wantRemote: map[string]string{"/a": "A", "/b": "B", "/c": "C2"},
		history: map[string][]string{
			"/a": {`created /a "A" by api_actor`},
			"/b": {`created /b "B" by api_actor`},
			"/c": {`created /c "C" by api_actor`, `modified /c "C2" by api_actor`},
		},
		check: func(t *testing.T, _ *env, rep *syncer.Report, _ map[string]string) {
			if len(rep.Quarantined) != 2 {
				t.Errorf("quarantined = %+v, want /a and /new", rep.Quarantined)
			}
		}},
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			e := newEnv(t)
			for p, c := range sc.base {
				e.rwrite(p, c)
			}
			// The engine writes with a session credential (as under
			// `trove session run`), the test's store-side steps with the
			// workspace API key, so the history tells them apart.
			access := trove.AccessReadWrite
			if sc.readOnly {
				access = trove.AccessReadOnly
			}
			sctx, sessionID := e.sessionCtx(access)
			rec := newPreconds(e.svc)
			en := e.engine("dir", func(o *syncer.Options) {
				o.Services = rec
				o.ReadOnly = sc.readOnly
				o.MaxDeletes = sc.maxDeletes
			})
			sync := func() *syncer.Report {
				t.Helper()
				rep, err := en.Sync(sctx)
				if err != nil || len(rep.Errors) > 0 {
					t.Fatalf("sync: %v %+v", err, rep)
				}
				return rep
			}
			sync()
			dir := en.Dir()
			if diff := cmp.Diff(sc.base, readDir(t, dir)); diff != "" {
				t.Fatalf("initial download (-want +got):\n%s", diff)
			}
			ids := map[string]string{}
			for p := range sc.base {
				ids[p] = e.memory(p).ID
			}
			steps := sc.steps
			if len(steps) == 0 || (steps[len(steps)-1].kind != "pass" && steps[len(steps)-1].kind != "flush") {
				steps = append(steps, pass())
			}
			var last *syncer.Report
			for _, s := range steps {
				switch s.kind {
				case "lw":
					writeFile(t, dir, s.a, s.b)
				case "ld":
					removeFile(t, dir, s.a)
				case "lr":
					c := readDir(t, dir)[s.a]
					removeFile(t, dir, s.a)
					writeFile(t, dir, s.b, c)
				case "rw":
					e.rwrite(s.a, s.b)
				case "rd":
					e.rdelete(s.a)
				case "rr":
					e.rrename(s.a, s.b)
				case "tick":
					e.clock.Advance(s.d)
				case "pass":
					last = sync()
				case "flush":
					rep, err := en.Flush(sctx)
					if err != nil || len(rep.Errors) > 0 {
						t.Fatalf("flush: %v %+v", err, rep)
					}
					last = rep
				}
			}
			if diff := cmp.Diff(sc.wantLocal, readDir(t, dir)); diff != "" {
				t.Errorf("local (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(sc.wantRemote, e.remote()); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
			if sc.check != nil {
				sc.check(t, e, last, ids)
			}
			if last == nil || len(last.PendingDeletes) == 0 {
				// Settled: one more pass changes nothing on either side
				// (and, checked below, adds no version).
				rep := sync()
				for k, n := range rep.Counts {
					if k != syncer.KindMarkAbsent && n > 0 {
						t.Errorf("pass after settling did %d %s", n, k)
					}
				}
			}
			got, keys := e.history(t, rec, sessionID)
			if diff := cmp.Diff(sc.history, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("version history (-want +got):\n%s", diff)
			}
			// Every base memory keeps its id: its versions are the ones
			// listed under its base path (a rename's "modified" line
			// included), never a new memory's.
			for p, id := range ids {
				if keys[id] != p {
					t.Errorf("memory %s created at %s is listed under %q", id, p, keys[id])
				}
			}
		})
	}
}

func versions(t *testing.T, e *env, memoryID string) []trove.MemoryVersion {
	t.Helper()
	pg, err := e.svc.ListVersions(e.ctx, e.storeID, trove.ListVersionsParams{MemoryID: memoryID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Data
}

// TestInvisiblePathsAreLeftAlone: a synced file replaced by a symlink, and a
// memory named like the engine's temp files, are never taken for deletions.
func TestInvisiblePathsAreLeftAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.rwrite("/a.md", "A\n")
	e.rwrite("/b.md", "B\n")
	e.rwrite("/.trove-sync-1234.tmp", "odd name\n")
	en := e.engine("dir", nil)
	e.sync(en)
	if diff := cmp.Diff(map[string]string{"/a.md": "A\n", "/b.md": "B\n"}, readDir(t, en.Dir())); diff != "" {
		t.Fatalf("local (-want +got):\n%s", diff)
	}
	removeFile(t, en.Dir(), "/a.md")
	if err := os.Symlink("b.md", filepath.Join(en.Dir(), "a.md")); err != nil {
		t.Fatal(err)
	}
	e.sync(en)
	e.clock.Advance(time.Hour)
	rep, err := en.Flush(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/a.md": "A\n", "/b.md": "B\n", "/.trove-sync-1234.tmp": "odd name\n"}
	if diff := cmp.Diff(want, e.remote()); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	wantSkipped := []syncer.Problem{
		{Path: "/a.md", Reason: "symbolic link is not synced"},
		{Path: "/.trove-sync-1234.tmp", Reason: "store path uses the sync engine's temp-file name; not synced"},
	}
	if diff := cmp.Diff(wantSkipped, rep.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

// TestReplacedDirectory: a synced directory removed and created again (empty)
// is followed by path and restored, not mass-deleted.
func TestReplacedDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.rwrite("/a.md", "A\n")
	e.rwrite("/b/c.md", "C\n")
	en := e.engine("dir", nil)
	e.sync(en)
	if err := os.RemoveAll(en.Dir()); err != nil {
		t.Fatal(err)
	}
	if _, err := en.Sync(e.ctx); trove.ErrorCode(err) != trove.EINVALID {
		t.Fatalf("sync of a missing directory: %v, want invalid", err)
	}
	if err := os.Mkdir(en.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	rep, err := en.Flush(e.ctx)
	if err != nil || !rep.Wiped || len(rep.Errors) > 0 {
		t.Fatalf("flush: %v wiped=%v errors=%+v", err, rep.Wiped, rep.Errors)
	}
	want := map[string]string{"/a.md": "A\n", "/b/c.md": "C\n"}
	if diff := cmp.Diff(want, readDir(t, en.Dir())); diff != "" {
		t.Errorf("local (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.remote()); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
}
