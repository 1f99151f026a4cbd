package storagetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- managed sessions (the Managed Agents columns of the sessions table) ----

func testManagedSessions(t *testing.T, d storage.Driver) {
	ws := "wrkspc_ms"
	mk := func(n int, agent string, version int64, status trove.SessionStatus) *trove.Session {
		se := &trove.Session{ID: trove.NewID(trove.PrefixSession, secs(n)), WorkspaceID: ws,
			Stores:    []trove.SessionStore{{StoreID: "memstore_x", Access: trove.AccessReadOnly, Name: "X", MountPath: "/mnt/memory/x"}},
			CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, CreatedAt: secs(n), UpdatedAt: secs(n),
			Title: "t", Metadata: map[string]string{"k": "v"}, Status: status}
		if agent != "" {
			se.Managed = &trove.ManagedSession{AgentID: agent, AgentVersion: version, EnvironmentID: "env_1",
				Usage:  trove.SessionUsage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4},
				Budget: &trove.SessionBudget{Currency: "USD", Amount: "100"}}
		}
		return se
	}
	a1 := mk(1, "agent_a", 1, trove.SessionIdle)
	a2 := mk(2, "agent_a", 2, trove.SessionRunning)
	b := mk(3, "agent_b", 1, trove.SessionIdle)
	plain := mk(4, "", 0, trove.SessionIdle)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i, se := range []*trove.Session{a1, a2, b, plain} {
			if err := tx.SessionInsert(ctx, se, hash("ms"+string(rune('a'+i)))); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, want := range []*trove.Session{a1, plain} {
			got, err := tx.SessionGet(ctx, ws, want.ID)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SessionGet round trip (-want +got):\n%s", diff)
			}
			if any, err := tx.SessionGet(ctx, "", want.ID); err != nil || any.ID != want.ID {
				t.Errorf("SessionGet(any workspace) = %v, %v", any, err)
			}
		}
		_, err := tx.SessionGet(ctx, "wrkspc_other", a1.ID)
		wantCode(t, "SessionGet(other workspace)", err, trove.ENOTFOUND)
		return nil
	})
	// Update: the mutable columns.
	now := secs(10)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		se, err := tx.SessionLock(ctx, ws, a2.ID)
		if err != nil {
			return err
		}
		se.Title, se.Metadata, se.Status, se.UpdatedAt = "", map[string]string{}, trove.SessionTerminated, now
		se.EndedAt, se.ArchivedAt = timePtr(now), timePtr(now)
		se.Managed.Usage.InputTokens, se.Managed.ActiveSeconds, se.Managed.RunningSince = 99, 1.5, timePtr(secs(9))
		if err := tx.SessionUpdate(ctx, se); err != nil {
			return err
		}
		got, err := tx.SessionGet(ctx, ws, a2.ID)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(se, got); diff != "" {
			t.Errorf("after SessionUpdate (-want +got):\n%s", diff)
		}
		err = tx.SessionUpdate(ctx, &trove.Session{ID: "sesn_missing", Metadata: map[string]string{}})
		wantCode(t, "SessionUpdate(unknown)", err, trove.ENOTFOUND)
		return nil
	})
	ids := func(ss []trove.Session) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	lists := []struct {
		name string
		p    storage.SessionListParams
		want []string
	}{
		{"all but archived", storage.SessionListParams{}, []string{plain.ID, b.ID, a1.ID}},
		{"with archived", storage.SessionListParams{IncludeArchived: true}, []string{plain.ID, b.ID, a2.ID, a1.ID}},
		{"agent", storage.SessionListParams{AgentID: "agent_a", IncludeArchived: true}, []string{a2.ID, a1.ID}},
		{"agent version", storage.SessionListParams{AgentID: "agent_a", AgentVersion: 2, IncludeArchived: true}, []string{a2.ID}},
		{"statuses", storage.SessionListParams{Statuses: []trove.SessionStatus{trove.SessionTerminated, trove.SessionRunning}, IncludeArchived: true}, []string{a2.ID}},
		{"ascending", storage.SessionListParams{Asc: true, IncludeArchived: true, Limit: 2}, []string{a1.ID, a2.ID}},
		{"ascending after", storage.SessionListParams{Asc: true, After: &storage.Position{CreatedAt: a2.CreatedAt, ID: a2.ID}}, []string{b.ID, plain.ID}},
		{"created bounds", storage.SessionListParams{CreatedAfter: timePtr(secs(1)), CreatedBefore: timePtr(secs(4)), IncludeArchived: true}, []string{b.ID, a2.ID}},
		{"created range", storage.SessionListParams{CreatedAt: trove.TimeRange{GTE: timePtr(secs(3)), LTE: timePtr(secs(4))}}, []string{plain.ID, b.ID}},
	}
	for _, tc := range lists {
		read(t, d, func(ctx context.Context, tx storage.Tx) error {
			tc.p.WorkspaceID = ws
			got, err := tx.SessionList(ctx, tc.p)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("SessionList %s (-want +got):\n%s", tc.name, diff)
			}
			return nil
		})
	}

	// Events: RefID, EventGet, EventListByRef, the listing's filters.
	ev := func(seq int64, typ, ref string) trove.SessionEvent {
		return trove.SessionEvent{ID: trove.NewID(trove.PrefixEvent, secs(20)), SessionID: a1.ID, Seq: seq, Type: typ, Body: "{}",
			CreatedBy: trove.Actor{Type: trove.ActorSession, SessionID: a1.ID}, ProcessedAt: secs(20 + int(seq)), RefID: ref}
	}
	use := ev(1, trove.EventAgentToolUse, "")
	evs := []trove.SessionEvent{use, ev(2, trove.EventUserToolResult, use.ID), ev(3, trove.EventAgentMessage, ""), ev(4, trove.EventUserToolConfirmation, use.ID)}
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.EventInsert(ctx, evs) })
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.EventGet(ctx, a1.ID, use.ID)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(&use, got); diff != "" {
			t.Errorf("EventGet (-want +got):\n%s", diff)
		}
		_, err = tx.EventGet(ctx, b.ID, use.ID)
		wantCode(t, "EventGet(other session)", err, trove.ENOTFOUND)
		refs, err := tx.EventListByRef(ctx, a1.ID, use.ID)
		if err != nil {
			return err
		}
		if diff := cmp.Diff([]trove.SessionEvent{evs[1], evs[3]}, refs); diff != "" {
			t.Errorf("EventListByRef (-want +got):\n%s", diff)
		}
		seqs := func(p storage.EventListParams) []int64 {
			p.SessionID = a1.ID
			got, err := tx.EventList(ctx, p)
			if err != nil {
				t.Fatalf("EventList: %v", err)
			}
			out := []int64{}
			for _, e := range got {
				out = append(out, e.Seq)
			}
			return out
		}
		for _, tc := range []struct {
			name string
			p    storage.EventListParams
			want []int64
		}{
			{"desc", storage.EventListParams{Desc: true, Limit: 2}, []int64{4, 3}},
			{"desc before", storage.EventListParams{Desc: true, BeforeSeq: 3}, []int64{2, 1}},
			{"types", storage.EventListParams{Types: []string{trove.EventAgentToolUse, trove.EventAgentMessage}}, []int64{1, 3}},
			{"created after/before", storage.EventListParams{CreatedAfter: timePtr(secs(21)), CreatedBefore: timePtr(secs(24))}, []int64{2, 3}},
			{"created range", storage.EventListParams{CreatedAt: trove.TimeRange{GTE: timePtr(secs(23))}}, []int64{3, 4}},
		} {
			if diff := cmp.Diff(tc.want, seqs(tc.p)); diff != "" {
				t.Errorf("EventList %s (-want +got):\n%s", tc.name, diff)
			}
		}
		return nil
	})
	// Delete cascades to the transcript.
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.SessionDelete(ctx, a1.ID) })
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.SessionGet(ctx, ws, a1.ID)
		wantCode(t, "SessionGet(deleted)", err, trove.ENOTFOUND)
		_, err = tx.EventGet(ctx, a1.ID, use.ID)
		wantCode(t, "EventGet(deleted session)", err, trove.ENOTFOUND)
		return nil
	})
	err := d.Write(context.Background(), func(tx storage.Tx) error { return tx.SessionDelete(context.Background(), a1.ID) })
	wantCode(t, "SessionDelete(twice)", err, trove.ENOTFOUND)
}
