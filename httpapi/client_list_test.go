package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/loadgen"
)

// listBoth lists one page through ListMemories (the page decoded by
// decodeMemoryPage) and through ListMemoriesSDK (the SDK's decoder, as
// before) and fails t unless both give the same page or the same error.
func listBoth(t *testing.T, c *httpapi.Client, store string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	t.Helper()
	ctx := context.Background()
	got, err := c.ListMemories(ctx, store, p)
	want, wantErr := c.ListMemoriesSDK(ctx, store, p)
	// == on times: the same instant, location and representation, not
	// only Equal (which go-cmp would use).
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a == b })); diff != "" {
		t.Errorf("ListMemories(%+v): lean vs SDK page (-SDK +lean):\n%s", p, diff)
	}
	if diff := cmp.Diff(wantErr, err, cmpopts.IgnoreFields(trove.Error{}, "Err")); diff != "" {
		t.Errorf("ListMemories(%+v): lean vs SDK error (-SDK +lean):\n%s", p, diff)
	}
	return got, err
}

// TestListMemoriesLeanVsSDK: against a real server over SQLite, every page
// of listings at several depths, prefixes, views and page sizes (unicode
// paths, empty and awkward contents, prefixes folded at depth, cursors)
// is the same through the client's own decoding as through the SDK's,
// and so are the errors.
func TestListMemoriesLeanVsSDK(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr)
		ctx := e.ctx()
		st, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "lean"})
		if err != nil {
			t.Fatal(err)
		}
		mems := map[string]string{
			"/a.md":              "hello",
			"/empty.md":          "",
			"/dir/x.md":          "line\n\t\"quoted\" \\ <html> & \u2028\u2029 \x7f",
			"/dir/sub/deep.md":   "deep",
			"/dir/sub/z/leaf.md": strings.Repeat("long ", 2000),
			"/é/ü 😀.md":          "é 😀 中文",
			"/é/中文/名前.md":        "",
		}
		for i := range 45 {
			mems[fmt.Sprintf("/many/m%02d.md", i)] = fmt.Sprintf("# memory %d\n", i)
		}
		for p, content := range mems {
			if _, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: content}); err != nil {
				t.Fatal(err)
			}
		}
		// A memory updated after its creation, so its times and version differ.
		m, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/upd.md", Content: "v1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("v2")}); err != nil {
			t.Fatal(err)
		}
		c := e.clientFor(e.key)

		for _, view := range []trove.View{"", trove.ViewBasic, trove.ViewFull} {
			for _, prefix := range []string{"", "/", "/dir/", "/many/", "/é/", "/nothing/"} {
				for _, depth := range []int{0, 1} {
					for _, limit := range []int{0, 1, 7, 20} {
						p := trove.ListMemoriesParams{View: view, PathPrefix: prefix, Depth: depth, Limit: limit}
						t.Run(fmt.Sprintf("view=%s/prefix=%s/depth=%d/limit=%d", view, prefix, depth, limit), func(t *testing.T) {
							seen, contents, prefixes := 0, 0, 0
							for pages := 0; ; pages++ {
								if pages > 100 {
									t.Fatal("more than 100 pages")
								}
								page, err := listBoth(t, c, st.ID, p)
								if err != nil {
									t.Fatal(err)
								}
								for _, it := range page.Data {
									switch {
									case it.Memory != nil:
										seen++
										if it.Memory.Content != nil {
											contents++
										}
									case it.Prefix != nil:
										prefixes++
									}
								}
								if page.NextPage == "" {
									break
								}
								p.Cursor = page.NextPage
							}
							// The listings are not empty where memories are, and
							// show contents and prefixes where they should: the
							// comparison is not between two empty pages.
							if prefix != "/nothing/" && seen+prefixes == 0 {
								t.Error("listed nothing")
							}
							if (view == trove.ViewFull) != (contents > 0) && seen > 0 {
								t.Errorf("view %q: %d of %d memories with content", view, contents, seen)
							}
							if depth == 1 && prefix == "/dir/" && prefixes == 0 {
								t.Error("depth 1 of /dir/ folded nothing")
							}
						})
					}
				}
			}
		}

		for _, c := range []struct {
			name   string
			client *httpapi.Client
			store  string
			p      trove.ListMemoriesParams
			code   string
		}{
			{"unknown store", c, "memstore_nope", trove.ListMemoriesParams{}, trove.ENOTFOUND},
			{"empty store ID", c, "", trove.ListMemoriesParams{}, trove.ENOTFOUND},
			{"bad cursor", c, st.ID, trove.ListMemoriesParams{Cursor: "garbage"}, trove.EINVALID},
			{"prefix without slash", c, st.ID, trove.ListMemoriesParams{PathPrefix: "/dir"}, trove.EINVALID},
			{"limit too large", c, st.ID, trove.ListMemoriesParams{Limit: 1000}, trove.EINVALID},
			{"depth 2", c, st.ID, trove.ListMemoriesParams{Depth: 2}, trove.EINVALID},
			{"bad view", c, st.ID, trove.ListMemoriesParams{View: "everything"}, trove.EINVALID},
			{"bad key", e.clientFor("trove_sk_nope"), st.ID, trove.ListMemoriesParams{}, trove.EUNAUTHENTICATED},
			{"other workspace", httpapi.NewClient(e.url, e.key, httpapi.WithMaxRetries(0), httpapi.WithWorkspaceID("wrkspc_other"), httpapi.WithHTTPClient(e.client())), st.ID, trove.ListMemoriesParams{}, trove.EFORBIDDEN},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, err := listBoth(t, c.client, c.store, c.p)
				wantCode(t, c.name, err, c.code)
			})
		}
	})
}

