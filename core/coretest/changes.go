package coretest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/trovehq/trove"
)

// --- change feed ----------------------------------------------------------

// allChanges pages through a store's changes after `after` with limit.
func (e *env) allChanges(t *testing.T, ctx context.Context, storeID string, after int64, limit int) ([]trove.Change, int64) {
	t.Helper()
	var out []trove.Change
	for range 1000 {
		b, err := e.svc.ListChanges(ctx, storeID, trove.ListChangesParams{After: after, Limit: limit})
		if err != nil {
			t.Fatalf("ListChanges(after %d): %v", after, err)
		}
		if len(b.Changes) > limit {
			t.Fatalf("ListChanges returned %d changes with limit %d", len(b.Changes), limit)
		}
		if b.Cursor < after {
			t.Fatalf("ListChanges moved the cursor back from %d to %d", after, b.Cursor)
		}
		out = append(out, b.Changes...)
		after = b.Cursor
		if !b.More {
			return out, after
		}
	}
	t.Fatal("ListChanges: too many pages")
	return nil, 0
}

func testChanges(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	other := e.store(t, "other")
	a := e.memory(t, s.ID, "/d/a", "a1")
	b := e.memory(t, s.ID, "/b", "b1")
	e.memory(t, other.ID, "/x", "x")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("a22")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("a22")}); err != nil {
		t.Fatal(err) // a no-op: no version, no change
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, b.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RenameDirectory(e.ctx, s.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"}); err != nil {
		t.Fatal(err)
	}
	key := &trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}
	want := []trove.Change{
		{Seq: 1, MemoryID: a.ID, Operation: trove.OpCreated, Path: "/d/a", SHA256: sha("a1"), SizeBytes: 2, CreatedBy: key},
		{Seq: 2, MemoryID: b.ID, Operation: trove.OpCreated, Path: "/b", SHA256: sha("b1"), SizeBytes: 2, CreatedBy: key},
		{Seq: 3, MemoryID: a.ID, Operation: trove.OpModified, Path: "/d/a", SHA256: sha("a22"), SizeBytes: 3, CreatedBy: key},
		{Seq: 4, MemoryID: b.ID, Operation: trove.OpDeleted, Path: "/b", CreatedBy: key},
		{Seq: 5, MemoryID: a.ID, Operation: trove.OpModified, Path: "/e/a", SHA256: sha("a22"), SizeBytes: 3, CreatedBy: key},
	}
	ignore := cmpopts.IgnoreFields(trove.Change{}, "VersionID", "CreatedAt")
	for _, limit := range []int{1, 2, 5, 100} {
		got, cursor := e.allChanges(t, e.ctx, s.ID, 0, limit)
		if diff := cmp.Diff(want, got, ignore); diff != "" {
			t.Fatalf("limit %d: changes (-want +got):\n%s", limit, diff)
		}
		if cursor != 5 {
			t.Fatalf("limit %d: final cursor %d, want 5", limit, cursor)
		}
	}
	// Each change names its version.
	vs := e.allVersions(t, s.ID, trove.ListVersionsParams{})
	byID := map[string]trove.MemoryVersion{}
	for _, v := range vs {
		byID[v.ID] = v
	}
	got, _ := e.allChanges(t, e.ctx, s.ID, 0, 100)
	for _, c := range got {
		v, ok := byID[c.VersionID]
		if !ok || v.MemoryID != c.MemoryID || v.Operation != c.Operation || !v.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("change %d names version %s (%+v)", c.Seq, c.VersionID, v)
		}
	}
	// A cursor in the middle resumes there; one at or past the end lists
	// nothing and keeps the cursor.
	mid, cursor := e.allChanges(t, e.ctx, s.ID, 3, 100)
	if diff := cmp.Diff(want[3:], mid, ignore); diff != "" || cursor != 5 {
		t.Fatalf("after 3 (cursor %d, -want +got):\n%s", cursor, diff)
	}
	for _, after := range []int64{5, 99} {
		bt, err := e.svc.ListChanges(e.ctx, s.ID, trove.ListChangesParams{After: after})
		if err != nil || len(bt.Changes) != 0 || bt.More || bt.Cursor != after || bt.Head != 5 {
			t.Fatalf("after %d: %+v, %v", after, bt, err)
		}
	}
	// Redaction adds no change; the redacted version shows without path.
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, got[0].VersionID); err != nil {
		t.Fatal(err)
	}
	red, cursor := e.allChanges(t, e.ctx, s.ID, 0, 100)
	if cursor != 5 || len(red) != 5 || !red[0].Redacted || red[0].Path != "" || red[0].SHA256 != "" || red[0].SizeBytes != 0 || red[1].Redacted {
		t.Fatalf("after redaction: cursor %d, %+v", cursor, red)
	}
	// The other store's history is its own.
	oc, cursor := e.allChanges(t, e.ctx, other.ID, 0, 100)
	if len(oc) != 1 || oc[0].Seq != 1 || oc[0].Path != "/x" || cursor != 1 {
		t.Fatalf("other store: cursor %d, %+v", cursor, oc)
	}

	_, err := e.svc.ListChanges(e.ctx, s.ID, trove.ListChangesParams{After: -1})
	wantCode(t, "negative after", err, trove.EINVALID)
	_, err = e.svc.ListChanges(e.ctx, s.ID, trove.ListChangesParams{Limit: 101})
	wantCode(t, "limit 101", err, trove.EINVALID)
	_, err = e.svc.ListChanges(e.ctx, "memstore_nope", trove.ListChangesParams{})
	wantCode(t, "unknown store", err, trove.ENOTFOUND)
	_, err = e.svc.ListChanges(context.Background(), s.ID, trove.ListChangesParams{})
	wantCode(t, "no principal", err, trove.EUNAUTHENTICATED)
}

