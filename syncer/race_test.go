package syncer_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// raceOnce lets another writer get in just before the engine's first
// mutating call of the given kind, after the engine listed and planned.
type raceOnce struct {
	trove.Services
	before func()
	on     string // "create" or "update"
}

func (r *raceOnce) fire(kind string) {
	if r.before != nil && r.on == kind {
		f := r.before
		r.before = nil
		f()
	}
}

func (r *raceOnce) CreateMemory(ctx context.Context, s string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	r.fire("create")
	return r.Services.CreateMemory(ctx, s, p)
}

func (r *raceOnce) UpdateMemory(ctx context.Context, s, id string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	r.fire("update")
	return r.Services.UpdateMemory(ctx, s, id, p)
}

// TestPreconditionRaces: an upload or a create that loses a race (409) is
// re-planned in the same pass: merged when clean, else a conflict copy.
func TestPreconditionRaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		base       map[string]string
		on         string
		local      map[string]string
		theirs     map[string]string // written just before the engine's call
		want       map[string]string
		wantMerged []string
	}{
		{name: "update race, clean merge",
			base: map[string]string{"/n.md": "a\nb\nc\n"}, on: "update",
			local:      map[string]string{"/n.md": "A\nb\nc\n"},
			theirs:     map[string]string{"/n.md": "a\nb\nC\n"},
			want:       map[string]string{"/n.md": "A\nb\nC\n"},
			wantMerged: []string{"/n.md"}},
		{name: "update race, conflict copy",
			base: map[string]string{"/n.md": "a\n"}, on: "update",
			local:  map[string]string{"/n.md": "mine\n"},
			theirs: map[string]string{"/n.md": "theirs\n"},
			want:   map[string]string{"/n.md": "theirs\n", copyName("/n", ".md"): "mine\n"}},
		{name: "create race (409 path conflict), conflict copy",
			base: map[string]string{}, on: "create",
			local:  map[string]string{"/n.md": "mine\n"},
			theirs: map[string]string{"/n.md": "theirs\n"},
			want:   map[string]string{"/n.md": "theirs\n", copyName("/n", ".md"): "mine\n"}},
		{name: "create race with the same bytes, adopt",
			base: map[string]string{}, on: "create",
			local:  map[string]string{"/n.md": "same\n"},
			theirs: map[string]string{"/n.md": "same\n"},
			want:   map[string]string{"/n.md": "same\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for p, c := range tc.base {
				e.rwrite(p, c)
			}
			r := &raceOnce{Services: e.svc, on: tc.on}
			en := e.engine("dir", func(o *syncer.Options) { o.Services = r })
			e.sync(en)
			for p, c := range tc.local {
				writeFile(t, en.Dir(), p, c)
			}
			r.before = func() {
				for p, c := range tc.theirs {
					e.rwrite(p, c)
				}
			}
			rep := e.sync(en)
			if rep.Rounds < 2 {
				t.Errorf("rounds = %d: the race was not re-planned in the same pass", rep.Rounds)
			}
			if diff := cmp.Diff(tc.want, readDir(t, en.Dir())); diff != "" {
				t.Errorf("local (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, e.remote()); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMerged, rep.Merged); diff != "" {
				t.Errorf("merged: %s", diff)
			}
		})
	}
}

// writeDuringFetch plays an agent writing the local file while the engine is
// fetching the store's version of it (after the scan, before the write).
type writeDuringFetch struct {
	trove.Services
	hook func()
}

func (w *writeDuringFetch) GetMemory(ctx context.Context, s, id string, v trove.View) (*trove.Memory, error) {
	if w.hook != nil {
		h := w.hook
		w.hook = nil
		h()
	}
	return w.Services.GetMemory(ctx, s, id, v)
}

// TestPullNeverOverwritesAFreshLocalWrite: a download re-checks the local
// file just before replacing it; a write that landed after the scan is kept
// (here as a conflict copy, since the store changed too).
func TestPullNeverOverwritesAFreshLocalWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.rwrite("/n.md", "a\n")
	w := &writeDuringFetch{Services: e.svc}
	en := e.engine("dir", func(o *syncer.Options) { o.Services = w })
	e.sync(en)
	e.rwrite("/n.md", "theirs\n")
	w.hook = func() { writeFile(t, en.Dir(), "/n.md", "mine\n") }
	rep := e.sync(en)
	if rep.Rounds < 2 {
		t.Errorf("rounds = %d, want a re-plan", rep.Rounds)
	}
	want := map[string]string{"/n.md": "theirs\n", copyName("/n", ".md"): "mine\n"}
	if diff := cmp.Diff(want, readDir(t, en.Dir())); diff != "" {
		t.Errorf("local (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.remote()); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
}
