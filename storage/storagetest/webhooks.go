package storagetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- webhooks ----

func newWebhook(ws, id string, n int) *trove.Webhook {
	return &trove.Webhook{ID: id, WorkspaceID: ws, Name: "hook " + id, Description: "", URL: "https://example.com/" + id,
		EnabledEvents: []string{"memory_store.created", "trove.memory.created"}, State: trove.WebhookEnabled,
		CreatedAt: secs(n), UpdatedAt: secs(n)}
}

// testWebhooks: endpoints round-trip with their secret, list per
// workspace oldest first, update and re-key; a deleted endpoint takes its
// queue with it.
func testWebhooks(t *testing.T, d storage.Driver) {
	a, b, other := newWebhook("ws1", "whep_a", 2), newWebhook("ws1", "whep_b", 1), newWebhook("ws2", "whep_c", 0)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i, w := range []*trove.Webhook{a, b, other} {
			if err := tx.WebhookInsert(ctx, w, "whsec_"+string(rune('x'+i))); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, secret, err := tx.WebhookGet(ctx, "ws1", "whep_a")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(a, got); diff != "" || secret != "whsec_x" {
			t.Errorf("WebhookGet (-want +got):\n%s secret %q", diff, secret)
		}
		if _, _, err := tx.WebhookGet(ctx, "ws2", "whep_a"); trove.ErrorCode(err) != trove.ENOTFOUND {
			t.Errorf("WebhookGet from another workspace: %v, want ENOTFOUND", err)
		}
		if got, _, err := tx.WebhookGet(ctx, "", "whep_c"); err != nil || got.WorkspaceID != "ws2" {
			t.Errorf("WebhookGet of any workspace = %+v, %v", got, err)
		}
		list, err := tx.WebhookList(ctx, "ws1")
		if err != nil {
			return err
		}
		if len(list) != 2 || list[0].ID != "whep_b" || list[1].ID != "whep_a" {
			t.Errorf("WebhookList = %+v, want b then a (oldest first)", list)
		}
		return nil
	})
	a.URL, a.Name, a.Description, a.State, a.DisabledReason = "https://example.org/x", "renamed", "notes", trove.WebhookDisabled, "why"
	a.EnabledEvents, a.UpdatedAt = []string{"memory_store.deleted"}, secs(9)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.WebhookUpdate(ctx, a); err != nil {
			return err
		}
		return tx.WebhookSetSecret(ctx, "whep_a", "whsec_new", secs(10))
	})
	a.UpdatedAt = secs(10)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, secret, err := tx.WebhookGet(ctx, "ws1", "whep_a")
		if err != nil {
			return err
		}
		if diff := cmp.Diff(a, got); diff != "" || secret != "whsec_new" {
			t.Errorf("after update (-want +got):\n%s secret %q", diff, secret)
		}
		return nil
	})
	err := d.Write(context.Background(), func(tx storage.Tx) error {
		return tx.WebhookUpdate(context.Background(), newWebhook("ws1", "whep_nope", 0))
	})
	wantCode(t, "update of an unknown endpoint", err, trove.ENOTFOUND)
	err = d.Write(context.Background(), func(tx storage.Tx) error {
		return tx.WebhookSetSecret(context.Background(), "whep_nope", "s", secs(1))
	})
	wantCode(t, "secret of an unknown endpoint", err, trove.ENOTFOUND)

	// A queue: deliveries to a and b; deleting a leaves b's.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, id := range []string{"whep_a", "whep_b", "whep_a"} {
			if err := tx.DeliveryInsert(ctx, &trove.WebhookDelivery{WebhookID: id, EventID: "whe_" + id, EventType: "memory_store.created",
				Payload: []byte(`{}`), CreatedAt: secs(1), NextAttemptAt: secs(1)}); err != nil {
				return err
			}
		}
		return tx.WebhookDelete(ctx, "whep_a")
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		if _, _, err := tx.WebhookGet(ctx, "", "whep_a"); trove.ErrorCode(err) != trove.ENOTFOUND {
			t.Errorf("get after delete: %v, want ENOTFOUND", err)
		}
		if l, err := tx.DeliveryList(ctx, storage.DeliveryListParams{WebhookID: "whep_a"}); err != nil || len(l) != 0 {
			t.Errorf("deleted endpoint's deliveries = %v, %v; want none", l, err)
		}
		if l, err := tx.DeliveryList(ctx, storage.DeliveryListParams{WebhookID: "whep_b"}); err != nil || len(l) != 1 {
			t.Errorf("other endpoint's deliveries = %v, %v; want one", l, err)
		}
		return nil
	})
	err = d.Write(context.Background(), func(tx storage.Tx) error { return tx.WebhookDelete(context.Background(), "whep_a") })
	wantCode(t, "second delete", err, trove.ENOTFOUND)
}