func testChangesWait(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	long, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()

	// Nothing yet: the wait ends with the context's own error.
	short, cancelShort := context.WithTimeout(e.ctx, 20*time.Millisecond)
	_, err := e.svc.WaitChanges(short, s.ID, 0)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitChanges on a quiet store: %v, want context.DeadlineExceeded", err)
	}

	// A write wakes a waiter with the new head.
	type result struct {
		head int64
		err  error
	}
	waited := make(chan result, 1)
	go func() {
		h, err := e.svc.WaitChanges(long, s.ID, 0)
		waited <- result{h, err}
	}()
	m := e.memory(t, s.ID, "/a", "1")
	if r := <-waited; r.err != nil || r.head != 1 {
		t.Fatalf("WaitChanges after a write: %d, %v", r.head, r.err)
	}
	// Already past the cursor: at once.
	if h, err := e.svc.WaitChanges(long, s.ID, 0); err != nil || h != 1 {
		t.Fatalf("WaitChanges(0) with head 1: %d, %v", h, err)
	}
	for i := range 3 {
		go func() {
			h, err := e.svc.WaitChanges(long, s.ID, int64(1+i))
			waited <- result{h, err}
		}()
		if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr(string(rune('2' + i)))}); err != nil {
			t.Fatal(err)
		}
		if r := <-waited; r.err != nil || r.head != int64(2+i) {
			t.Fatalf("round %d: %d, %v", i, r.head, r.err)
		}
	}

	// Deleting the store ends a wait with ENOTFOUND.
	go func() {
		h, err := e.svc.WaitChanges(long, s.ID, 4)
		waited <- result{h, err}
	}()
	if err := e.svc.DeleteStore(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	wantCode(t, "WaitChanges on a deleted store", r.err, trove.ENOTFOUND)

	_, err = e.svc.WaitChanges(long, s.ID, -1)
	wantCode(t, "negative after", err, trove.EINVALID)
}

// testChangesScope: the feed is read like versions: a session sees its
// attached stores only, another workspace sees nothing.
func testChangesScope(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	mine := e.store(t, "mine")
	theirs := e.store(t, "theirs")
	e.memory(t, mine.ID, "/a", "a")
	e.memory(t, theirs.ID, "/secret", "s")
	sctx, _, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: mine.ID, Access: trove.AccessReadOnly})
	long, cancel := context.WithTimeout(sctx, 30*time.Second)
	defer cancel()

	if got, _ := e.allChanges(t, sctx, mine.ID, 0, 100); len(got) != 1 || got[0].Path != "/a" {
		t.Fatalf("session's own store: %+v", got)
	}
	if h, err := e.svc.WaitChanges(long, mine.ID, 0); err != nil || h != 1 {
		t.Fatalf("session WaitChanges on its store: %d, %v", h, err)
	}
	_, err := e.svc.ListChanges(sctx, theirs.ID, trove.ListChangesParams{})
	wantCode(t, "session ListChanges on an unattached store", err, trove.ENOTFOUND)
	_, err = e.svc.WaitChanges(long, theirs.ID, 0)
	wantCode(t, "session WaitChanges on an unattached store", err, trove.ENOTFOUND)
	_, err = e.svc.ListChanges(e.ctxB, theirs.ID, trove.ListChangesParams{})
	wantCode(t, "other workspace ListChanges", err, trove.ENOTFOUND)
	_, err = e.svc.WaitChanges(e.ctxB, theirs.ID, 0)
	wantCode(t, "other workspace WaitChanges", err, trove.ENOTFOUND)
}
