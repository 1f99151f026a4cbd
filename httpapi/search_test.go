package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// getJSON sends a GET with the bearer key and returns the status, the
// Trove-Search header and the decoded JSON answer.
func getJSON(t *testing.T, base, key, pathAndQuery string) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+pathAndQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("GET %s answered %d with a body that is not a JSON object: %q", pathAndQuery, res.StatusCode, data)
	}
	return res.StatusCode, res.Header.Get("Trove-Search"), out
}

// TestClientSearch drives Search through httpapi.Client over real HTTP and
// checks it returns exactly what core returns, page by page, with an API
// key and with a session token (which sees only its attached stores), and
// that refusals keep their codes.
func TestClientSearch(t *testing.T) {
	t.Parallel()
	d := newDirServer(t, nil)
	a, _ := d.fill(t)
	b, _ := d.fill(t)
	for i, st := range []*trove.Store{a, b, a, b, a} {
		body := strings.Repeat("lighthouse keeper ", i+1) + "on the île de Sein"
		if _, err := d.svc.CreateMemory(d.local(), st.ID, trove.CreateMemoryParams{Path: "/log/" + string(rune('a'+i)) + ".md", Content: body}); err != nil {
			t.Fatal(err)
		}
	}
	c := httpapi.NewClient(d.url, d.key)
	ctx := context.Background()
	for _, p := range []trove.SearchParams{
		{Query: "lighthouse", Limit: 2},
		{Query: `"keeper on" île`, StoreIDs: []string{a.ID}},
		{Query: "lightho", PathPrefix: "/log"},
	} {
		var viaClient, direct []trove.SearchResult
		for q := p; ; {
			pg, err := c.Search(ctx, q)
			if err != nil {
				t.Fatalf("client Search(%+v): %v", q, err)
			}
			want, err := d.svc.Search(d.local(), q)
			if err != nil {
				t.Fatal(err)
			}
			if pg.NextPage != want.NextPage {
				t.Fatalf("next page %q, core %q", pg.NextPage, want.NextPage)
			}
			viaClient, direct = append(viaClient, pg.Data...), append(direct, want.Data...)
			if pg.NextPage == "" {
				break
			}
			q.Cursor = pg.NextPage
		}
		if len(direct) == 0 {
			t.Fatalf("%+v found nothing", p)
		}
		if diff := cmp.Diff(direct, viaClient); diff != "" {
			t.Errorf("Search(%+v) through the client vs core (-core +client):\n%s", p, diff)
		}
	}

	// A session token searches its attached store only.
	_, token, err := d.svc.CreateSession(d.local(), trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: b.ID, Access: trove.AccessReadOnly}}})
	if err != nil {
		t.Fatal(err)
	}
	sc := httpapi.NewClient(d.url, token)
	pg, err := sc.Search(ctx, trove.SearchParams{Query: "lighthouse"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Data) != 2 {
		t.Fatalf("session search: %d results, want b's 2", len(pg.Data))
	}
	for _, r := range pg.Data {
		if r.Memory.StoreID != b.ID {
			t.Errorf("session search found %s of store %s", r.Memory.Path, r.Memory.StoreID)
		}
	}

	for _, tc := range []struct {
		name string
		c    *httpapi.Client
		p    trove.SearchParams
		code string
	}{
		{"empty query", c, trove.SearchParams{}, trove.EINVALID},
		{"bad cursor", c, trove.SearchParams{Query: "x", Cursor: "page_zz"}, trove.EINVALID},
		{"unknown store", c, trove.SearchParams{Query: "x", StoreIDs: []string{"memstore_nope"}}, trove.ENOTFOUND},
		{"store the session lacks", sc, trove.SearchParams{Query: "x", StoreIDs: []string{a.ID}}, trove.ENOTFOUND},
		{"bad key", httpapi.NewClient(d.url, "trove_sk_nope"), trove.SearchParams{Query: "x"}, trove.EUNAUTHENTICATED},
	} {
		_, err := tc.c.Search(ctx, tc.p)
		wantCode(t, tc.name, err, tc.code)
		if errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: %v is reported as an unsupported operation", tc.name, err)
		}
	}
}

