package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

func apiPrincipal(ws string) context.Context {
	return trove.WithPrincipal(context.Background(), &trove.Principal{
		WorkspaceID: ws,
		Actor:       trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_test"},
	})
}

// TestResilience shows that the driver rides out PostgreSQL going away:
// killed backends are replaced transparently, an unreachable database
// fails calls fast with EUNAVAILABLE (503 at the edge), and the same *DB
// works again once the database is back, without reopening.
func TestResilience(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	app := randomName("trove_resilience_")
	p, purl := newProxy(t, withParam(t, url, "application_name", app))
	const connectTimeout = time.Second
	db := openDBOn(t, purl, newSchema(t), postgres.Options{MaxConns: 4, ConnectTimeout: connectTimeout})
	svc := core.New(db, core.Options{})
	ctx := apiPrincipal("ws")
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "resilience"})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/m", Content: "v0"})
	if err != nil {
		t.Fatal(err)
	}
	// The same service over HTTP, to see what a client gets.
	_, secret, err := svc.CreateKey(context.Background(), "ws", "resilience")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc, Health: db.Ping}))
	t.Cleanup(srv.Close)
	// httpStatus returns the status and x-should-retry of a GET of the memory.
	httpStatus := func() (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+memPath(st.ID, mem.ID), nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("anthropic-beta", "agent-memory-2026-07-22")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("GET memory: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("x-should-retry")
	}
	n := 0
	// roundTrip does one write and one read and returns the first error.
	roundTrip := func() error {
		n++
		if _, err := svc.UpdateMemory(ctx, st.ID, mem.ID, trove.UpdateMemoryParams{Content: ptr(fmt.Sprintf("v%d", n))}); err != nil {
			return err
		}
		_, err := svc.GetMemory(ctx, st.ID, mem.ID, trove.ViewFull)
		return err
	}
	// Warm the pool up to several connections.
	for range 8 {
		if err := roundTrip(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("terminated backends are replaced without errors", func(t *testing.T) {
		admin := adminConn(t)
		bg := context.Background()
		before := db.Pool().Stat().NewConnsCount()
		var killed int
		if err := admin.QueryRow(bg, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, app).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed == 0 {
			t.Fatal("no backend of the pool found to terminate")
		}
		// Wait until the server has really closed them.
		for deadline := time.Now().Add(10 * time.Second); ; {
			var left int
			if err := admin.QueryRow(bg, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d terminated backends still there", left)
			}
		}
		for i := range 8 {
			if err := roundTrip(); err != nil {
				t.Fatalf("round trip %d after %d backends were terminated: %v", i, killed, err)
			}
		}
		if after := db.Pool().Stat().NewConnsCount(); after <= before {
			t.Fatalf("pool made no new connection (%d → %d)", before, after)
		}
	})

	for _, mode := range []struct {
		name string
		mode proxyMode
	}{
		{"refused", proxyDown},
		{"silent", proxyBlackhole},
	} {
		t.Run("database "+mode.name+" then back", func(t *testing.T) {
			p.setMode(mode.mode)
			for i := range 3 {
				start := time.Now()
				err := roundTrip()
				if code(err) != trove.EUNAVAILABLE {
					t.Fatalf("call %d while the database is %s = %v, want EUNAVAILABLE", i, mode.name, err)
				}
				if d := time.Since(start); d > 3*connectTimeout {
					t.Fatalf("call %d took %v to fail (connect timeout %v)", i, d, connectTimeout)
				}
			}
			// The driver itself answers with a *trove.Error, as the port says.
			err := db.Read(context.Background(), func(tx storage.Tx) error {
				_, err := tx.MemoryGet(context.Background(), st.ID, mem.ID, false)
				return err
			})
			if te, ok := err.(*trove.Error); !ok || te.Code != trove.EUNAVAILABLE {
				t.Fatalf("driver Read while the database is %s = %T %v, want *trove.Error EUNAVAILABLE", mode.name, err, err)
			}
			// Over HTTP: a retryable 503, not a 500.
			if code, retry := httpStatus(); code != http.StatusServiceUnavailable || retry != "true" {
				t.Fatalf("GET while the database is %s = %d (x-should-retry %q), want 503 with x-should-retry: true", mode.name, code, retry)
			}
			p.setMode(proxyUp)
			if code, _ := httpStatus(); code != http.StatusOK {
				t.Fatalf("GET after the database came back = %d, want 200", code)
			}
			for i := range 4 {
				if err := roundTrip(); err != nil {
					t.Fatalf("call %d after the database came back: %v", i, err)
				}
			}
		})
	}

	got, err := svc.GetMemory(ctx, st.ID, mem.ID, trove.ViewFull)
	if err != nil || *got.Content != fmt.Sprintf("v%d", n) {
		t.Fatalf("final content = %v, %v; want v%d", got, err, n)
	}
}

func ptr[T any](v T) *T { return &v }
