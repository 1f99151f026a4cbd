package dreamrun_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/dreamrun"
	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage/postgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// newPostgresEnv is newEnv over a fresh schema of the test PostgreSQL,
// dropped at the end.
func newPostgresEnv(t *testing.T) *env {
	t.Helper()
	url := pgtest.URL(t)
	schema := fmt.Sprintf("trove_dream_%d", rand.Uint64())
	db, err := postgres.Open(context.Background(), url, postgres.Options{AutoMigrate: true, Schema: schema})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() {
		db.Close()
		pgtest.DropSchema(t, schema)
	})
	return newEnvOn(t, db)
}

// TestTwoNodesOnePostgres: two nodes (their own pools, services and
// runners with two workers each) over one PostgreSQL database; every
// dream runs exactly once, on one node.
func TestTwoNodesOnePostgres(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	schema := fmt.Sprintf("trove_dream_%d", rand.Uint64())
	var dbs []*postgres.DB
	for range 2 {
		db, err := postgres.Open(ctx, url, postgres.Options{AutoMigrate: true, Schema: schema})
		if err != nil {
			t.Fatalf("postgres.Open: %v", err)
		}
		dbs = append(dbs, db)
	}
	t.Cleanup(func() {
		for _, db := range dbs {
			db.Close()
		}
		pgtest.DropSchema(t, schema)
	})
	svcA, svcB := core.New(dbs[0], core.Options{}), core.New(dbs[1], core.Options{})
	k, _, err := svcA.CreateKey(ctx, "wrkspc_multi", "test")
	if err != nil {
		t.Fatal(err)
	}
	kctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: "wrkspc_multi", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	st, err := svcA.CreateStore(kctx, trove.CreateStoreParams{Name: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svcA.CreateMemory(kctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "a\n"}); err != nil {
		t.Fatal(err)
	}
	// Every dream has its own input session; the model's first request
	// names it, so the requests say which dream ran how often.
	const n = 8
	var dreams []*trove.Dream
	for i := range n {
		se, _, err := svcB.CreateSession(kctx, trove.CreateSessionParams{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := []*core.Service{svcA, svcB}[i%2].CreateDream(kctx, trove.CreateDreamParams{StoreID: st.ID, SessionIDs: []string{se.ID}, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		dreams = append(dreams, d)
	}
	srv := claudetest.New(t)
	srv.Loop(claudetest.Turn{Text: "done", Usage: claudetest.Usage{Input: 1, Output: 1}})
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, svc := range []*core.Service{svcA, svcB} {
		r := dreamrun.New(dreamrun.Config{Service: svc, Claude: &client, Owner: fmt.Sprintf("node-%d", i), Workers: 2,
			Poll: 5 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
		wg.Go(func() { r.Run(rctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for _, d := range dreams {
		for {
			got, err := svcA.GetDream(kctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Terminal() && got.LeaseOwner == "" {
				if got.Status != trove.DreamCompleted || got.Usage.InputTokens != 1 {
					t.Fatalf("dream %s = %+v", d.ID, got)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("dream %s still %s", d.ID, got.Status)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	runs := map[string]int{}
	for _, r := range srv.Requests() {
		first := string(r.Messages[0])
		for _, d := range dreams {
			if strings.Contains(first, d.SessionIDs[0]) {
				runs[d.ID]++
			}
		}
	}
	for _, d := range dreams {
		if runs[d.ID] != 1 {
			t.Errorf("dream %s ran %d times, want once", d.ID, runs[d.ID])
		}
	}
	if len(srv.Requests()) != n {
		t.Errorf("%d model requests for %d dreams", len(srv.Requests()), n)
	}
}
