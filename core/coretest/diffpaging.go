package coretest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

// diffFarApart is more versions than core's diffScanLimit (500), the
// distance between two moments past which a diff is paged through the two
// as-of states rather than through the versions between them. 2,100, not
// just over 500: the random history this long is what makes a page end at
// a side's last memory, which the ended-side check needs (at 700 no page
// did).
const diffFarApart = 2100

// testDiffPagingFar builds a random history with more than diffFarApart
// versions between two moments — creates, updates, moves (back and forth
// across every page boundary, since pages are small), deletes, paths
// reused by new memories, redactions of versions current at either moment
// and memories left unchanged — and checks that the pages of DiffStorePage,
// at several limits and both ways, concatenate to exactly the diff that
// refStoreDiff computes from the two whole states.
func testDiffPagingFar(t *testing.T, open Opener) {
	for seed := range uint64(1) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open, trove.Limits{})
			checkDiffPagingFar(t, e, rand.New(rand.NewPCG(seed, 24)))
		})
	}
}

func checkDiffPagingFar(t *testing.T, e *env, rng *rand.Rand) {
	s := e.store(t, "far")
	paths := map[string]string{} // memory ID → current path
	current := map[string]string{}
	var old []string // versions no longer current
	used := func(p string) bool { return slices.Contains(slices.Collect(maps.Values(paths)), p) }
	pick := func() string { return slices.Sorted(maps.Keys(paths))[rng.IntN(len(paths))] }
	randomPath := func() string { return fmt.Sprintf("/d%d/f%d", rng.IntN(4), rng.IntN(6)) }
	supersede := func(id string, m *trove.Memory) {
		old = append(old, current[id])
		current[id], paths[id] = m.VersionID, m.Path
	}
	op := func() {
		t.Helper()
		content := fmt.Sprintf("line one %d\nline two %d\n", rng.IntN(5), rng.IntN(5))
		switch k := rng.IntN(10); {
		case k < 3 || len(paths) == 0:
			p := randomPath()
			if used(p) {
				return
			}
			m := e.memory(t, s.ID, p, content)
			current[m.ID], paths[m.ID] = m.VersionID, p
		case k < 6:
			id := pick()
			m, err := e.svc.UpdateMemory(e.ctx, s.ID, id, trove.UpdateMemoryParams{Content: &content})
			if err != nil {
				t.Fatal(err)
			}
			supersede(id, m)
		case k < 9:
			id, p := pick(), randomPath()
			if used(p) {
				return
			}
			m, err := e.svc.UpdateMemory(e.ctx, s.ID, id, trove.UpdateMemoryParams{Path: &p})
			if err != nil {
				t.Fatal(err)
			}
			supersede(id, m)
		default:
			id := pick()
			if err := e.svc.DeleteMemory(e.ctx, s.ID, id, ""); err != nil {
				t.Fatal(err)
			}
			old = append(old, current[id])
			delete(paths, id)
			delete(current, id)
		}
	}
	head := func() int64 {
		t.Helper()
		pg, err := e.svc.ListVersions(e.ctx, s.ID, trove.ListVersionsParams{Limit: 1})
		if err != nil || len(pg.Data) != 1 {
			t.Fatalf("ListVersions: %v, %v", pg, err)
		}
		return pg.Data[0].Seq
	}
	// Before From: memories that stay unchanged, and the ones the
	// directory renames below move (100 versions a rename).
	for i := range 100 {
		e.memory(t, s.ID, fmt.Sprintf("/bulk/m%03d", i), fmt.Sprintf("bulk %d\n", i))
	}
	for i := range 5 {
		e.memory(t, s.ID, fmt.Sprintf("/keep/k%d", i), "kept\n")
	}
	for range 40 {
		op()
	}
	from := head()
	dir := "/bulk"
	for i := 0; head()-from <= diffFarApart; i++ {
		next := fmt.Sprintf("/bulk%d", i%3)
		if next == dir {
			next = "/bulk"
		}
		if _, err := e.svc.RenameDirectory(e.ctx, s.ID, trove.RenameDirectoryParams{From: dir, To: next}); err != nil {
			t.Fatalf("RenameDirectory(%s → %s): %v", dir, next, err)
		}
		dir = next
		for range 4 {
			op()
		}
	}
	to := head()
	// After To: more writes, so that versions current at To are old and
	// may be redacted too.
	for range 30 {
		op()
	}
	for range 15 {
		if len(old) == 0 {
			break
		}
		v := old[rng.IntN(len(old))]
		if _, err := e.svc.RedactVersion(e.ctx, s.ID, v); err != nil {
			t.Fatalf("RedactVersion(%s): %v", v, err)
		}
	}
	now := head()
	before := t0.Add(-time.Hour)
	// Pairs of moments both ways, at small limits (4, 5, 7: many pages,
	// page ends across moves and at either side's last memory, which ends
	// that side for the pages after: empty-to at 4 fails when a side is
	// taken for ended while a memory it gave is still to be reported) and
	// the default. A page costs the memories it steps over that are
	// reported at their other side's position (100 bulk memories moved back
	// and forth, each a point read, again on every page): at limit 1, To →
	// From took 16 s without -race on SQLite (at 7, 2.3 s: about 100 s under
	// -race), so the smallest limits and that pair stay out; to-empty pages
	// backward.
	for _, m := range []struct {
		name     string
		from, to trove.Moment
		limits   []int
	}{
		{"from-to", trove.Moment{Seq: from}, trove.Moment{Seq: to}, []int{7}},
		{"empty-to", trove.Moment{Time: &before}, trove.Moment{Seq: to}, []int{4, 0}},
		{"to-empty", trove.Moment{Seq: to}, trove.Moment{Time: &before}, []int{5}},
		{"from-now", trove.Moment{Seq: from}, trove.Moment{Seq: now}, []int{0}},
	} {
		want := refStoreDiff(t, e, s.ID, m.from, m.to)
		for _, limit := range m.limits {
			t.Run(fmt.Sprintf("%s/limit%d", m.name, limit), func(t *testing.T) {
				var got []trove.MemoryDiff
				p := trove.DiffParams{From: m.from, To: m.to, Limit: limit}
				for pages := 0; ; pages++ {
					if pages > len(want)+1 {
						t.Fatalf("the diff does not end after %d pages", pages)
					}
					d, err := e.svc.DiffStorePage(e.ctx, s.ID, p)
					if err != nil {
						t.Fatalf("DiffStorePage: %v", err)
					}
					if (limit > 0 && len(d.Changes) > limit) || (d.NextPage != "" && len(d.Changes) == 0) {
						t.Fatalf("a page of %d changes (limit %d), next %q", len(d.Changes), limit, d.NextPage)
					}
					got = append(got, d.Changes...)
					if d.NextPage == "" {
						break
					}
					p = trove.DiffParams{Cursor: d.NextPage, Limit: limit}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("paged diff (-whole-state reference +got):\n%s", diff)
				}
			})
		}
	}
}

