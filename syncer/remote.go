package syncer

import (
	"context"
	"path"
	"sync"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storetree"
)

// listRemote lists every memory of the store: sha only, or, when the
// manifest is empty (a first download, where every memory is likely to be
// pulled), with contents. Into an empty directory (streamDownloads) each
// page's memories are written while the next page is fetched; otherwise
// the contents are kept for the round's downloads (up to prefetchBudget
// bytes; the rest is fetched as usual).
func (e *Engine) listRemote(ctx context.Context, scan *Scan) (map[string]RemoteFile, error) {
	e.pre = nil
	view := trove.ViewBasic
	var each func(*trove.Memory)
	wait := func() {}
	if len(e.man.Entries) == 0 {
		view = trove.ViewFull
		if len(scan.Files) == 0 && len(scan.Blocked) == 0 && len(scan.Skipped) == 0 {
			each, wait = e.streamDownloads(ctx, scan)
		} else {
			held := 0
			e.pre = map[string]*trove.Memory{}
			each = func(m *trove.Memory) {
				if m.Content != nil && held+m.SizeBytes <= prefetchBudget {
					c := *m
					e.pre[m.ID] = &c
					held += m.SizeBytes
				}
			}
		}
	}
	all, err := e.tree.ReloadView(ctx, view, each) // the index holds this snapshot, no more
	wait()
	if err != nil {
		return nil, err
	}
	out := make(map[string]RemoteFile, len(all))
	for i := range all {
		m := &all[i]
		out[m.Path] = RemoteFile{ID: m.ID, SHA: m.SHA256, Size: m.SizeBytes}
	}
	return out, nil
}

// streamDownloads is the first download into an empty directory, in step
// with the listing: with no manifest entry and no local file, the plan of
// every listed memory (but those round leaves out: unrepresentable paths,
// temp-file names) is one download, so each is written as its page
// arrives, streamWriters at a time (up to streamBuffer listed memories
// wait for a writer, so the next page is fetched while the disk catches
// up), and recorded as agreed (manifest entry) and as seen by the scan (so the round's plan finds nothing left to
// do for it). A memory whose write fails is left to the round's plan, which
// retries it as a download and reports what fails again. send gives a
// memory to the writers; wait returns once every write is done.
func (e *Engine) streamDownloads(ctx context.Context, scan *Scan) (send func(*trove.Memory), wait func()) {
	work := make(chan *trove.Memory, streamBuffer)
	var wg sync.WaitGroup
	kick, stopFlush := func() {}, func() {}
	if !syncEachFile {
		kick, stopFlush = e.flushBehind()
	}
	for range streamWriters {
		wg.Go(func() {
			for m := range work {
				if ctx.Err() != nil || m.Content == nil {
					continue
				}
				b := []byte(*m.Content)
				key, err := e.writeLocal(m.Path, b, "")
				if err != nil {
					continue
				}
				e.agree(m.Path, m.ID, m.SHA256, nil, &key)
				kick()
				e.amu.Lock()
				en := e.man.Entries[m.Path]
				scan.Files[m.Path] = LocalFile{SHA: m.SHA256, Size: int64(len(b)), Stat: key, HashedAt: en.HashedAt}
				e.rep.count(KindDownload)
				e.amu.Unlock()
			}
		})
	}
	send = func(m *trove.Memory) {
		if storetree.LocalProblem(m.Path) != "" || isTempName(path.Base(m.Path)) {
			return
		}
		work <- m
	}
	return send, func() { close(work); wg.Wait(); stopFlush() }
}

// flushBehind flushes the synced directory's file system in the background
// while a first download writes, one flush after another as long as kick
// reports new writes, so that the flush persist makes before the manifest
// names the files (the one that makes them durable) finds little left to
// write: the disk works while the listing is fetched. stop ends the loop
// and waits for its last flush. Errors are left to persist's flush.
func (e *Engine) flushBehind() (kick, stop func()) {
	wrote := make(chan struct{}, 1)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-wrote:
			}
			_ = syncFS(e.o.Dir)
		}
	}()
	kick = func() {
		select {
		case wrote <- struct{}{}:
		default:
		}
	}
	return kick, func() { close(done); <-finished }
}

// prefetch fetches the contents the round's downloads need: with a full
// listing when there are many, else one GetMemory each, a few at a time.
func (e *Engine) prefetch(ctx context.Context, acts []Action) {
	need := map[string]bool{}
	for _, a := range acts {
		if (a.Kind == KindDownload || a.Kind == KindRestore) && a.MemoryID != "" && a.RemoteSHA != "" {
			need[a.MemoryID] = true
		}
	}
	got := map[string]*trove.Memory{}
	defer func() { e.pre = got }()
	held := 0                  // content bytes held in memory
	for id, m := range e.pre { // kept by the listing
		if need[id] {
			got[id] = m
			held += m.SizeBytes
			delete(need, id)
		}
	}
	if len(need) == 0 {
		return
	}
	if len(need) > 64 && len(need)*4 > len(e.remote) {
		// Past the budget the listing stops; the rest is fetched one by
		// one. A failed listing leaves the downloads to fetch one by one.
		_ = e.tree.Walk(ctx, trove.ViewFull, func(m *trove.Memory) bool {
			if need[m.ID] {
				got[m.ID] = m
				held += m.SizeBytes
			}
			return held <= prefetchBudget
		})
		return
	}
	ids := make(chan string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range fetchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				mu.Lock()
				over := held > prefetchBudget
				mu.Unlock()
				if over {
					continue // fetched at apply time
				}
				m, err := e.tree.Get(ctx, id, trove.ViewFull)
				if err == nil {
					mu.Lock()
					got[id] = m
					held += m.SizeBytes
					mu.Unlock()
				}
			}
		}()
	}
	for id := range need {
		ids <- id
	}
	close(ids)
	wg.Wait()
}

// fetch returns the memory's current content (prefetched or fetched now);
// errRace when the memory is gone or changed meanwhile.
func (e *Engine) fetch(ctx context.Context, id string) (*trove.Memory, error) {
	e.amu.Lock()
	m := e.pre[id]
	delete(e.pre, id)
	e.amu.Unlock()
	if m != nil && m.Content != nil {
		return m, nil
	}
	m, err := e.tree.Get(ctx, id, trove.ViewFull)
	if isRace(err) {
		return nil, errRace
	}
	if err != nil {
		return nil, err
	}
	if m.Content == nil {
		return nil, trove.Errorf(trove.EINTERNAL, "store returned no content for %s", id)
	}
	return m, nil
}