// testDeliveries: the queue hands out pending deliveries by Seq, records
// each attempt once, and lists newest first without payloads.
func testDeliveries(t *testing.T, d storage.Driver) {
	w := newWebhook("ws1", "whep_q", 0)
	var seqs []int64
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.WebhookInsert(ctx, w, "whsec_q"); err != nil {
			return err
		}
		for i := range 3 {
			dl := &trove.WebhookDelivery{WebhookID: w.ID, EventID: "whe_" + string(rune('0'+i)), EventType: "trove.memory.created",
				Payload: []byte(`{"n":` + string(rune('0'+i)) + `}`), CreatedAt: secs(i), NextAttemptAt: secs(i)}
			if err := tx.DeliveryInsert(ctx, dl); err != nil {
				return err
			}
			seqs = append(seqs, dl.Seq)
		}
		return nil
	})
	if !(seqs[0] < seqs[1] && seqs[1] < seqs[2]) {
		t.Fatalf("seqs %v do not grow", seqs)
	}
	// A second transaction's deliveries come after the first's.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		dl := &trove.WebhookDelivery{WebhookID: w.ID, EventID: "whe_3", EventType: "x", Payload: []byte(`{}`), CreatedAt: secs(3), NextAttemptAt: secs(3)}
		err := tx.DeliveryInsert(ctx, dl)
		seqs = append(seqs, dl.Seq)
		return err
	})
	if seqs[3] <= seqs[2] {
		t.Fatalf("a later transaction's seq %d is not above %d", seqs[3], seqs[2])
	}
	next := func() *trove.WebhookDelivery {
		var got *trove.WebhookDelivery
		read(t, d, func(ctx context.Context, tx storage.Tx) error {
			var err error
			got, err = tx.DeliveryNext(ctx, w.ID)
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return nil
			}
			return err
		})
		return got
	}
	first := next()
	want := &trove.WebhookDelivery{Seq: seqs[0], WebhookID: w.ID, EventID: "whe_0", EventType: "trove.memory.created",
		Payload: []byte(`{"n":0}`), CreatedAt: secs(0), Status: trove.DeliveryPending, NextAttemptAt: secs(0)}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Fatalf("DeliveryNext (-want +got):\n%s", diff)
	}
	// A failed attempt keeps it at the head; a success moves on.
	failed := *first
	failed.Attempts, failed.LastAttemptAt, failed.LastStatus, failed.LastError, failed.NextAttemptAt = 1, timePtr(secs(5)), 503, "HTTP 503", secs(7)
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.DeliveryUpdate(ctx, &failed) })
	err := d.Write(context.Background(), func(tx storage.Tx) error { return tx.DeliveryUpdate(context.Background(), &failed) })
	wantCode(t, "the same attempt recorded twice", err, trove.ECONFLICT)
	got := next()
	failed.Payload = first.Payload
	if diff := cmp.Diff(&failed, got); diff != "" {
		t.Fatalf("head after a failed attempt (-want +got):\n%s", diff)
	}
	ok := failed
	ok.Attempts, ok.Status, ok.LastStatus, ok.LastError, ok.DeliveredAt = 2, trove.DeliveryDelivered, 204, "", timePtr(secs(8))
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.DeliveryUpdate(ctx, &ok) })
	if got := next(); got == nil || got.Seq != seqs[1] {
		t.Fatalf("head after a success = %+v, want seq %d", got, seqs[1])
	}
	gone := ok
	gone.Seq = 1 << 40
	err = d.Write(context.Background(), func(tx storage.Tx) error { return tx.DeliveryUpdate(context.Background(), &gone) })
	wantCode(t, "update of an unknown delivery", err, trove.ENOTFOUND)

	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		l, err := tx.DeliveryList(ctx, storage.DeliveryListParams{WebhookID: w.ID, Limit: 2})
		if err != nil {
			return err
		}
		if len(l) != 2 || l[0].Seq != seqs[3] || l[1].Seq != seqs[2] || l[0].Payload != nil {
			t.Errorf("first page = %+v, want seqs %d, %d without payloads", l, seqs[3], seqs[2])
		}
		l, err = tx.DeliveryList(ctx, storage.DeliveryListParams{WebhookID: w.ID, BeforeSeq: seqs[2], Limit: 5})
		if err != nil {
			return err
		}
		if len(l) != 2 || l[1].Seq != seqs[0] || l[1].Status != trove.DeliveryDelivered || l[1].Attempts != 2 || !l[1].DeliveredAt.Equal(secs(8)) {
			t.Errorf("second page = %+v", l)
		}
		return nil
	})
}

