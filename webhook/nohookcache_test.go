package webhook_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// countingDriver counts the reads of a workspace's endpoints that the
// writes through it make.
type countingDriver struct {
	storage.Driver
	reads *atomic.Int64
}

func (d countingDriver) Write(ctx context.Context, fn func(storage.Tx) error) error {
	return d.Driver.Write(ctx, func(tx storage.Tx) error { return fn(countingTx{tx, d.reads}) })
}

type countingTx struct {
	storage.Tx
	reads *atomic.Int64
}

func (t countingTx) WebhookList(ctx context.Context, ws string) ([]trove.Webhook, error) {
	t.reads.Add(1)
	return t.Tx.WebhookList(ctx, ws)
}

// TestNoEndpointCache: the writes of a workspace without endpoints read
// its endpoints once per NoEndpointCache, not once each (and once each
// with the cache off); a workspace with one reads them at every write.
func TestNoEndpointCache(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		cases := []struct {
			name      string
			ttl       time.Duration
			endpoint  bool
			wantReads int64
		}{
			{"cached", time.Hour, false, 1},
			{"cache off", -1, false, 20},
			{"an endpoint", time.Hour, true, 20},
		}
		for i, c := range cases {
			reads := &atomic.Int64{}
			opts := hookOpts
			opts.NoEndpointCache = c.ttl
			svc := core.New(countingDriver{e.open(), reads}, core.Options{Now: e.clk.Now, Webhooks: opts})
			ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: fmt.Sprint("wrkspc_cache", i),
				Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_c"}})
			if c.endpoint {
				opts.NoEndpointCache = -1 // (so that the creation does not wait the hour)
				other := core.New(e.open(), core.Options{Now: e.clk.Now, Webhooks: opts})
				if _, _, err := other.CreateWebhook(ctx, trove.CreateWebhookParams{URL: "http://127.0.0.1:9/x", EnabledEvents: []string{trove.HookSessionDeleted}}); err != nil {
					t.Fatal(err)
				}
			}
			st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			for j := range 19 {
				if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%d", j), Content: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			if got := reads.Load(); got != c.wantReads {
				t.Errorf("%s: 20 writes read the endpoints %d times, want %d", c.name, got, c.wantReads)
			}
		}
	})
}

// TestNoEndpointCacheAcrossNodes: node A remembers that the workspace has
// no endpoint; node B creates one; a change made on A once B's creation
// returned is delivered to it (B's CreateWebhook outwaits A's memory).
func TestNoEndpointCacheAcrossNodes(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		opts := hookOpts
		opts.NoEndpointCache = 200 * time.Millisecond
		a := core.New(e.open(), core.Options{Now: e.clk.Now, Webhooks: opts})
		b := core.New(e.open(), core.Options{Now: e.clk.Now, Webhooks: opts})
		st, err := a.CreateStore(e.ctx, trove.CreateStoreParams{Name: "notes"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/before.md", Content: "x"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		h, _, err := b.CreateWebhook(e.ctx, trove.CreateWebhookParams{URL: "http://127.0.0.1:9/x", EnabledEvents: []string{trove.HookMemoryCreated}})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < opts.NoEndpointCache {
			t.Errorf("CreateWebhook returned after %s, before the cache's %s", d, opts.NoEndpointCache)
		}
		if _, err := a.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/after.md", Content: "y"}); err != nil {
			t.Fatal(err)
		}
		pg, err := a.ListWebhookDeliveries(e.ctx, h.ID, trove.ListDeliveriesParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pg.Data) != 1 || pg.Data[0].EventType != trove.HookMemoryCreated {
			t.Fatalf("deliveries after the creation = %+v, want the one memory created on node A", pg.Data)
		}
	})
}
