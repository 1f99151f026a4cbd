package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// TestSDKErrorTypes reads back the error types the tests above do not.
func TestSDKErrorTypes(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr, func(c *httpapi.Config) { c.MaxBodyBytes = 64 << 10 })
		ctx := context.Background()

		bad := e.sdk(option.WithAPIKey("trove_sk_wrong"))
		c := e.sdk()
		_, err := bad.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
		wantAPIError(t, err, 401, "authentication_error")

		_, err = c.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{WorkspaceID: anthropic.String("wrkspc_011CZkZaBF1tNoB5wlCeusgy")})
		apierr := wantAPIError(t, err, 403, "permission_error")
		if apierr.WorkspaceID != testWorkspace {
			t.Errorf("apierr.WorkspaceID = %q, want the credential's %q", apierr.WorkspaceID, testWorkspace)
		}

		st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "E", Betas: []anthropic.AnthropicBeta{"computer-use-2024-10-22"}})
		if err != nil {
			t.Fatalf("extra beta: %v", err)
		}
		_, err = c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/big", Content: anthropic.String(strings.Repeat("é", 40<<10))})
		wantAPIError(t, err, 413, "request_too_large")

		// Both memory betas at once: 400.
		_, err = c.Beta.MemoryStores.Get(ctx, st.ID, anthropic.BetaMemoryStoreGetParams{Betas: []anthropic.AnthropicBeta{httpapi.BetaManagedAgents}})
		wantAPIError(t, err, 400, "invalid_request_error")
	})
}

// TestSDKAutoPaging walks more than 1,000 memories through ListAutoPaging.
func TestSDKAutoPaging(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr)
		ctx := e.ctx()
		st, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "Many"})
		if err != nil {
			t.Fatal(err)
		}
		const n = 1050
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("/dir%d/m%04d.md", i%3, i))
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		work := make(chan string)
		for range 16 {
			wg.Go(func() {
				for p := range work {
					if _, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: p}); err != nil {
						errs <- err
					}
				}
			})
		}
		for _, p := range want {
			work <- p
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		slices.Sort(want)

		c := e.sdk()
		for _, tc := range []struct {
			name  string
			limit int64
			view  anthropic.BetaManagedAgentsMemoryView
		}{{"limit 100", 100, ""}, {"default limit", 0, ""}, {"full view", 100, anthropic.BetaManagedAgentsMemoryViewFull}} {
			var got []string
			p := anthropic.BetaMemoryStoreMemoryListParams{View: tc.view}
			if tc.limit > 0 {
				p.Limit = anthropic.Int(tc.limit)
			}
			before := e.count("GET", "/v1/memory_stores/"+st.ID+"/memories")
			it := c.Beta.MemoryStores.Memories.ListAutoPaging(context.Background(), st.ID, p)
			for it.Next() {
				m := it.Current()
				got = append(got, m.Path)
				if tc.view == anthropic.BetaManagedAgentsMemoryViewFull && m.Content != m.Path {
					t.Fatalf("%s: %s content %q", tc.name, m.Path, m.Content)
				}
			}
			if err := it.Err(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: paths (-want +got):\n%s", tc.name, diff)
			}
			pageSize := 20
			if tc.limit == 100 && tc.view == "" {
				pageSize = 100
			}
			if reqs, max := e.count("GET", "/v1/memory_stores/"+st.ID+"/memories")-before, n/pageSize+2; reqs > max {
				t.Errorf("%s: %d page requests, want at most %d", tc.name, reqs, max)
			}
		}
	})
}

// TestConcurrentPreconditionUpdates has 16 writers race on one memory with
// content_sha256 preconditions over HTTP: every 200 is exactly one version,
// versions chain without a lost update, and the final content is the last
// acknowledged write.
func TestConcurrentPreconditionUpdates(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) { testConcurrentPreconditionUpdates(t, newEnv(t, tr)) })
}