// testDeliveryPrune: delivered and failed deliveries attempted before the
// cut are deleted, oldest first, at most limit at a time, whatever their
// endpoint; pending ones never, however old.
func testDeliveryPrune(t *testing.T, d storage.Driver) {
	type row struct {
		hook    string
		status  trove.DeliveryStatus
		attempt int // last attempt, seconds; -1: none
	}
	rows := []row{
		{"whep_p1", trove.DeliveryDelivered, 5},
		{"whep_p1", trove.DeliveryFailed, 3},
		{"whep_p1", trove.DeliveryPending, 1},  // retried since, still pending
		{"whep_p1", trove.DeliveryPending, -1}, // never attempted
		{"whep_p2", trove.DeliveryDelivered, 4},
		{"whep_p2", trove.DeliveryDelivered, 20}, // after the cut
	}
	seqs := make([]int64, len(rows))
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, id := range []string{"whep_p1", "whep_p2"} {
			if err := tx.WebhookInsert(ctx, newWebhook("ws_prune", id, 0), "whsec_p"); err != nil {
				return err
			}
		}
		for i, r := range rows {
			dl := &trove.WebhookDelivery{WebhookID: r.hook, EventID: fmt.Sprintf("whe_p%d", i), EventType: "x", Payload: []byte(`{}`),
				CreatedAt: secs(0), NextAttemptAt: secs(0)}
			if err := tx.DeliveryInsert(ctx, dl); err != nil {
				return err
			}
			seqs[i] = dl.Seq
			if r.attempt < 0 {
				continue
			}
			up := *dl
			up.Status, up.Attempts, up.LastAttemptAt, up.NextAttemptAt = r.status, 1, timePtr(secs(r.attempt)), secs(r.attempt+1)
			if r.status == trove.DeliveryDelivered {
				up.DeliveredAt = timePtr(secs(r.attempt))
			}
			if err := tx.DeliveryUpdate(ctx, &up); err != nil {
				return err
			}
		}
		return nil
	})
	prune := func(limit int) int {
		var n int
		write(t, d, func(ctx context.Context, tx storage.Tx) error {
			var err error
			n, err = tx.DeliveryPrune(ctx, secs(10), limit)
			return err
		})
		return n
	}
	left := func() []int64 {
		var out []int64
		read(t, d, func(ctx context.Context, tx storage.Tx) error {
			for _, id := range []string{"whep_p1", "whep_p2"} {
				l, err := tx.DeliveryList(ctx, storage.DeliveryListParams{WebhookID: id, Limit: 100})
				if err != nil {
					return err
				}
				for _, x := range l {
					out = append(out, x.Seq)
				}
			}
			return nil
		})
		slices.Sort(out)
		return out
	}
	if n := prune(2); n != 2 {
		t.Fatalf("DeliveryPrune(limit 2) = %d, want 2", n)
	}
	// The two oldest attempts went first: the failed one (3 s) and whep_p2's (4 s).
	if diff := cmp.Diff([]int64{seqs[0], seqs[2], seqs[3], seqs[5]}, left()); diff != "" {
		t.Errorf("left after the first prune (-want +got):\n%s", diff)
	}
	if n := prune(100); n != 1 {
		t.Fatalf("second DeliveryPrune = %d, want 1", n)
	}
	if n := prune(100); n != 0 {
		t.Fatalf("third DeliveryPrune = %d, want 0", n)
	}
	if diff := cmp.Diff([]int64{seqs[2], seqs[3], seqs[5]}, left()); diff != "" {
		t.Errorf("left at the end (-want +got):\n%s", diff)
	}
}

// testJobDefer: a deferred job is unclaimable until its time, whatever
// wakes it meanwhile; a deleted job is gone.
func testJobDefer(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	claim := func(now int) (*storage.Job, error) {
		var j *storage.Job
		err := d.Write(ctx, func(tx storage.Tx) error {
			var err error
			j, err = tx.JobClaim(ctx, "defer_run", "n1", secs(now), secs(now+30))
			return err
		})
		return j, err
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.JobWake(ctx, "defer_run", "k", secs(0)) })
	if _, err := claim(1); err != nil {
		t.Fatal(err)
	}
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.JobDefer(ctx, "defer_run", "k", "n2", secs(100)) })
	wantCode(t, "defer by a non-owner", err, trove.ECONFLICT)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.JobDefer(ctx, "defer_run", "k", "n1", secs(100))
	})
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.JobWake(ctx, "defer_run", "k", secs(2)) })
	if _, err := claim(50); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("claim of a deferred job before its time: %v, want ENOTFOUND", err)
	}
	j, err := claim(100)
	if err != nil || j.Key != "k" || j.LeaseOwner != "n1" || j.Attempts != 2 {
		t.Fatalf("claim at the deferred time = %+v, %v", j, err)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.JobDelete(ctx, "defer_run", "k"); err != nil {
			return err
		}
		return tx.JobDelete(ctx, "defer_run", "absent")
	})
	if _, err := claim(500); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("claim after delete: %v, want ENOTFOUND", err)
	}
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.JobDefer(ctx, "defer_run", "k", "n1", secs(600)) })
	wantCode(t, "defer of a deleted job", err, trove.ENOTFOUND)
}
