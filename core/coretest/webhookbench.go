package coretest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// BenchWebhookEmit measures what webhooks cost the writes of a workspace,
// over a fresh driver from open (one per concurrency, a workspace per
// variant), at each concurrency
// (goroutines each updating their own memory through core's UpdateMemory):
//
//   - none: no endpoint in the workspace (what every write pays for the
//     feature when nobody uses it: no read, core.WebhookOptions'
//     NoEndpointCache);
//   - other: one endpoint in the workspace, subscribed to another event
//     (the endpoints read at every write, nothing queued);
//   - one: one endpoint subscribed to trove.memory.updated (a delivery
//     row and the endpoint's job per write);
//   - drv, drv+read: the driver alone, a minimal update (the memory row
//     and its version) without and with the read of the workspace's
//     endpoints that core's emitTx makes in every write transaction: the
//     read's own price, on a write with nothing else around it; read-µs
//     is the read's own time (timed inside the transaction) and
//     read-share the share of the wall time those reads take at none's
//     write rate.
//
// The variants run in alternating rounds, so a burst of load elsewhere on
// the machine hits them alike, and it reports each one's writes/s and
// their ratios to none.
func BenchWebhookEmit(b *testing.B, open func(b *testing.B) storage.Driver, concurrency []int) {
	for _, conc := range concurrency {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			type variant struct {
				name   string
				events []string // nil: no endpoint
				op     func(i int) error
				d      time.Duration
			}
			vs := []*variant{{name: "none"}, {name: "other", events: []string{trove.HookSessionDeleted}},
				{name: "one", events: []string{trove.HookMemoryUpdated}}, {name: "drv"}, {name: "drv+read"}}
			d := open(b)
			for _, v := range vs[:3] {
				v.op = benchEmitSetup(b, d, "wrkspc_"+v.name, conc, v.events)
			}
			var readNS atomic.Int64
			vs[3].op = benchDriverUpdate(b, d, "wrkspc_drv", conc, nil)
			vs[4].op = benchDriverUpdate(b, d, "wrkspc_drvread", conc, &readNS)
			const rounds = 4
			done := 0
			b.ResetTimer()
			for r := range rounds {
				n := (b.N - done) / (rounds - r)
				if n == 0 {
					continue
				}
				for _, v := range vs {
					d, err := benchConcurrently(conc, n, v.op)
					if err != nil {
						b.Fatal(err)
					}
					v.d += d
				}
				done += n
			}
			b.StopTimer()
			if done == 0 {
				return
			}
			rate := func(v *variant) float64 { return float64(done) / v.d.Seconds() }
			for _, v := range vs {
				b.ReportMetric(rate(v), v.name+"-writes/s")
			}
			b.ReportMetric(rate(vs[1])/rate(vs[0]), "other/none")
			b.ReportMetric(rate(vs[2])/rate(vs[0]), "one/none")
			b.ReportMetric(rate(vs[4])/rate(vs[3]), "read/drv")
			// The read's own time per write, and the share of the wall time
			// the reads would take at none's write rate: the bound on what
			// they cost a driver that runs its writes one at a time
			// (SQLite's committer), more than they cost one that runs them
			// side by side.
			perRead := float64(readNS.Load()) / float64(done)
			b.ReportMetric(perRead/1e3, "read-µs")
			b.ReportMetric(perRead*rate(vs[0])/1e9, "read-share")
		})
	}
}

// benchEmit is a workspace with a store of one memory per goroutine (so
// that PostgreSQL's per-store lock does not serialize them).
type benchEmit struct {
	svc    *core.Service
	ctx    context.Context
	stores []string
	mems   []string
}

// benchEmitSetup makes a workspace with conc stores of one memory (and an
// endpoint for events, when not nil) and returns the write of goroutine
// i%conc.
func benchEmitSetup(b *testing.B, d storage.Driver, ws string, conc int, events []string) func(i int) error {
	e := benchEmitEnv(b, d, ws, conc, events)
	return func(i int) error {
		_, err := e.svc.UpdateMemory(e.ctx, e.stores[i%conc], e.mems[i%conc], trove.UpdateMemoryParams{Content: new(fmt.Sprint(i))})
		return err
	}
}

func benchEmitEnv(b *testing.B, d storage.Driver, ws string, conc int, events []string) *benchEmit {
	b.Helper()
	e := &benchEmit{svc: core.New(d, core.Options{Webhooks: core.WebhookOptions{AllowHTTP: true, AllowPrivate: true}}),
		ctx: trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: ws,
			Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bench"}})}
	if events != nil {
		if _, _, err := e.svc.CreateWebhook(e.ctx, trove.CreateWebhookParams{URL: "http://127.0.0.1:9/hook", EnabledEvents: events}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range conc {
		st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: fmt.Sprint("bench", i)})
		if err != nil {
			b.Fatal(err)
		}
		m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/m.md", Content: "0"})
		if err != nil {
			b.Fatal(err)
		}
		e.stores, e.mems = append(e.stores, st.ID), append(e.mems, m.ID)
	}
	return e
}

// benchDriverUpdate returns the driver-level update of goroutine i%conc's
// memory (MemoryUpdate + VersionInsert in one Write), with the endpoints'
// read (WebhookList) first when read is not nil, adding the read's own
// time in nanoseconds to it.
func benchDriverUpdate(b *testing.B, d storage.Driver, ws string, conc int, read *atomic.Int64) func(i int) error {
	b.Helper()
	e := benchEmitEnv(b, d, ws, conc, nil)
	mems := make([]*trove.Memory, conc)
	for i, id := range e.mems {
		m, err := d.MemoryGet(context.Background(), e.stores[i], id, true)
		if err != nil {
			b.Fatal(err)
		}
		mems[i] = m
	}
	return func(i int) error {
		m := mems[i%conc]
		return d.Write(context.Background(), func(tx storage.Tx) error {
			ctx := context.Background()
			if read != nil {
				start := time.Now()
				if _, err := tx.WebhookList(ctx, ws); err != nil {
					return err
				}
				read.Add(int64(time.Since(start)))
			}
			now := time.Now().UTC().Truncate(time.Microsecond)
			c := fmt.Sprint(i)
			m.Content, m.SizeBytes, m.VersionID, m.UpdatedAt = &c, len(c), trove.NewID(trove.PrefixVersion, now), now
			if err := tx.MemoryUpdate(ctx, m); err != nil {
				return err
			}
			p, sz := m.Path, m.SizeBytes
			return tx.VersionInsert(ctx, &trove.MemoryVersion{ID: m.VersionID, StoreID: m.StoreID, MemoryID: m.ID,
				Operation: trove.OpModified, Path: &p, Content: &c, SizeBytes: &sz, SHA256: &m.SHA256, CreatedAt: now})
		})
	}
}

// benchConcurrently runs op(0..n-1) on conc goroutines (goroutine g runs
// the ops i with i%conc == g, so each keeps to its own memory) and returns
// the wall time.
func benchConcurrently(conc, n int, op func(i int) error) (time.Duration, error) {
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	start := time.Now()
	for g := range conc {
		wg.Go(func() {
			for i := g; i < n && failed.Load() == nil; i += conc {
				if err := op(i); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		return 0, *p
	}
	return time.Since(start), nil
}
