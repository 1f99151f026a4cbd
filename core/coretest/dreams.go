package coretest

import (
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// --- dreams ---------------------------------------------------------------

func testDreams(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{MaxDreamSessions: 3})
	st := e.store(t, "notes")
	_, s1, _ := e.sessionCtx(t)
	_, s2, _ := e.sessionCtx(t)
	d, err := e.svc.CreateDream(e.ctx, trove.CreateDreamParams{StoreID: st.ID, SessionIDs: []string{s2.ID, s1.ID}, Model: "claude-sonnet-4-6"})
	if err != nil {
		t.Fatalf("CreateDream: %v", err)
	}
	if !strings.HasPrefix(d.ID, trove.PrefixDream) || d.Status != trove.DreamPending || d.OutputBehavior != trove.OutputCreateNew ||
		d.ModelSpeed != "standard" || d.SessionIDs[0] != min(s1.ID, s2.ID) || d.OutputStoreID != "" || d.SessionID != "" ||
		d.Usage != (trove.DreamUsage{}) || d.EndedAt != nil || d.CreatedBy.APIKeyID != e.keyID {
		t.Fatalf("created dream = %+v", d)
	}
	if got, err := e.svc.GetDream(e.ctx, d.ID); err != nil || got.ID != d.ID {
		t.Fatalf("GetDream = %v, %v", got, err)
	}
	_, err = e.svc.GetDream(e.ctxB, d.ID)
	wantCode(t, "GetDream(other workspace)", err, trove.ENOTFOUND)

	archived := e.store(t, "old")
	if _, err := e.svc.ArchiveStore(e.ctx, archived.ID); err != nil {
		t.Fatal(err)
	}
	ok := trove.CreateDreamParams{StoreID: st.ID, SessionIDs: []string{s1.ID}, Model: "m"}
	with := func(f func(p *trove.CreateDreamParams)) trove.CreateDreamParams {
		p := ok
		p.SessionIDs = append([]string(nil), ok.SessionIDs...)
		f(&p)
		return p
	}
	sctx, _, _ := e.sessionCtx(t)
	refusals := []struct {
		name string
		p    trove.CreateDreamParams
		code string
	}{
		{"no store", with(func(p *trove.CreateDreamParams) { p.StoreID = "" }), trove.EINVALID},
		{"unknown store", with(func(p *trove.CreateDreamParams) { p.StoreID = "memstore_nope" }), trove.ENOTFOUND},
		{"archived store", with(func(p *trove.CreateDreamParams) { p.StoreID = archived.ID }), trove.EINVALID},
		{"no sessions", with(func(p *trove.CreateDreamParams) { p.SessionIDs = nil }), trove.EINVALID},
		{"too many sessions", with(func(p *trove.CreateDreamParams) { p.SessionIDs = []string{"a", "b", "c", "d"} }), trove.EINVALID},
		{"duplicate session", with(func(p *trove.CreateDreamParams) { p.SessionIDs = []string{s1.ID, s1.ID} }), trove.EINVALID},
		{"unknown session", with(func(p *trove.CreateDreamParams) { p.SessionIDs = []string{"sesn_nope"} }), trove.ENOTFOUND},
		{"no model", with(func(p *trove.CreateDreamParams) { p.Model = "" }), trove.EINVALID},
		{"long model", with(func(p *trove.CreateDreamParams) { p.Model = strings.Repeat("m", 257) }), trove.EINVALID},
		{"fast speed", with(func(p *trove.CreateDreamParams) { p.ModelSpeed = "fast" }), trove.EINVALID},
		{"long instructions", with(func(p *trove.CreateDreamParams) { p.Instructions = strings.Repeat("é", 4097) }), trove.EINVALID},
		{"bad behaviour", with(func(p *trove.CreateDreamParams) { p.OutputBehavior = "overwrite" }), trove.EINVALID},
		{"in place elsewhere", with(func(p *trove.CreateDreamParams) {
			p.OutputBehavior, p.OutputStoreID = trove.OutputUpdateExisting, archived.ID
		}), trove.EINVALID},
	}
	for _, r := range refusals {
		_, err := e.svc.CreateDream(e.ctx, r.p)
		wantCode(t, "CreateDream("+r.name+")", err, r.code)
	}
	_, err = e.svc.CreateDream(sctx, ok)
	wantCode(t, "CreateDream(session credential)", err, trove.EFORBIDDEN)
	_, err = e.svc.CreateDream(e.ctxB, ok)
	wantCode(t, "CreateDream(other workspace's store)", err, trove.ENOTFOUND)

	// update_existing: one at a time per store until it has fully stopped.
	inPlace := with(func(p *trove.CreateDreamParams) {
		p.OutputBehavior, p.OutputStoreID = trove.OutputUpdateExisting, st.ID
	})
	ip, err := e.svc.CreateDream(e.ctx, inPlace)
	if err != nil {
		t.Fatalf("CreateDream(update_existing): %v", err)
	}
	_, err = e.svc.CreateDream(e.ctx, inPlace)
	wantCode(t, "second update_existing dream", err, trove.ECONFLICT)
	// A runner takes it; canceled, it still holds the lease: still 409.
	claimed, err := e.svc.ClaimDream(t.Context(), "node-1", time.Minute)
	if err != nil || claimed == nil || claimed.ID != d.ID {
		t.Fatalf("ClaimDream = %v, %v; want the oldest, %s", claimed, err, d.ID)
	}
	claimed, err = e.svc.ClaimDream(t.Context(), "node-1", time.Minute)
	if err != nil || claimed == nil || claimed.ID != ip.ID {
		t.Fatalf("ClaimDream = %v, %v; want %s", claimed, err, ip.ID)
	}
	if _, err := e.svc.RecordDream(t.Context(), ip.ID, "node-1", time.Minute, core.DreamProgress{Running: true}); err != nil {
		t.Fatal(err)
	}
	c, err := e.svc.CancelDream(e.ctx, ip.ID)
	if err != nil || c.Status != trove.DreamCanceled || c.EndedAt == nil {
		t.Fatalf("CancelDream(running) = %+v, %v", c, err)
	}
	_, err = e.svc.CreateDream(e.ctx, inPlace)
	wantCode(t, "update_existing while the canceled one's runner holds on", err, trove.ECONFLICT)
	// The runner sees the cancel at its heartbeat and stops.
	hb, err := e.svc.RecordDream(t.Context(), ip.ID, "node-1", time.Minute, core.DreamProgress{Running: false})
	if err != nil || hb.Status != trove.DreamCanceled {
		t.Fatalf("heartbeat after cancel = %+v, %v", hb, err)
	}
	_, err = e.svc.RecordDream(t.Context(), ip.ID, "node-2", time.Minute, core.DreamProgress{Running: false})
	wantCode(t, "heartbeat by a runner without the lease", err, trove.ECONFLICT)
	fin, err := e.svc.FinishDream(t.Context(), ip.ID, "node-1", trove.DreamCompleted, nil, &trove.DreamUsage{InputTokens: 7})
	if err != nil || fin.Status != trove.DreamCanceled || fin.Usage.InputTokens != 7 || fin.LeaseOwner != "" {
		t.Fatalf("FinishDream after cancel = %+v, %v; want canceled kept, usage recorded, lease released", fin, err)
	}
	if _, err := e.svc.CreateDream(e.ctx, inPlace); err != nil {
		t.Fatalf("update_existing after the first fully stopped: %v", err)
	}

	// Cancel and archive.
	again, err := e.svc.CancelDream(e.ctx, ip.ID)
	if err != nil || again.Status != trove.DreamCanceled || !again.EndedAt.Equal(*c.EndedAt) {
		t.Fatalf("CancelDream(canceled) = %+v, %v; want unchanged", again, err)
	}
	done, err := e.svc.FinishDream(t.Context(), d.ID, "node-1", trove.DreamFailed, &trove.DreamError{Type: trove.DreamErrTimeout, Message: "slow"}, nil)
	if err != nil || done.Status != trove.DreamFailed || done.Error == nil || done.Error.Type != trove.DreamErrTimeout {
		t.Fatalf("FinishDream(failed) = %+v, %v", done, err)
	}
	_, err = e.svc.CancelDream(e.ctx, d.ID)
	wantCode(t, "CancelDream(failed)", err, trove.EINVALID)
	pending, err := e.svc.CreateDream(e.ctx, ok)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.ArchiveDream(e.ctx, pending.ID)
	wantCode(t, "ArchiveDream(pending)", err, trove.EINVALID)
	a1, err := e.svc.ArchiveDream(e.ctx, d.ID)
	if err != nil || a1.ArchivedAt == nil || a1.Status != trove.DreamFailed {
		t.Fatalf("ArchiveDream = %+v, %v", a1, err)
	}
	a2, err := e.svc.ArchiveDream(e.ctx, d.ID)
	if err != nil || !a2.ArchivedAt.Equal(*a1.ArchivedAt) {
		t.Fatalf("ArchiveDream again = %+v, %v; want the first time kept", a2, err)
	}
	_, err = e.svc.CancelDream(e.ctx, "drm_nope")
	wantCode(t, "CancelDream(unknown)", err, trove.ENOTFOUND)
	_, err = e.svc.ArchiveDream(e.ctxB, d.ID)
	wantCode(t, "ArchiveDream(other workspace)", err, trove.ENOTFOUND)

	// Listing: newest first, archived hidden by default, statuses filter.
	pg, err := e.svc.ListDreams(e.ctx, trove.ListDreamsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Data) != 3 || pg.Data[0].ID != pending.ID {
		t.Fatalf("ListDreams = %d dreams, first %s; want 3, newest first", len(pg.Data), pg.Data[0].ID)
	}
	pg, err = e.svc.ListDreams(e.ctx, trove.ListDreamsParams{IncludeArchived: true, Statuses: []trove.DreamStatus{trove.DreamFailed}, Limit: 1})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != d.ID || pg.NextPage != "" {
		t.Fatalf("ListDreams(failed, archived) = %+v, %v", pg, err)
	}
	_, err = e.svc.ListDreams(e.ctx, trove.ListDreamsParams{Statuses: []trove.DreamStatus{"sleeping"}})
	wantCode(t, "ListDreams(bad status)", err, trove.EINVALID)
	pg, err = e.svc.ListDreams(e.ctx, trove.ListDreamsParams{Limit: 2})
	if err != nil || len(pg.Data) != 2 || pg.NextPage == "" {
		t.Fatalf("ListDreams(limit 2) = %+v, %v", pg, err)
	}
	pg2, err := e.svc.ListDreams(e.ctx, trove.ListDreamsParams{Limit: 2, Cursor: pg.NextPage})
	if err != nil || len(pg2.Data) != 1 || pg2.NextPage != "" {
		t.Fatalf("ListDreams page 2 = %+v, %v", pg2, err)
	}
	_, err = e.svc.ListDreams(sctx, trove.ListDreamsParams{})
	wantCode(t, "ListDreams(session credential)", err, trove.EFORBIDDEN)
}
