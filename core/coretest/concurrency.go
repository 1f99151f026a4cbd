package coretest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/trovehq/trove"
)

// --- concurrency --------------------------------------------------------

func testConcurrentOverlap(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	paths := []string{"/a", "/a/b", "/a/b/c", "/a/b/c/d", "/a/x", "/a/b/y", "/b", "/b/c", "/b/c/d", "/c/d", "/c"}
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(paths)*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			for i := range paths {
				p := paths[(i*7+w*5)%len(paths)]
				m, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: p, Content: p})
				switch trove.ErrorCode(err) {
				case "":
					mine = append(mine, m.ID)
				case trove.EPATHCONFLICT:
				default:
					errs <- fmt.Errorf("create %s: %w", p, err)
				}
				if len(mine) > 0 && i%2 == 1 {
					to := paths[(i*3+w)%len(paths)]
					_, err := e.svc.UpdateMemory(e.ctx, s.ID, mine[0], trove.UpdateMemoryParams{Path: &to})
					if c := trove.ErrorCode(err); c != "" && c != trove.EPATHCONFLICT {
						errs <- fmt.Errorf("rename to %s: %w", to, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{Limit: 100})
	got := itemPaths(items)
	if len(got) == 0 {
		t.Fatal("no memory was created")
	}
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			if trove.PathsOverlap(got[i], got[j]) {
				t.Fatalf("overlapping memories exist: %q and %q (all: %v)", got[i], got[j], got)
			}
		}
	}
}

func testConcurrentLimit(t *testing.T, open Opener) {
	const limit = 5
	e := newEnv(t, open, trove.Limits{MaxMemoriesPerStore: limit})
	s := e.store(t, "S")
	const workers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	errs := make(chan error, workers*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2 {
				_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/w%d/m%d", w, i)})
				switch trove.ErrorCode(err) {
				case "":
					mu.Lock()
					ok++
					mu.Unlock()
				case trove.EINVALID:
				default:
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{Limit: 100})
	if ok != limit || len(items) != limit {
		t.Fatalf("%d creates succeeded and %d memories exist; the limit is %d", ok, len(items), limit)
	}
}

func testConcurrentPrecondition(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/counter", "start")
	const workers, perWorker = 8, 4
	type ack struct {
		base, content, version string
	}
	var wg sync.WaitGroup
	acks := make(chan ack, workers*perWorker)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := 0
			for attempt := 0; done < perWorker; attempt++ {
				if attempt > 10000 {
					errs <- fmt.Errorf("worker %d starved", w)
					return
				}
				cur, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewBasic)
				if err != nil {
					errs <- err
					return
				}
				content := fmt.Sprintf("w%d-%d", w, done)
				u, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: &content, PreconditionSHA256: cur.SHA256})
				switch trove.ErrorCode(err) {
				case "":
					acks <- ack{cur.SHA256, content, u.VersionID}
					done++
				case trove.EPRECONDITION:
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(acks)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	byVersion := map[string]ack{}
	for a := range acks {
		if _, dup := byVersion[a.version]; dup {
			t.Fatalf("two acknowledged writes share version %s", a.version)
		}
		byVersion[a.version] = a
	}
	if len(byVersion) != workers*perWorker {
		t.Fatalf("%d acknowledged writes, want %d", len(byVersion), workers*perWorker)
	}
	vs := e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: m.ID, View: trove.ViewFull})
	if len(vs) != workers*perWorker+1 {
		t.Fatalf("%d versions for %d acknowledged writes (+1 create)", len(vs), workers*perWorker)
	}
	// Oldest first: each modification was based on the previous content.
	for i := len(vs) - 2; i >= 0; i-- {
		v, prev := vs[i], vs[i+1]
		a, ok := byVersion[v.ID]
		if !ok {
			t.Fatalf("version %s was not acknowledged to any writer", v.ID)
		}
		if *v.Content != a.content {
			t.Fatalf("version %s holds %q, the writer wrote %q", v.ID, *v.Content, a.content)
		}
		if a.base != *prev.SHA256 {
			t.Fatalf("lost update: version %s was written over %s, but its writer read a different content", v.ID, prev.ID)
		}
	}
	final, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewFull)
	if err != nil {
		t.Fatal(err)
	}
	if final.VersionID != vs[0].ID || *final.Content != *vs[0].Content {
		t.Fatalf("final memory %+v is not the last acknowledged write %+v", final, vs[0])
	}
}

func testConcurrentMetadataMerge(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	const workers = 12
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := fmt.Sprintf("k%02d", w)
			if _, err := e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: map[string]*string{k: ptr("v")}}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := e.svc.GetStore(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Metadata) != workers {
		t.Fatalf("metadata after %d concurrent merge patches = %v: an update was lost", workers, got.Metadata)
	}
}
