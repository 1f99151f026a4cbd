package coretest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// asOfEntry is what the model says one memory looked like at a moment.
type asOfEntry struct {
	MemoryID, VersionID string
	Path, Content       string // "" when redacted
	Redacted            bool
}

// testAsOfModel runs a random history of creates, updates, moves, deletes
// and redactions and checks, at every moment it recorded (by version
// number, by version ID and by time), that the store as of that moment —
// the listing, each memory read, and the diff from the moment before —
// equals the model's, redacted versions shown redacted.
func testAsOfModel(t *testing.T, open Opener) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open, trove.Limits{})
			checkAsOfModel(t, e, rand.New(rand.NewPCG(seed, 13)))
		})
	}
}

func checkAsOfModel(t *testing.T, e *env, rng *rand.Rand) {
	s := e.store(t, "history")
	type live struct{ path, content, version string }
	state := map[string]live{} // memory ID → current
	var moments []map[string]live
	var times []time.Time
	var versionIDs []string
	redacted := map[string]bool{}
	var oldVersions []string // versions no longer current: may be redacted
	pathUsed := func(p string) bool {
		for _, m := range state {
			if m.path == p {
				return true
			}
		}
		return false
	}
	randomPath := func() string { return fmt.Sprintf("/d%d/f%d", rng.IntN(3), rng.IntN(4)) }
	ids := func() []string {
		out := make([]string, 0, len(state))
		for id := range state {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	record := func(versionID string) {
		v, err := e.svc.GetVersion(e.ctx, s.ID, versionID, trove.ViewBasic)
		if err != nil {
			t.Fatal(err)
		}
		if v.Seq != int64(len(moments)+1) {
			t.Fatalf("version %s has seq %d, want %d", versionID, v.Seq, len(moments)+1)
		}
		snap := map[string]live{}
		for k, m := range state {
			snap[k] = m
		}
		moments = append(moments, snap)
		times = append(times, v.CreatedAt)
		versionIDs = append(versionIDs, versionID)
	}
	for i := 0; i < 50; i++ {
		content := fmt.Sprintf("content %d\nline two %d\n", i, rng.IntN(3))
		switch op := rng.IntN(10); {
		case op < 4 || len(state) == 0:
			p := randomPath()
			if pathUsed(p) {
				continue
			}
			m, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: p, Content: content})
			if err != nil {
				t.Fatal(err)
			}
			state[m.ID] = live{p, content, m.VersionID}
			record(m.VersionID)
		case op < 6:
			id := ids()[rng.IntN(len(state))]
			m, err := e.svc.UpdateMemory(e.ctx, s.ID, id, trove.UpdateMemoryParams{Content: &content})
			if err != nil {
				t.Fatal(err)
			}
			oldVersions = append(oldVersions, state[id].version)
			state[id] = live{state[id].path, content, m.VersionID}
			record(m.VersionID)
		case op < 8:
			id, p := ids()[rng.IntN(len(state))], randomPath()
			if pathUsed(p) {
				continue
			}
			m, err := e.svc.UpdateMemory(e.ctx, s.ID, id, trove.UpdateMemoryParams{Path: &p})
			if err != nil {
				t.Fatal(err)
			}
			oldVersions = append(oldVersions, state[id].version)
			state[id] = live{p, state[id].content, m.VersionID}
			record(m.VersionID)
		case op < 9:
			id := ids()[rng.IntN(len(state))]
			if err := e.svc.DeleteMemory(e.ctx, s.ID, id, ""); err != nil {
				t.Fatal(err)
			}
			oldVersions = append(oldVersions, state[id].version)
			delete(state, id)
			vs := e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: id, Operation: trove.OpDeleted})
			record(vs[0].ID)
		default:
			if len(oldVersions) == 0 {
				continue
			}
			v := oldVersions[rng.IntN(len(oldVersions))]
			if _, err := e.svc.RedactVersion(e.ctx, s.ID, v); err != nil {
				t.Fatal(err)
			}
			redacted[v] = true
		}
	}
	expect := func(seq int) []asOfEntry {
		out := []asOfEntry{}
		if seq == 0 {
			return out
		}
		for id, m := range moments[seq-1] {
			if redacted[m.version] {
				out = append(out, asOfEntry{MemoryID: id, VersionID: m.version, Redacted: true})
			} else {
				out = append(out, asOfEntry{MemoryID: id, VersionID: m.version, Path: m.path, Content: m.content})
			}
		}
		slices.SortFunc(out, func(a, b asOfEntry) int {
			return strings.Compare(a.Path+"\x00"+a.MemoryID, b.Path+"\x00"+b.MemoryID)
		})
		return out
	}
	entry := func(v trove.MemoryVersion) asOfEntry {
		en := asOfEntry{MemoryID: v.MemoryID, VersionID: v.ID, Redacted: v.RedactedAt != nil}
		if v.Path != nil {
			en.Path = *v.Path
		}
		if v.Content != nil {
			en.Content = *v.Content
		}
		return en
	}
	list := func(at trove.Moment) ([]asOfEntry, int64) {
		t.Helper()
		var out []asOfEntry
		p := trove.ListMemoriesParams{Limit: 3, View: trove.ViewFull}
		var seq int64
		for range 100 {
			pg, err := e.svc.ListMemoriesAsOf(e.ctx, s.ID, at, p)
			if err != nil {
				t.Fatalf("ListMemoriesAsOf(%v): %v", at, err)
			}
			seq = pg.Seq
			for _, v := range pg.Data {
				out = append(out, entry(v))
			}
			if pg.NextPage == "" {
				return append([]asOfEntry{}, out...), seq
			}
			p.Cursor = pg.NextPage
		}
		t.Fatal("ListMemoriesAsOf does not end")
		return nil, 0
	}
	before := times[0].Add(-time.Second)
	if got, seq := list(trove.Moment{Time: &before}); len(got) != 0 || seq != 0 {
		t.Errorf("as of a time before the first write: %d memories at seq %d, want none at 0", len(got), seq)
	}
	for i := range moments {
		seq := i + 1
		want := expect(seq)
		for _, at := range []trove.Moment{{Seq: int64(seq)}, {VersionID: versionIDs[i]}, {Time: &times[i]}} {
			got, gotSeq := list(at)
			if gotSeq != int64(seq) {
				t.Errorf("moment %v resolved to seq %d, want %d", at, gotSeq, seq)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("store as of %v (seq %d) (-model +got):\n%s", at, seq, diff)
			}
		}
		for _, w := range want {
			v, err := e.svc.GetMemoryAsOf(e.ctx, s.ID, trove.Moment{Seq: int64(seq)}, w.MemoryID, "")
			if err != nil {
				t.Fatalf("GetMemoryAsOf(%s @%d): %v", w.MemoryID, seq, err)
			}
			if diff := cmp.Diff(w, entry(*v)); diff != "" {
				t.Errorf("GetMemoryAsOf(%s @%d) (-model +got):\n%s", w.MemoryID, seq, diff)
			}
			if !w.Redacted {
				v, err := e.svc.GetMemoryAsOf(e.ctx, s.ID, trove.Moment{Seq: int64(seq)}, w.Path, "")
				if err != nil || v.MemoryID != w.MemoryID {
					t.Errorf("GetMemoryAsOf(%s @%d) = %+v, %v; want memory %s", w.Path, seq, v, err, w.MemoryID)
				}
			}
		}
		// The diff from the moment before matches the model.
		from := trove.Moment{Seq: int64(seq - 1)}
		if seq == 1 {
			from = trove.Moment{Time: &before}
		}
		d, err := e.svc.DiffStore(e.ctx, s.ID, from, trove.Moment{Seq: int64(seq)})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(modelDiff(expect(seq-1), want), diffSummary(d)); diff != "" {
			t.Errorf("DiffStore(%d, %d) (-model +got):\n%s", seq-1, seq, diff)
		}
	}
	// A diff across the whole history too.
	d, err := e.svc.DiffStore(e.ctx, s.ID, trove.Moment{Seq: 1}, trove.Moment{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(modelDiff(expect(1), expect(len(moments))), diffSummary(d)); diff != "" {
		t.Errorf("DiffStore(1, now) (-model +got):\n%s", diff)
	}
	// Diffs a few moments apart, both ways (core reads only what the
	// versions between them touched).
	for i := 1; i+3 <= len(moments); i += 2 {
		for _, p := range [][2]int{{i, i + 3}, {i + 3, i}} {
			d, err := e.svc.DiffStore(e.ctx, s.ID, trove.Moment{Seq: int64(p[0])}, trove.Moment{Seq: int64(p[1])})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(modelDiff(expect(p[0]), expect(p[1])), diffSummary(d)); diff != "" {
				t.Errorf("DiffStore(%d, %d) (-model +got):\n%s", p[0], p[1], diff)
			}
		}
	}
	_, err = e.svc.ListMemoriesAsOf(e.ctx, s.ID, trove.Moment{Seq: int64(len(moments) + 1)}, trove.ListMemoriesParams{})
	wantCode(t, "as of a version number beyond the newest", err, trove.EINVALID)
	_, err = e.svc.ListMemoriesAsOf(e.ctx, s.ID, trove.Moment{VersionID: "memver_missing"}, trove.ListMemoriesParams{})
	wantCode(t, "as of an unknown version", err, trove.ENOTFOUND)
	_, err = e.svc.ListMemoriesAsOf(e.ctx, s.ID, trove.Moment{}, trove.ListMemoriesParams{Limit: 1001})
	wantCode(t, "an as-of page over 1000", err, trove.EINVALID)
	_, err = e.svc.ListMemoriesAsOf(e.ctx, s.ID, trove.Moment{}, trove.ListMemoriesParams{Depth: 1})
	wantCode(t, "an as-of listing with depth", err, trove.EINVALID)
	pg, err := e.svc.ListMemoriesAsOf(e.ctx, s.ID, trove.Moment{}, trove.ListMemoriesParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Data) != len(expect(len(moments))) || pg.NextPage != "" {
		t.Errorf("one as-of page of 1000: %d memories, next %q; want all %d", len(pg.Data), pg.NextPage, len(expect(len(moments))))
	}
}

// diffLine is a diff reduced to what the model predicts.
type diffLine struct {
	Kind                 trove.DiffKind
	MemoryID             string
	FromPath, ToPath     string
	Redacted, HasPatch   bool
	PatchFrom, PatchTo   string
	FromVer, ToVer       string
	FromContent, Content string
}

func modelDiff(a, b []asOfEntry) []diffLine {
	byID := func(es []asOfEntry) map[string]asOfEntry {
		m := map[string]asOfEntry{}
		for _, e := range es {
			m[e.MemoryID] = e
		}
		return m
	}
	x, y := byID(a), byID(b)
	out := []diffLine{}
	for _, id := range unionKeys(x, y) {
		f, okF := x[id]
		g, okG := y[id]
		if okF && okG && f.VersionID == g.VersionID {
			continue
		}
		l := diffLine{MemoryID: id, FromPath: f.Path, ToPath: g.Path, FromVer: f.VersionID, ToVer: g.VersionID,
			Redacted: f.Redacted || g.Redacted}
		switch {
		case !okF:
			l.Kind = trove.DiffAdded
		case !okG:
			l.Kind = trove.DiffRemoved
		case f.Path != g.Path:
			l.Kind = trove.DiffMoved
		default:
			l.Kind = trove.DiffChanged
		}
		l.HasPatch = !l.Redacted && (!okF || !okG || f.Content != g.Content)
		if l.HasPatch {
			l.FromContent, l.Content = f.Content, g.Content
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(p, q diffLine) int { return strings.Compare(p.MemoryID, q.MemoryID) })
	return out
}

func unionKeys[V any](x, y map[string]V) []string {
	var out []string
	for k := range x {
		out = append(out, k)
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// diffSummary reduces a StoreDiff to diffLines; a patch is checked by the
// lines it removes and adds.
func diffSummary(d *trove.StoreDiff) []diffLine {
	out := []diffLine{}
	for _, c := range d.Changes {
		l := diffLine{Kind: c.Kind, MemoryID: c.MemoryID, Redacted: c.Redacted, HasPatch: c.Patch != ""}
		if c.From != nil {
			l.FromVer = c.From.ID
			if c.From.Path != nil {
				l.FromPath = *c.From.Path
			}
		}
		if c.To != nil {
			l.ToVer = c.To.ID
			if c.To.Path != nil {
				l.ToPath = *c.To.Path
			}
		}
		if c.Patch != "" {
			l.FromContent, l.Content = patchSides(c.Patch)
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(p, q diffLine) int { return strings.Compare(p.MemoryID, q.MemoryID) })
	return out
}

// patchSides returns the old and new text a unified diff implies when its
// context covers whole files (the model's contents are two lines).
func patchSides(patch string) (old, new string) {
	for _, line := range strings.SplitAfter(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "---"), strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "@@"), line == "":
		case strings.HasPrefix(line, "-"):
			old += line[1:]
		case strings.HasPrefix(line, "+"):
			new += line[1:]
		case strings.HasPrefix(line, " "):
			old += line[1:]
			new += line[1:]
		}
	}
	return old, new
}