// TestSearchWire checks the endpoint's JSON: the result's shape with byte
// offsets, next_page, and refusals with the error envelope and the
// Trove-Search header.
func TestSearchWire(t *testing.T) {
	t.Parallel()
	d := newDirServer(t, nil)
	st, _ := d.fill(t)
	m, err := d.svc.CreateMemory(d.local(), st.ID, trove.CreateMemoryParams{Path: "/café/menu.md", Content: "Crème brûlée <b>& café</b>"})
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, out := getJSON(t, d.url, d.key, "/trove/v1/search?"+url.Values{"q": {"CAFÉ"}, "store_id": {st.ID}}.Encode())
	if status != http.StatusOK || hdr != "1" {
		t.Fatalf("search: %d, Trove-Search %q, %v", status, hdr, out)
	}
	want := map[string]any{
		"data": []any{map[string]any{
			"type": "search_result",
			"memory": map[string]any{
				"type": "memory", "id": m.ID, "memory_store_id": st.ID, "path": "/café/menu.md", "content": nil,
				"content_size_bytes": float64(m.SizeBytes), "content_sha256": m.SHA256, "memory_version_id": m.VersionID,
				"created_at": m.CreatedAt.UTC().Format(time.RFC3339Nano), "updated_at": m.UpdatedAt.UTC().Format(time.RFC3339Nano),
			},
			"snippet":         "Crème brûlée <b>& café</b>",
			"snippet_offset":  float64(0),
			"highlights":      []any{map[string]any{"start": float64(21), "end": float64(26)}},
			"path_highlights": []any{map[string]any{"start": float64(1), "end": float64(6)}},
		}},
		"next_page": nil,
	}
	score := out["data"].([]any)[0].(map[string]any)["score"]
	if s, ok := score.(float64); !ok || s <= 0 {
		t.Errorf("score %v", score)
	}
	delete(out["data"].([]any)[0].(map[string]any), "score")
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("search answer (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name, query string
		key         string
		status      int
		errType     string
	}{
		{"no query", "", d.key, 400, "invalid_request_error"},
		{"unknown parameter", "?q=a&view=full", d.key, 400, "invalid_request_error"},
		{"repeated q", "?q=a&q=b", d.key, 400, "invalid_request_error"},
		{"bad limit", "?q=a&limit=zero", d.key, 400, "invalid_request_error"},
		{"limit too big", "?q=a&limit=101", d.key, 400, "invalid_request_error"},
		{"unknown store", "?q=a&store_id=memstore_nope", d.key, 404, "not_found_error"},
		{"no key", "?q=a", "", 401, "authentication_error"},
	} {
		status, hdr, out := getJSON(t, d.url, tc.key, "/trove/v1/search"+tc.query)
		e, _ := out["error"].(map[string]any)
		if status != tc.status || e == nil || e["type"] != tc.errType || e["message"] == "" {
			t.Errorf("%s: %d %v, want %d %s", tc.name, status, out, tc.status, tc.errType)
		}
		if tc.key != "" && hdr != "1" {
			t.Errorf("%s: Trove-Search header %q", tc.name, hdr)
		}
	}
}

// TestClientSearchUnsupported runs the client against a real server made
// to lack the search endpoint: the client reports errors.ErrUnsupported.
func TestClientSearchUnsupported(t *testing.T) {
	t.Parallel()
	d := newDirServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/trove/v1/search" {
				r.URL.Path = "/trove/v1/no-such-route"
			}
			h.ServeHTTP(w, r)
		})
	})
	_, err := httpapi.NewClient(d.url, d.key).Search(context.Background(), trove.SearchParams{Query: "x"})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Search against a server without the endpoint: %v, want errors.ErrUnsupported", err)
	}
}
