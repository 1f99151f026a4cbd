package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/webhook"
)

// retentionOpts: one attempt per delivery (a refusal fails it at once),
// ended deliveries kept 48 h, the log pruned every 48 h.
var retentionOpts = core.WebhookOptions{AllowHTTP: true, AllowPrivate: true, MaxAttempts: 1, Jitter: func() float64 { return 0 },
	Retention: 48 * time.Hour, PruneEvery: 48 * time.Hour}

// statuses returns an endpoint's delivery log as status counts.
func statuses(t *testing.T, e *env, id string) map[trove.DeliveryStatus]int {
	t.Helper()
	pg, err := e.svc.ListWebhookDeliveries(e.ctx, id, trove.ListDeliveriesParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[trove.DeliveryStatus]int{}
	for _, d := range pg.Data {
		out[d.Status]++
	}
	return out
}

// pruneSignal is the service, telling when the sender's pruning returned.
type pruneSignal struct {
	*core.Service
	pruned chan int
}

func (p pruneSignal) PruneWebhookDeliveries(ctx context.Context, owner string, lease time.Duration) (int, error) {
	n, err := p.Service.PruneWebhookDeliveries(ctx, owner, lease)
	if err == nil {
		p.pruned <- n
	}
	return n, err
}

// TestDeliveryLogRetention: delivered and failed deliveries are pruned
// once older than the retention, by one prune job for the whole
// deployment (deferred PruneEvery between runs, whichever node takes it);
// pending ones stay however old; a sender prunes as it starts.
func TestDeliveryLogRetention(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		node := func() *core.Service { return core.New(e.open(), core.Options{Now: e.clk.Now, Webhooks: retentionOpts}) }
		e.svc = node()
		up, down := newReceiver(t), newReceiver(t)
		down.set(func(r *receiver) { r.down = true })
		hu, hd := e.hook(up, trove.HookMemoryStoreCreated), e.hook(down, trove.HookMemoryStoreCreated)
		s := newSender(e.svc, "sender")
		store := func(name string) {
			t.Helper()
			if _, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: name}); err != nil {
				t.Fatal(err)
			}
		}
		prune := func(svc *core.Service, owner string, want int) {
			t.Helper()
			n, err := svc.PruneWebhookDeliveries(context.Background(), owner, time.Minute)
			if err != nil || n != want {
				t.Fatalf("PruneWebhookDeliveries by %s at %s = %d, %v; want %d", owner, e.clk.Now().Format(time.RFC3339), n, err, want)
			}
		}
		check := func(what string, wantUp, wantDown map[trove.DeliveryStatus]int) {
			t.Helper()
			if diff := cmp.Diff(wantUp, statuses(t, e, hu.ID)); diff != "" {
				t.Errorf("%s: the up endpoint's log (-want +got):\n%s", what, diff)
			}
			if diff := cmp.Diff(wantDown, statuses(t, e, hd.ID)); diff != "" {
				t.Errorf("%s: the down endpoint's log (-want +got):\n%s", what, diff)
			}
		}
		type m = map[trove.DeliveryStatus]int
		const (
			ok   = trove.DeliveryDelivered
			bad  = trove.DeliveryFailed
			wait = trove.DeliveryPending
		)
		// t0: one delivered, one failed. t0+24h: the same again, and one
		// pending on each endpoint (not sent yet).
		store("a")
		drain(t, s)
		e.clk.Add(24 * time.Hour)
		store("b")
		drain(t, s)
		store("c")
		check("before any prune", m{ok: 2, wait: 1}, m{bad: 2, wait: 1})

		// t0+47h: nothing is 48 h old yet; the job ran, so it is deferred.
		e.clk.Add(23 * time.Hour)
		prune(e.svc, "n1", 0)
		// t0+49h: t0's rows are old enough, but the job waits until t0+95h,
		// on every node.
		e.clk.Add(2 * time.Hour)
		other := node()
		prune(other, "n2", 0)
		prune(e.svc, "n1", 0)
		check("while the job is deferred", m{ok: 2, wait: 1}, m{bad: 2, wait: 1})
		// t0+95h: due; another node takes it and prunes every ended
		// delivery attempted before t0+47h: the four of t0 and t0+24h.
		e.clk.Add(46 * time.Hour)
		prune(other, "n2", 4)
		check("after the prune", m{wait: 1}, m{wait: 1})

		// A sender prunes as it starts: a new ended pair, 48 h later (the
		// job due again), is pruned by Run.
		up.set(func(r *receiver) { r.down = false })
		store("d")
		drain(t, s)
		e.clk.Add(49 * time.Hour)
		sig := pruneSignal{Service: e.svc, pruned: make(chan int, 1)}
		runner := webhook.New(webhook.Config{Backend: sig, Owner: "runner", Workers: 1, AllowPrivate: true, AllowHTTP: true,
			Lease: time.Minute, Timeout: 5 * time.Second, PruneCheck: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); runner.Run(ctx) }()
		n := <-sig.pruned
		cancel()
		<-done
		if n < 2 {
			t.Errorf("the sender's Run pruned %d deliveries, want at least the delivered and failed pair of store d", n)
		}
		for _, st := range []trove.DeliveryStatus{ok, bad} {
			if c := statuses(t, e, hu.ID)[st] + statuses(t, e, hd.ID)[st]; c != 0 {
				t.Errorf("%d %s deliveries left after the sender's prune", c, st)
			}
		}
	})
}