// refStoreDiff is the diff of a store between two moments computed the
// way core did before it paged through the as-of states: both whole
// states read (ListMemoriesAsOf), every memory compared, sorted by the
// path at To (else at From) then memory ID, each changed content patched.
func refStoreDiff(t *testing.T, e *env, storeID string, from, to trove.Moment) []trove.MemoryDiff {
	t.Helper()
	state := func(at trove.Moment) (map[string]trove.MemoryVersion, int64) {
		out := map[string]trove.MemoryVersion{}
		p := trove.ListMemoriesParams{Limit: 1000, View: trove.ViewBasic}
		for {
			pg, err := e.svc.ListMemoriesAsOf(e.ctx, storeID, at, p)
			if err != nil {
				t.Fatalf("ListMemoriesAsOf(%v): %v", at, err)
			}
			for _, v := range pg.Data {
				out[v.MemoryID] = v
			}
			if pg.NextPage == "" {
				return out, pg.Seq
			}
			p.Cursor = pg.NextPage
		}
	}
	a, fromSeq := state(from)
	b, toSeq := state(to)
	content := func(v *trove.MemoryVersion) string {
		if v == nil {
			return ""
		}
		full, err := e.svc.GetVersion(e.ctx, storeID, v.ID, trove.ViewFull)
		if err != nil {
			t.Fatalf("GetVersion(%s): %v", v.ID, err)
		}
		if full.Content == nil {
			return ""
		}
		return *full.Content
	}
	label := func(v *trove.MemoryVersion, seq int64) string {
		if v == nil || v.Path == nil {
			return "/dev/null"
		}
		return fmt.Sprintf("%s@%d", *v.Path, seq)
	}
	key := func(d trove.MemoryDiff) string {
		for _, v := range []*trove.MemoryVersion{d.To, d.From} {
			if v != nil && v.Path != nil {
				return *v.Path + "\x00" + d.MemoryID
			}
		}
		return "\x00" + d.MemoryID
	}
	same := func(p, q *string) bool { return (p == nil) == (q == nil) && (p == nil || *p == *q) }
	out := []trove.MemoryDiff{}
	for _, id := range unionKeys(a, b) {
		x, okX := a[id]
		y, okY := b[id]
		if okX && okY && x.ID == y.ID {
			continue
		}
		d := trove.MemoryDiff{MemoryID: id}
		var xp, yp *trove.MemoryVersion
		if okX {
			xp, d.From = &x, &x
		}
		if okY {
			yp, d.To = &y, &y
		}
		switch {
		case !okX:
			d.Kind = trove.DiffAdded
		case !okY:
			d.Kind = trove.DiffRemoved
		case !same(x.Path, y.Path):
			d.Kind = trove.DiffMoved
		default:
			d.Kind = trove.DiffChanged
		}
		d.Redacted = (okX && x.RedactedAt != nil) || (okY && y.RedactedAt != nil)
		d.ContentChanged = d.Redacted || !okX || !okY || !same(x.SHA256, y.SHA256)
		if d.ContentChanged && !d.Redacted {
			d.Patch = udiff.Unified(label(xp, fromSeq), label(yp, toSeq), content(xp), content(yp))
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(p, q trove.MemoryDiff) int { return strings.Compare(key(p), key(q)) })
	return out
}
