package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// TestStoreStats: GET /trove/v1/memory_stores/{id}/stats answers the
// store's counters and limits as core has them, httpapi.Client reads them
// back equal, and an unknown store is a 404.
func TestStoreStats(t *testing.T) {
	e := newEnv(t, netHTTP)
	c := httpapi.NewClient(e.url, e.key, httpapi.WithWorkspaceID(testWorkspace))
	ctx := context.Background()
	st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "stats"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a", Content: "héllo"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("hello, world")}); err != nil {
		t.Fatal(err)
	}
	got, err := c.StoreStats(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	l := trove.DefaultLimits()
	want := &trove.StoreStats{StoreID: st.ID, MemoryCount: 1, ContentBytes: 12, VersionCount: 2,
		MaxMemories: l.MaxMemoriesPerStore, MaxBytes: int64(l.MaxStoreBytes), MaxVersions: int64(l.MaxVersionsPerStore)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Client.StoreStats (-want +got):\n%s", diff)
	}
	req, _ := http.NewRequest(http.MethodGet, e.url+"/trove/v1/memory_stores/"+st.ID+"/stats", nil)
	req.Header.Set("x-api-key", e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stats = %d %s (%v)", resp.StatusCode, body, err)
	}
	wantRaw := map[string]any{"type": "memory_store_stats", "memory_store_id": st.ID, "memory_count": 1.0, "content_bytes": 12.0, "version_count": 2.0,
		"limits": map[string]any{"memories": 10000.0, "content_bytes": 104857600.0, "versions": 250000.0}}
	if diff := cmp.Diff(wantRaw, raw); diff != "" {
		t.Errorf("GET stats body (-want +got):\n%s", diff)
	}
	_, err = c.StoreStats(ctx, "memstore_missing")
	if trove.ErrorCode(err) != trove.ENOTFOUND || !strings.Contains(err.Error(), "not") {
		t.Errorf("StoreStats(unknown) = %v, want ENOTFOUND", err)
	}
}
