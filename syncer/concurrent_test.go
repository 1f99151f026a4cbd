package syncer_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// TestTwoEnginesAndAPIWriters runs two sync engines on one store while an
// API client writes too. Each engine's goroutine edits and creates local
// files and syncs after each write; the API writer updates memories without
// preconditions. At the end both directories equal the store, and every
// write made anywhere is the current content of a memory or one of its
// versions (conflict copies are memories too): nothing was lost.
func TestTwoEnginesAndAPIWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const files, iters = 8, 25
	for i := range files {
		e.rwrite(fmt.Sprintf("/f%d.md", i), fmt.Sprintf("base %d\n", i))
	}
	engines := []*syncer.Engine{
		e.engine("a", func(o *syncer.Options) { o.SessionID = "sesn_AAAAAAAAAAAA" }),
		e.engine("b", func(o *syncer.Options) { o.SessionID = "sesn_BBBBBBBBBBBB" }),
	}
	for _, en := range engines {
		e.sync(en)
	}

	var mu sync.Mutex
	var written []string
	record := func(s string) {
		mu.Lock()
		written = append(written, s)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for n, en := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(n), 1))
			for i := range iters {
				var p, c string
				if i%5 == 4 {
					p, c = fmt.Sprintf("/new-%d-%d.md", n, i), fmt.Sprintf("engine %d new %d\n", n, i)
				} else {
					p, c = fmt.Sprintf("/f%d.md", r.IntN(files)), fmt.Sprintf("engine %d write %d\n", n, i)
				}
				writeFile(t, en.Dir(), p, c)
				record(c)
				rep, err := en.Sync(e.ctx)
				if err != nil {
					t.Errorf("engine %d: %v", n, err)
					return
				}
				if len(rep.Errors) > 0 {
					t.Errorf("engine %d: %+v", n, rep.Errors)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(9, 9))
		for i := range iters {
			m := e.memory(fmt.Sprintf("/f%d.md", r.IntN(files)))
			c := fmt.Sprintf("api write %d\n", i)
			if _, err := e.svc.UpdateMemory(e.ctx, e.storeID, m.ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
				t.Errorf("api: %v", err)
				return
			}
			record(c)
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}

	// Settle: alternate passes until neither engine has anything to do.
	for round := 0; ; round++ {
		busy := false
		for _, en := range engines {
			rep := e.sync(en)
			for _, n := range rep.Counts {
				busy = busy || n > 0
			}
		}
		if !busy {
			break
		}
		if round == 5 {
			t.Fatal("engines did not settle")
		}
	}
	remote := e.remote()
	for _, en := range engines {
		if diff := cmp.Diff(remote, readDir(t, en.Dir())); diff != "" {
			t.Errorf("%s differs from the store (-store +dir):\n%s", en.Dir(), diff)
		}
	}

	seen := map[string]bool{}
	for _, c := range remote {
		seen[c] = true
	}
	cursor := ""
	for {
		pg, err := e.svc.ListVersions(e.ctx, e.storeID, trove.ListVersionsParams{Limit: 100, View: trove.ViewFull, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range pg.Data {
			if v.Content != nil {
				seen[*v.Content] = true
			}
		}
		if pg.NextPage == "" {
			break
		}
		cursor = pg.NextPage
	}
	for _, w := range written {
		if !seen[w] {
			t.Errorf("write %q was lost: not a memory, not a version", w)
		}
	}
	t.Logf("%d writes, %d memories at the end", len(written), len(remote))
}
