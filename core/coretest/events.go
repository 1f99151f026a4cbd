package coretest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// --- session transcripts --------------------------------------------------

func testEvents(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{MaxEventBytes: 200, MaxSessionEvents: 5, MaxEventsPerAppend: 3})
	st := e.store(t, "notes")
	sctx, se, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: st.ID})
	_, other, _ := e.sessionCtx(t)

	// The session appends to its own transcript; the members the server
	// sets are dropped from the body.
	got, err := e.svc.AppendEvents(sctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventUserMessage, Body: `{"id":"x","type":"y","processed_at":"z","content":[{"type":"text","text":"I moved to Lyon"}]}`},
		{Type: trove.EventAgentMessage, Body: ``},
	})
	if err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	want := []trove.SessionEvent{
		{SessionID: se.ID, Seq: 1, Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"I moved to Lyon"}]}`,
			CreatedBy: trove.Actor{Type: trove.ActorSession, SessionID: se.ID}},
		{SessionID: se.ID, Seq: 2, Type: trove.EventAgentMessage, Body: `{}`,
			CreatedBy: trove.Actor{Type: trove.ActorSession, SessionID: se.ID}},
	}
	norm := func(evs []trove.SessionEvent) []trove.SessionEvent {
		out := make([]trove.SessionEvent, len(evs))
		for i, ev := range evs {
			if !strings.HasPrefix(ev.ID, trove.PrefixEvent) || ev.ProcessedAt.IsZero() {
				t.Errorf("event %d has ID %q, processed_at %v", i, ev.ID, ev.ProcessedAt)
			}
			ev.ID = ""
			out[i] = ev
		}
		return out
	}
	if diff := cmp.Diff(want, norm(got), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ProcessedAt" }, cmp.Ignore())); diff != "" {
		t.Errorf("AppendEvents (-want +got):\n%s", diff)
	}
	// The workspace key appends too (importing a transcript), and reads.
	if _, err := e.svc.AppendEvents(e.ctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventAgentToolUse, Body: `{"name":"memory","input":{"command":"view","path":"/memories"}}`}}); err != nil {
		t.Fatalf("AppendEvents(key): %v", err)
	}
	// Paging, oldest first, with every page's cursor.
	var all []trove.SessionEvent
	cursor := ""
	for range 10 {
		pg, err := e.svc.ListEvents(e.ctx, se.ID, trove.ListEventsParams{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		all = append(all, pg.Data...)
		if cursor = pg.NextPage; cursor == "" {
			break
		}
	}
	if len(all) != 3 || all[0].Seq != 1 || all[2].Seq != 3 || all[2].CreatedBy != (trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}) {
		t.Fatalf("ListEvents pages = %+v", all)
	}
	if pg, err := e.svc.ListEvents(sctx, se.ID, trove.ListEventsParams{}); err != nil || len(pg.Data) != 3 {
		t.Fatalf("ListEvents(own session) = %v, %v", pg, err)
	}

	refusals := []struct {
		name string
		ctx  context.Context
		sid  string
		evs  []trove.NewSessionEvent
		code string
	}{
		{"another session", sctx, other.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage}}, trove.EFORBIDDEN},
		{"unknown session", e.ctx, "sesn_nope", []trove.NewSessionEvent{{Type: trove.EventUserMessage}}, trove.ENOTFOUND},
		{"other workspace", e.ctxB, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage}}, trove.ENOTFOUND},
		{"no events", e.ctx, se.ID, nil, trove.EINVALID},
		{"too many at once", e.ctx, se.ID, make([]trove.NewSessionEvent, 4), trove.EINVALID},
		{"unknown type", e.ctx, se.ID, []trove.NewSessionEvent{{Type: "session.status_idle"}}, trove.EINVALID},
		{"not an object", e.ctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: `[1]`}}, trove.EINVALID},
		{"not JSON", e.ctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: `{`}}, trove.EINVALID},
		{"too large", e.ctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: `{"t":"` + strings.Repeat("x", 200) + `"}`}}, trove.EINVALID},
		{"transcript full", e.ctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage}, {Type: trove.EventUserMessage}, {Type: trove.EventUserMessage}}, trove.EINVALID},
	}
	for _, r := range refusals {
		_, err := e.svc.AppendEvents(r.ctx, r.sid, r.evs)
		wantCode(t, "AppendEvents("+r.name+")", err, r.code)
	}
	// Nothing of the refused appends landed.
	if pg, _ := e.svc.ListEvents(e.ctx, se.ID, trove.ListEventsParams{}); len(pg.Data) != 3 {
		t.Fatalf("after refusals the transcript has %d events, want 3", len(pg.Data))
	}
	_, err = e.svc.ListEvents(sctx, other.ID, trove.ListEventsParams{})
	wantCode(t, "ListEvents(another session)", err, trove.EFORBIDDEN)
	_, err = e.svc.ListEvents(e.ctx, se.ID, trove.ListEventsParams{Cursor: "page_bad"})
	wantCode(t, "ListEvents(bad cursor)", err, trove.EINVALID)
	// An ended session's transcript is closed.
	if _, err := e.svc.EndSession(e.ctx, se.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.AppendEvents(e.ctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage}})
	wantCode(t, "AppendEvents(ended)", err, trove.EINVALID)
}
