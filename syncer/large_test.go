package syncer_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// seed creates n memories "/dNN/fNNNNN.md" with 64 writers (group commit).
func (e *env) seed(n int) {
	e.t.Helper()
	start := time.Now()
	defer func() { e.t.Logf("seeded %d memories in %v", n, time.Since(start)) }()
	const writers = 64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += writers {
				_, err := e.svc.CreateMemory(e.ctx, e.storeID, trove.CreateMemoryParams{
					Path: fmt.Sprintf("/d%02d/f%05d.md", i%50, i), Content: fmt.Sprintf("# memory %d\nsome remembered fact\n", i)})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		e.t.Fatal(err)
	}
}

// TestLargeStoreNoChangePass: 10,000 memories (2,000 with -short, 1,000 with -race). After the
// initial download, a pass with nothing changed reads no memory's content,
// writes nothing, lists sha-only pages, hashes no file, and is quick.
func TestLargeStoreNoChangePass(t *testing.T) {
	n := 10000
	switch {
	case raceEnabled: // SQLite (pure Go) is slow under the race detector
		n = 1000
	case testing.Short():
		n = 2000
	}
	e := newEnv(t)
	e.seed(n)
	cs := &counting{Services: e.svc}
	en := e.engine("dir", func(o *syncer.Options) {
		o.Services = cs
		o.StatTrust = time.Nanosecond // files downloaded a moment ago may be trusted at once
	})
	start := time.Now()
	rep := e.sync(en)
	t.Logf("initial download of %d memories: %v, %d list calls, %d gets", n, time.Since(start), cs.count("ListMemories"), cs.count("GetMemory"))
	if rep.Counts[syncer.KindDownload] != n {
		t.Fatalf("downloaded %d, want %d", rep.Counts[syncer.KindDownload], n)
	}
	if got := len(readDir(t, en.Dir())); got != n {
		t.Fatalf("%d local files, want %d", got, n)
	}
	if g := cs.count("GetMemory"); g > 0 {
		t.Errorf("initial download made %d GetMemory calls; a full listing should fetch contents in pages", g)
	}

	cs.reset()
	start = time.Now()
	rep = e.sync(en)
	took := time.Since(start)
	t.Logf("no-change pass over %d files: %v, hashed %d, %d list calls", n, took, rep.Hashed, cs.count("ListMemories"))
	if cs.contentReads.Load() != 0 || cs.writes.Load() != 0 || cs.count("GetMemory") != 0 {
		t.Errorf("no-change pass touched content: %d content reads, %d writes, %d gets", cs.contentReads.Load(), cs.writes.Load(), cs.count("GetMemory"))
	}
	if want := int64((n + 99) / 100); cs.count("ListMemories") != want {
		t.Errorf("no-change pass made %d list calls, want %d sha-only pages", cs.count("ListMemories"), want)
	}
	if len(rep.Counts) != 0 || rep.Hashed != 0 {
		t.Errorf("no-change pass did %v and hashed %d files, want nothing", rep.Counts, rep.Hashed)
	}
	if took > 15*time.Second {
		t.Errorf("no-change pass took %v", took)
	}
}
