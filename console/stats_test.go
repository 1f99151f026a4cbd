package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
	"github.com/trovehq/trove/core"
)

// countingCore is core with its memory listings counted.
type countingCore struct {
	*core.Service
	lists atomic.Int64
}

func (c *countingCore) ListMemories(ctx context.Context, storeID string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	c.lists.Add(1)
	return c.Service.ListMemories(ctx, storeID, p)
}

// plainServices hides every extension of core but trove.Services.
type plainServices struct{ trove.Services }

// TestStoreStatsJSON: the counts behind a store's page come from the
// stored counters (trove.StoreStatsService: no listing at all), and over
// services without them from paging the listing, with the same numbers.
func TestStoreStatsJSON(t *testing.T) {
	e := newBenchEnv(t)
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "counted"})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []string{"a", strings.Repeat("b", 2000), "héllo"} {
		m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/m" + string(rune('0'+i)), Content: c})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := e.svc.UpdateMemory(e.ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("aa")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stats := func(svc trove.Services) map[string]string {
		t.Helper()
		h := console.New(console.Config{Services: svc, Sessions: e.svc, Auth: e.svc})
		req := httptest.NewRequest("GET", "/console/stores/"+st.ID+"/stats", nil)
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: e.token})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("GET stats: %d %.300s", w.Code, w.Body.String())
		}
		var out map[string]string
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		delete(out, "last_change")
		delete(out, "last_change_at")
		delete(out, "last_change_ago")
		return out
	}
	cc := &countingCore{Service: e.svc}
	got := stats(cc)
	if diff := cmp.Diff(map[string]string{"memories": "3", "size": "2.0 KiB", "versions": "4"}, got); diff != "" {
		t.Errorf("stats from the counters (-want +got):\n%s", diff)
	}
	if n := cc.lists.Load(); n != 0 {
		t.Errorf("the stats listed the store's memories %d times, want 0 (stored counters)", n)
	}
	got = stats(plainServices{e.svc})
	if diff := cmp.Diff(map[string]string{"memories": "3", "size": "2.0 KiB", "versions": "?"}, got); diff != "" {
		t.Errorf("stats by paging (-want +got):\n%s", diff)
	}
}
