package memtool

import (
	"context"
	"strings"
	"sync"
)

// lockTable grants shared or exclusive locks on path subtrees. Two requests
// conflict when their names overlap (one equals the other or is an ancestor
// of it; "" is the ancestor of everything) and at least one is exclusive.
// A request for several names is granted all at once or not at all, so
// multi-path operations (rename) cannot deadlock whatever the order of their
// names. Requests are served in FIFO order among conflicting ones, so a
// stream of readers cannot starve a writer.
type lockTable struct {
	mu      sync.Mutex
	held    []*lockReq
	waiting []*lockReq
}

type lockReq struct {
	names     []string
	exclusive bool
	ready     chan struct{}
}

func overlaps(a, b string) bool {
	if a == "" || b == "" || a == b {
		return true
	}
	if len(a) < len(b) {
		return strings.HasPrefix(b, a) && b[len(a)] == '/'
	}
	return strings.HasPrefix(a, b) && a[len(b)] == '/'
}

func (r *lockReq) conflicts(o *lockReq) bool {
	if !r.exclusive && !o.exclusive {
		return false
	}
	for _, a := range r.names {
		for _, b := range o.names {
			if overlaps(a, b) {
				return true
			}
		}
	}
	return false
}

// lock blocks until the names are granted (or ctx is done) and returns the
// function that releases them.
func (t *lockTable) lock(ctx context.Context, exclusive bool, names ...string) (func(), error) {
	r := &lockReq{names: names, exclusive: exclusive, ready: make(chan struct{})}
	t.mu.Lock()
	t.waiting = append(t.waiting, r)
	t.grantLocked()
	t.mu.Unlock()
	select {
	case <-r.ready:
	case <-ctx.Done():
		t.mu.Lock()
		select {
		case <-r.ready: // granted meanwhile: release it
			t.mu.Unlock()
			t.release(r)
		default:
			t.waiting = removeReq(t.waiting, r)
			t.grantLocked()
			t.mu.Unlock()
		}
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { t.release(r) }) }, nil
}

func (t *lockTable) release(r *lockReq) {
	t.mu.Lock()
	t.held = removeReq(t.held, r)
	t.grantLocked()
	t.mu.Unlock()
}

// grantLocked grants every waiting request that conflicts neither with a
// held lock nor with an earlier request that is still waiting.
func (t *lockTable) grantLocked() {
	var kept []*lockReq
	for _, w := range t.waiting {
		ok := true
		for _, h := range t.held {
			if w.conflicts(h) {
				ok = false
				break
			}
		}
		for _, e := range kept {
			if !ok {
				break
			}
			if w.conflicts(e) {
				ok = false
			}
		}
		if ok {
			t.held = append(t.held, w)
			close(w.ready)
		} else {
			kept = append(kept, w)
		}
	}
	t.waiting = kept
}

func removeReq(s []*lockReq, r *lockReq) []*lockReq {
	for i, x := range s {
		if x == r {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
