package syncer

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// checkNoLoss asserts the planner's safety properties for one input:
//   - a local file whose bytes the store has not agreed on (L ≠ B) is never
//     overwritten or removed by a plain download or local delete;
//   - on a read_write store such bytes always get an action that keeps them
//     (upload, create, merge, conflict, rename, adopt) or are refused;
//   - the store is never written for a read_only store;
//   - a remote delete needs the local file gone, the remote unchanged, and
//     the grace period over (or a final pass), within the cap;
//   - at most one action per path (renames: one per source and target).
func checkNoLoss(t *testing.T, in PlanInput) {
	t.Helper()
	pl := PlanSync(in)
	byPath := map[string]Action{}
	deletes := 0
	for _, a := range pl.Actions {
		if a.Kind == KindMarkAbsent && a.Since.IsZero() {
			continue
		}
		for _, p := range []string{a.Path, a.To} {
			if p == "" {
				continue
			}
			if prev, dup := byPath[p]; dup {
				t.Fatalf("two actions for %s: %+v and %+v\ninput %s", p, prev, a, dump(in))
			}
			byPath[p] = a
		}
		if in.ReadOnly {
			switch a.Kind {
			case KindUpload, KindCreate, KindMerge, KindConflict, KindRename, KindDeleteRemote:
				t.Fatalf("read-only plan writes the store: %+v\ninput %s", a, dump(in))
			}
		}
		if a.Kind == KindDeleteRemote {
			deletes++
			e := in.Entries[a.Path]
			_, hasL := in.Local[a.Path]
			r, hasR := in.Remote[a.Path]
			if hasL || !hasR || e == nil || r.SHA != e.BaseSHA {
				t.Fatalf("unsafe remote delete %+v\ninput %s", a, dump(in))
			}
			if !in.Final && (e.AbsentSince.IsZero() || in.Now.Sub(e.AbsentSince) < in.DeleteGrace) {
				t.Fatalf("remote delete before the grace period %+v\ninput %s", a, dump(in))
			}
		}
	}
	if deletes > max(in.MaxDeletes, 0) {
		t.Fatalf("%d deletes over the cap %d", deletes, in.MaxDeletes)
	}
	for p, l := range in.Local {
		b := ""
		if e := in.Entries[p]; e != nil {
			b = e.BaseSHA
		}
		if l.SHA == b {
			continue
		}
		if r, ok := in.Remote[p]; ok && r.SHA == l.SHA {
			continue // the store already holds these bytes
		}
		a, ok := byPath[p]
		if in.ReadOnly {
			if !ok || a.Kind != KindRestore {
				t.Fatalf("read-only: changed local %s not quarantined: %+v\ninput %s", p, a, dump(in))
			}
			continue
		}
		if !ok {
			if l.Problem != "" {
				continue // refused earlier, kept as is
			}
			t.Fatalf("changed local %s has no action\ninput %s", p, dump(in))
		}
		switch a.Kind {
		case KindUpload, KindCreate, KindMerge, KindConflict, KindRename, KindAdopt, KindRefuse:
		default:
			t.Fatalf("changed local %s gets %s, which would lose it\ninput %s", p, a.Kind, dump(in))
		}
	}
}

func dump(in PlanInput) string {
	s := "entries:"
	for p, e := range in.Entries {
		s += fmt.Sprintf(" %s=%+v", p, *e)
	}
	return s + fmt.Sprintf("\nlocal: %v\nremote: %v\nro=%v final=%v", in.Local, in.Remote, in.ReadOnly, in.Final)
}

// randomInput draws a small world: a few paths, a few contents, each side
// present or not, some refusals, absences and flags.
func randomInput(r *rand.Rand) PlanInput {
	paths := []string{"/a", "/b", "/c", "/d/e"}
	shas := []string{"s1", "s2", "s3"}
	in := PlanInput{
		Entries: map[string]*Entry{}, Local: map[string]LocalFile{}, Remote: map[string]RemoteFile{},
		Now: t0.Add(time.Duration(r.IntN(60)) * time.Second), DeleteGrace: 30 * time.Second,
		MaxDeletes: r.IntN(3), ReadOnly: r.IntN(4) == 0, Final: r.IntN(4) == 0,
	}
	for i, p := range paths {
		if r.IntN(3) > 0 {
			e := &Entry{MemoryID: fmt.Sprintf("m%d", i), BaseSHA: shas[r.IntN(len(shas))]}
			if r.IntN(3) == 0 {
				e.AbsentSince = t0
			}
			if r.IntN(5) == 0 {
				e.RefusedSHA, e.RefusedReason = "bad", "refused"
			}
			in.Entries[p] = e
		}
		if r.IntN(3) > 0 {
			l := LocalFile{SHA: shas[r.IntN(len(shas))]}
			if r.IntN(6) == 0 {
				l = LocalFile{SHA: "bad", Problem: "refused"}
			}
			in.Local[p] = l
		}
		if r.IntN(3) > 0 {
			in.Remote[p] = RemoteFile{ID: fmt.Sprintf("m%d", i+r.IntN(2)*10), SHA: shas[r.IntN(len(shas))]}
		}
	}
	return in
}

func TestPlanSyncNeverLoses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkNoLoss(t, randomInput(r))
	}
}

func FuzzPlanSync(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		checkNoLoss(t, randomInput(rand.New(rand.NewPCG(a, b))))
	})
}
