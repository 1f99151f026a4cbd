package memtool

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// pendingEdit is one str_replace or insert: how it changes a file's
// content, and, once run, its result.
type pendingEdit struct {
	cmd     string
	missing func() Result                          // the result when the file does not exist
	apply   func(content string) (string, *Result) // the new content, or why the edit does not apply
	res     *Result                                // nil once written
	done    chan struct{}                          // closed once res is final
}

// editQueue holds, per file, the edits waiting for its lock (see
// Tool.editQueued).
type editQueue struct {
	mu      sync.Mutex
	pending map[string][]*pendingEdit
}

// add queues e on name.
func (q *editQueue) add(name string, e *pendingEdit) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = map[string][]*pendingEdit{}
	}
	q.pending[name] = append(q.pending[name], e)
}

// withdraw removes e from name's queue and reports whether it was there
// (false: a lock holder has taken it).
func (q *editQueue) withdraw(name string, e *pendingEdit) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.pending[name]
	i := slices.Index(b, e)
	if i < 0 {
		return false
	}
	if b = slices.Delete(b, i, i+1); len(b) == 0 {
		delete(q.pending, name)
	} else {
		q.pending[name] = b
	}
	return true
}

// take removes and returns the edits waiting on name.
func (q *editQueue) take(name string) []*pendingEdit {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.pending[name]
	delete(q.pending, name)
	return b
}

// editQueued runs the edit e on p under p's exclusive lock and returns its
// result (nil when written). With Options.CombineEdits, every edit of p
// that is waiting for the lock when a caller gets it is run with it, in
// the order they arrived, and written as one conditional write: the
// callers behind it find theirs done. Each edit still applies to the
// content the edits before it left, and gets its own result, as if they
// had run one after the other.
func (t *Tool) editQueued(ctx context.Context, p Path, e *pendingEdit) *Result {
	if !t.opt.CombineEdits {
		unlock, res := t.lock(ctx, true, p.Rel)
		if res != nil {
			return res
		}
		defer unlock()
		t.editAll(ctx, p, []*pendingEdit{e})
		return e.res
	}
	e.done = make(chan struct{})
	t.edits.add(p.Rel, e)
	unlock, res := t.lock(ctx, true, p.Rel)
	if res != nil {
		// Cancelled while waiting: withdraw the edit, unless a lock
		// holder has taken it already (then it is being written).
		if t.edits.withdraw(p.Rel, e) {
			return res
		}
		<-e.done
		return e.res
	}
	defer unlock()
	// Taken by the holder before us, who wrote it before releasing the
	// lock; or ours to run, with whatever else is waiting.
	if b := t.edits.take(p.Rel); len(b) > 0 {
		wctx := ctx
		if len(b) > 1 || b[0] != e {
			// Others' edits ride on this call: its cancellation must not
			// fail them halfway (the write is bounded by the FS's own
			// timeouts).
			wctx = context.WithoutCancel(ctx)
		}
		t.editAll(wctx, p, b)
		for _, o := range b {
			close(o.done)
		}
	}
	<-e.done
	return e.res
}

// editAll runs the read-modify-write of the edits b of p (the caller holds
// p's exclusive lock): it reads the file, applies each edit in turn to the
// content the ones before it left (an edit that does not apply leaves it
// unchanged and gets the error result saying why), and writes the result
// once, conditionally on the version read. When the write loses a race
// with another writer (ErrConflict, or the file vanished), editAll
// re-reads the file and re-applies the edits on the fresh content, up to
// Options.EditAttempts times in all with a short random backoff; nothing
// is ever written without the version precondition. An edit that no
// longer applies to the fresh content gets a result saying the file
// changed under the command and to view it again. When the FS keeps a copy
// of the file (CopyFS), the edits are first tried on the copy (see
// editCopy). Each edit's res is nil when its change was written.
func (t *Tool) editAll(ctx context.Context, p Path, b []*pendingEdit) {
	if t.editCopy(ctx, p, b) {
		return
	}
	// fold applies the edits in turn; changed says whether any applied.
	fold := func(c string) (string, bool) {
		changed := false
		for _, e := range b {
			u, r := e.apply(c)
			e.res = r
			if r == nil {
				c, changed = u, true
			}
		}
		return c, changed
	}
	// fail gives every edit the result r(e).
	fail := func(r func(e *pendingEdit) Result) {
		for _, e := range b {
			res := r(e)
			e.res = &res
		}
	}
	for attempt := 1; ; attempt++ {
		data, ver, err := t.fs.ReadFile(ctx, p.Rel, t.opt.MaxReadSize)
		switch {
		case err != nil:
			expected := true
			fail(func(e *pendingEdit) Result {
				res, ok := t.readEditError(p, e.cmd, err, e.missing)
				expected = expected && ok
				return res
			})
			if !expected || attempt == 1 {
				return
			}
		case !isText(data):
			fail(func(e *pendingEdit) Result { return notTextError(p, len(data), e.cmd) })
		default:
			updated, changed := fold(string(data))
			if !changed {
				break
			}
			err := t.writeTouch(ctx, p.Rel, []byte(updated), ver)
			if err == nil {
				t.changedMeanwhile(p, b, attempt)
				return
			}
			lost := errors.Is(err, ErrConflict) || errors.Is(err, ErrNotExist)
			if !lost || attempt >= t.opt.EditAttempts || !backoff(ctx, attempt) {
				fail(func(e *pendingEdit) Result { return t.editWriteError(p, e.cmd, err) })
				return
			}
			continue
		}
		t.changedMeanwhile(p, b, attempt)
		return
	}
}

// changedMeanwhile rewrites, after a lost race (attempt > 1), the result of
// each edit that did not apply: it did apply when the command started, to
// content another writer has since changed.
func (t *Tool) changedMeanwhile(p Path, b []*pendingEdit, attempt int) {
	if attempt == 1 {
		return
	}
	for _, e := range b {
		if e.res != nil {
			res := errorText("Error: " + p.Raw + " was changed by another writer while this " + e.cmd +
				" ran, and the edit no longer applies to the new content: " + e.res.Text() +
				" Nothing was written; view the file again and retry.")
			e.res = &res
		}
	}
}

// editCopy tries the edits b on the FS's copy of the file (CopyFS),
// written conditionally on the copy's version. It returns false, having
// written nothing, when there is no copy, an edit does not apply to it or
// the write was refused because the file changed: the caller then edits
// the fresh content. Otherwise every edit's res is set (nil when written).
func (t *Tool) editCopy(ctx context.Context, p Path, b []*pendingEdit) bool {
	c, ok := t.fs.(CopyFS)
	if !ok {
		return false
	}
	data, ver, ok := c.Copy(p.Rel)
	if !ok || ver == "" || (t.opt.MaxReadSize >= 0 && int64(len(data)) > t.opt.MaxReadSize) || !isText(data) {
		return false
	}
	updated := string(data)
	for _, e := range b {
		u, r := e.apply(updated)
		if r != nil {
			return false
		}
		updated = u
	}
	err := t.writeTouch(ctx, p.Rel, []byte(updated), ver)
	switch {
	case err == nil:
		for _, e := range b {
			e.res = nil
		}
		return true
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotExist):
		return false
	}
	for _, e := range b {
		r := t.editWriteError(p, e.cmd, err)
		e.res = &r
	}
	return true
}
