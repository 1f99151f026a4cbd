package storagetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- session events ----

func testEvents(t *testing.T, d storage.Driver) {
	se := &trove.Session{ID: trove.NewID(trove.PrefixSession, secs(1)), WorkspaceID: "wrkspc_a",
		CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, CreatedAt: secs(1)}
	other := &trove.Session{ID: trove.NewID(trove.PrefixSession, secs(1)), WorkspaceID: "wrkspc_a",
		CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, CreatedAt: secs(1)}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.SessionInsert(ctx, se, hash("t1")); err != nil {
			return err
		}
		return tx.SessionInsert(ctx, other, hash("t2"))
	})
	// EventStats locks, so it runs in a Write.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		n, b, err := tx.EventStats(ctx, se.ID)
		if err != nil || n != 0 || b != 0 {
			t.Errorf("EventStats of a new session = %d, %d, %v; want 0, 0, nil", n, b, err)
		}
		return nil
	})
	err := d.Write(context.Background(), func(tx storage.Tx) error {
		_, _, err := tx.EventStats(context.Background(), "sesn_missing")
		return err
	})
	wantCode(t, "EventStats(unknown)", err, trove.ENOTFOUND)
	mk := func(sid string, seq int64, typ, body string) trove.SessionEvent {
		return trove.SessionEvent{ID: trove.NewID(trove.PrefixEvent, secs(2)), SessionID: sid, Seq: seq, Type: typ,
			Body: body, CreatedBy: trove.Actor{Type: trove.ActorSession, SessionID: sid}, ProcessedAt: secs(int(seq))}
	}
	evs := []trove.SessionEvent{
		mk(se.ID, 1, trove.EventUserMessage, `{"content":[{"text":"héllo","type":"text"}]}`),
		mk(se.ID, 2, trove.EventAgentToolUse, `{"input":{"command":"view"},"name":"memory"}`),
		mk(se.ID, 3, trove.EventAgentMessage, `{"content":[]}`),
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.EventInsert(ctx, evs[:1]); err != nil {
			return err
		}
		if err := tx.EventInsert(ctx, evs[1:]); err != nil {
			return err
		}
		return tx.EventInsert(ctx, []trove.SessionEvent{mk(other.ID, 1, trove.EventUserMessage, `{}`)})
	})
	// A second event with a used seq is refused (the primary key), and the
	// whole Write is rolled back.
	err = d.Write(context.Background(), func(tx storage.Tx) error {
		return tx.EventInsert(context.Background(), []trove.SessionEvent{mk(se.ID, 4, trove.EventUserMessage, `{}`), mk(se.ID, 2, trove.EventUserMessage, `{}`)})
	})
	if err == nil {
		t.Fatal("EventInsert with a duplicate seq succeeded")
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		n, b, err := tx.EventStats(ctx, se.ID)
		var want int64
		for _, e := range evs {
			want += int64(len(e.Body))
		}
		if err != nil || n != 3 || b != want {
			t.Errorf("EventStats = %d, %d, %v; want 3, %d, nil", n, b, err, want)
		}
		got, err := tx.EventList(ctx, storage.EventListParams{SessionID: se.ID})
		if err != nil {
			return err
		}
		if diff := cmp.Diff(evs, got); diff != "" {
			t.Errorf("EventList (-want +got):\n%s", diff)
		}
		got, err = tx.EventList(ctx, storage.EventListParams{SessionID: se.ID, AfterSeq: 1, Limit: 1})
		if err != nil {
			return err
		}
		if diff := cmp.Diff(evs[1:2], got); diff != "" {
			t.Errorf("EventList(after 1, limit 1) (-want +got):\n%s", diff)
		}
		// MaxBytes: the list ends after the event whose body takes it
		// past the bound.
		b0, b1 := len(evs[0].Body), len(evs[1].Body)
		for _, tc := range []struct {
			name string
			p    storage.EventListParams
			want []trove.SessionEvent
		}{
			{"one byte", storage.EventListParams{SessionID: se.ID, MaxBytes: 1}, evs[:1]},
			{"the first body exactly", storage.EventListParams{SessionID: se.ID, MaxBytes: b0}, evs[:2]},
			{"one byte past two bodies", storage.EventListParams{SessionID: se.ID, MaxBytes: b0 + b1 + 1}, evs},
			{"with a limit", storage.EventListParams{SessionID: se.ID, MaxBytes: b0 + b1 + 1, Limit: 1}, evs[:1]},
			{"newest first", storage.EventListParams{SessionID: se.ID, Desc: true, MaxBytes: 1}, evs[2:]},
		} {
			got, err := tx.EventList(ctx, tc.p)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EventList(MaxBytes, %s) (-want +got):\n%s", tc.name, diff)
			}
		}
		got, err = tx.EventList(ctx, storage.EventListParams{SessionID: "sesn_none"})
		if err != nil || len(got) != 0 {
			t.Errorf("EventList(unknown session) = %v, %v; want empty", got, err)
		}
		return nil
	})
}