func testConcurrentPreconditionUpdates(t *testing.T, e *testEnv) {
	ctx := context.Background()
	c := e.sdk(option.WithMaxRetries(0))
	st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "Race"})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/counter", Content: anthropic.String("start")})
	if err != nil {
		t.Fatal(err)
	}
	type ack struct {
		from, content, version string
	}
	const writers, perWriter = 16, 4
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < perWriter; {
				cur, err := c.Beta.MemoryStores.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: st.ID})
				if err != nil {
					t.Errorf("writer %d: get: %v", w, err)
					return
				}
				content := fmt.Sprintf("w%d-%d after %s", w, i, cur.MemoryVersionID)
				up, err := c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{
					MemoryStoreID: st.ID, Content: anthropic.String(content),
					Precondition: anthropic.BetaManagedAgentsPreconditionParam{ContentSha256: anthropic.String(cur.ContentSha256)},
				})
				var apierr *anthropic.Error
				switch {
				case err == nil:
					mu.Lock()
					acks = append(acks, ack{from: cur.ContentSha256, content: content, version: up.MemoryVersionID})
					mu.Unlock()
					i++
				case errors.As(err, &apierr) && apierr.StatusCode == http.StatusConflict:
					// Lost the race: re-read and try again.
				default:
					t.Errorf("writer %d: update: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Versions, oldest first.
	var versions []anthropic.BetaManagedAgentsMemoryVersion
	it := c.Beta.MemoryStores.MemoryVersions.ListAutoPaging(ctx, st.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{
		MemoryID: anthropic.String(mem.ID), Limit: anthropic.Int(20), View: anthropic.BetaManagedAgentsMemoryViewFull,
	})
	for it.Next() {
		versions = append(versions, it.Current())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(versions)
	if len(versions) != 1+writers*perWriter || len(acks) != writers*perWriter {
		t.Fatalf("%d versions and %d acks, want %d and %d", len(versions), len(acks), 1+writers*perWriter, writers*perWriter)
	}
	byVersion := map[string]ack{}
	for _, a := range acks {
		if _, dup := byVersion[a.version]; dup {
			t.Errorf("two acknowledged writes returned version %s", a.version)
		}
		byVersion[a.version] = a
	}
	for i, v := range versions[1:] {
		a, ok := byVersion[v.ID]
		if !ok {
			t.Errorf("version %s (%q) was never acknowledged", v.ID, v.Content)
			continue
		}
		if v.Content != a.content {
			t.Errorf("version %s content %q, acknowledged %q", v.ID, v.Content, a.content)
		}
		// No lost update: each write was based on the version just before.
		if prev := versions[i]; a.from != prev.ContentSha256 {
			t.Errorf("version %s was written over %s, not over its predecessor %s", v.ID, a.from, prev.ID)
		}
	}
	final, err := c.Beta.MemoryStores.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: st.ID})
	if err != nil {
		t.Fatal(err)
	}
	last := versions[len(versions)-1]
	if final.MemoryVersionID != last.ID || final.Content != byVersion[last.ID].content {
		t.Errorf("final memory = %s %q, want the last acknowledged write %s %q", final.MemoryVersionID, final.Content, last.ID, byVersion[last.ID].content)
	}
}

// TestDatabaseGone: once the database is closed under the server, calls are
// 503 api_error with x-should-retry: true, and /healthz says so.
func TestDatabaseGone(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		var e *testEnv
		e = newEnv(t, tr, func(c *httpapi.Config) {
			c.Health = func(ctx context.Context) error {
				_, err := e.svc.ListStores(e.ctx(), trove.ListStoresParams{Limit: 1})
				return err
			}
		})
		if r := e.do(t, rawReq{method: "GET", path: "/healthz"}); r.status != 200 {
			t.Fatalf("healthz before: %d %s", r.status, r.body)
		}
		if err := e.db.Close(); err != nil {
			t.Fatal(err)
		}
		r := e.do(t, rawReq{method: "GET", path: "/v1/memory_stores/memstore_x"})
		checkEnvelope(t, "closed database", r, 503, "api_error")
		if r.header.Get("x-should-retry") != "true" {
			t.Errorf("x-should-retry = %q, want true", r.header.Get("x-should-retry"))
		}
		if r := e.do(t, rawReq{method: "GET", path: "/healthz"}); r.status != 503 {
			t.Errorf("healthz after close: %d %s", r.status, r.body)
		}
	})
}