// TestListMemoriesLeanVsSDKCanned: answers a real server does not give,
// as the hosted API or a proxy might (members the client does not know,
// nulls and absences, other time formats, every error status), read the
// same through both paths; a body that is not a listing is EINTERNAL.
func TestListMemoriesLeanVsSDKCanned(t *testing.T) {
	t.Parallel()
	const item = `{"type":"memory","id":"mem_1","memory_store_id":"memstore_1","path":"/a.md",` +
		`"content_size_bytes":5,"content_sha256":"2cf2","memory_version_id":"memver_1",` +
		`"created_at":"2026-12-01T10:00:00.123456789+02:00","updated_at":"2026-12-01T08:00:01Z"`
	for _, c := range []struct {
		name   string
		status int
		body   string
		code   string // the error's code; "" for a page
	}{
		{"unknown members", 200, `{"data":[` + item + `,"content":"hello","labels":{"a":[1,2]},"next":null},{"type":"memory_prefix","path":"/d/","extra":true}],"next_page":"c2","has_more":true,"first_id":"x"}`, ""},
		{"content null", 200, `{"data":[` + item + `,"content":null}],"next_page":null}`, ""},
		{"content absent, no next_page", 200, `{"data":[` + item + `}]}`, ""},
		{"content empty", 200, `{"data":[` + item + `,"content":""}],"next_page":""}`, ""},
		{"escapes in strings", 200, `{"data":[{"type":"memory","path":"/\u00e9\ud83d\ude00.md","content":"a\nb\t\"c\"\\\u2028\/"}],"next_page":null}`, ""},
		{"lenient times", 200, `{"data":[{"type":"memory","id":"m","created_at":"2026-12-01 10:00:00","updated_at":"2026-12-01"},{"type":"memory","id":"n","created_at":"not a time","updated_at":""}]}`, ""},
		{"no data", 200, `{"next_page":null}`, ""},
		{"data null", 200, `{"data":null}`, ""},
		{"empty data", 200, `{"data":[],"next_page":null}`, ""},
		{"unknown item type", 200, `{"data":[{"type":"folder","path":"/x/"}]}`, trove.EINTERNAL},
		{"400", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad page"}}`, trove.EINVALID},
		{"401", 401, `{"type":"error","error":{"type":"authentication_error","message":"who?"}}`, trove.EUNAUTHENTICATED},
		{"403", 403, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, trove.EFORBIDDEN},
		{"404", 404, `{"type":"error","error":{"type":"not_found_error","message":"memory store not found"}}`, trove.ENOTFOUND},
		{"409", 409, `{"type":"error","error":{"type":"conflict_error","message":"busy"}}`, trove.ECONFLICT},
		{"429", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, trove.EUNAVAILABLE},
		{"500", 500, `{"type":"error","error":{"type":"api_error","message":"oops"}}`, trove.EINTERNAL},
		{"503 api_error", 503, `{"type":"error","error":{"type":"api_error","message":"down"}}`, trove.EUNAVAILABLE},
		{"529", 529, `{"type":"error","error":{"type":"overloaded_error","message":"overloaded"}}`, trove.EUNAVAILABLE},
		{"502 not JSON", 502, `<html>bad gateway</html>`, trove.EUNAVAILABLE},
		{"418 no envelope", 418, ``, trove.EINTERNAL},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu    sync.Mutex
				paths []string
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				paths = append(paths, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("anthropic-beta"))
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			cl := httpapi.NewClient(srv.URL, "trove_sk_x", httpapi.WithMaxRetries(0))
			p := trove.ListMemoriesParams{PathPrefix: "/d é/", Depth: 2, Limit: 7, Cursor: "c+1/=", View: trove.ViewFull}
			page, err := listBoth(t, cl, "memstore_1", p)
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.name == "unknown members" && (len(page.Data) != 2 || page.Data[0].Memory == nil || page.Data[0].Memory.Content == nil || page.NextPage != "c2") {
					t.Errorf("page = %+v, want the memory with its content, the prefix and next page c2", page)
				}
			} else {
				wantCode(t, c.name, err, c.code)
			}
			// Both paths sent the same request.
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != 2 || paths[0] != paths[1] {
				t.Errorf("requests = %q, want twice the same", paths)
			}
		})
	}

	t.Run("not a listing", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"data":{"type":"memory"}}`)
		}))
		defer srv.Close()
		cl := httpapi.NewClient(srv.URL, "trove_sk_x", httpapi.WithMaxRetries(0))
		_, err := cl.ListMemories(context.Background(), "memstore_1", trove.ListMemoriesParams{})
		wantCode(t, "a listing whose data is an object", err, trove.EINTERNAL)
	})
}

// BenchmarkClientListMemories walks a store of 2,000 small memories
// (view=full, pages of 20, as a first `trove sync` lists) through the
// client over loopback HTTP to a real server over SQLite: lean is
// ListMemories (decodeMemoryPage), sdk the SDK's decoder (ListMemoriesSDK).
// cpu-µs/op is the whole process's CPU (server included) per walk.
func BenchmarkClientListMemories(b *testing.B) {
	ctx := context.Background()
	svc, secret, pctx, st := benchStore(b, core.Options{})
	const n = 2000
	for i := range n {
		if _, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{
			Path: fmt.Sprintf("/d%02d/f%05d.md", i%50, i), Content: fmt.Sprintf("# memory %d\nsome remembered fact\n", i)}); err != nil {
			b.Fatal(err)
		}
	}
	base, stop := serveTransport(b, netHTTP, httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}), nil)
	defer stop()
	c := httpapi.NewClient(base, secret)
	for _, path := range []struct {
		name string
		list func(context.Context, string, trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error)
	}{{"lean", c.ListMemories}, {"sdk", c.ListMemoriesSDK}} {
		b.Run(path.name, func(b *testing.B) {
			cpu0 := loadgen.ProcessCPU()
			for b.Loop() {
				seen := 0
				p := trove.ListMemoriesParams{View: trove.ViewFull, Limit: 20}
				for {
					page, err := path.list(ctx, st.ID, p)
					if err != nil {
						b.Fatal(err)
					}
					seen += len(page.Data)
					if p.Cursor = page.NextPage; p.Cursor == "" {
						break
					}
				}
				if seen != n {
					b.Fatalf("listed %d memories, want %d", seen, n)
				}
			}
			b.ReportMetric(float64((loadgen.ProcessCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
