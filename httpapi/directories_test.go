package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// dirServer is a real Server over core and SQLite on a loopback net/http
// listener; wrap, when not nil, stands in front of it.
type dirServer struct {
	url, key, keyID string
	svc             *core.Service
}

func newDirServer(t *testing.T, wrap func(http.Handler) http.Handler) *dirServer {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(context.Background(), testWorkspace, "dirs")
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc})
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &dirServer{url: srv.URL, key: secret, keyID: k.ID, svc: svc}
}

func (d *dirServer) local() context.Context {
	return trove.WithPrincipal(context.Background(), &trove.Principal{
		WorkspaceID: testWorkspace, Actor: trove.NewActor(trove.ActorAPI, d.keyID),
	})
}

// fill creates a store with a memory at each path, through core.
func (d *dirServer) fill(t *testing.T, paths ...string) (*trove.Store, map[string]*trove.Memory) {
	t.Helper()
	st, err := d.svc.CreateStore(d.local(), trove.CreateStoreParams{Name: "dirs"})
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]*trove.Memory{}
	for _, p := range paths {
		m, err := d.svc.CreateMemory(d.local(), st.ID, trove.CreateMemoryParams{Path: p, Content: "c " + p})
		if err != nil {
			t.Fatal(err)
		}
		ms[p] = m
	}
	return st, ms
}

func (d *dirServer) paths(t *testing.T, storeID string) []string {
	t.Helper()
	pg, err := d.svc.ListMemories(d.local(), storeID, trove.ListMemoriesParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range pg.Data {
		out = append(out, it.Memory.Path)
	}
	return out
}

// post sends body to path with the key and returns the status, the
// Trove-Directories header and the decoded JSON answer.
func (d *dirServer) post(t *testing.T, path, body string) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.key)
	req.Header.Set("Content-Type", "application/json")
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
		t.Fatalf("POST %s answered %d with a body that is not a JSON object: %q", path, res.StatusCode, data)
	}
	return res.StatusCode, res.Header.Get("Trove-Directories"), out
}

func TestClientDirectories(t *testing.T) {
	t.Parallel()
	d := newDirServer(t, nil)
	st, ms := d.fill(t, "/a/x.md", "/a/b/y.md", "/ab/z.md", "/t")
	c := httpapi.NewClient(d.url, d.key)
	ctx := context.Background()

	// Refusals keep their code and conflict detail, and none is mistaken
	// for a missing endpoint.
	refusals := []struct {
		name string
		call func() error
		code string
	}{
		{"unknown store", func() error {
			_, err := c.RenameDirectory(ctx, "memstore_nope", trove.RenameDirectoryParams{From: "/a", To: "/b"})
			return err
		}, trove.ENOTFOUND},
		{"empty directory", func() error {
			_, err := c.DeleteDirectory(ctx, st.ID, trove.DeleteDirectoryParams{Path: "/nothing"})
			return err
		}, trove.ENOTFOUND},
		{"into its own subtree", func() error {
			_, err := c.RenameDirectory(ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/a/b/c"})
			return err
		}, trove.EINVALID},
		{"empty expect", func() error {
			_, err := c.RenameDirectory(ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/b", Expect: []trove.MemoryPrecondition{}})
			return err
		}, trove.EPRECONDITION},
		{"malformed expect", func() error {
			_, err := c.DeleteDirectory(ctx, st.ID, trove.DeleteDirectoryParams{Path: "/a", Expect: []trove.MemoryPrecondition{{MemoryID: ms["/a/x.md"].ID, SHA256: "nope"}}})
			return err
		}, trove.EINVALID},
	}
	for _, tc := range refusals {
		err := tc.call()
		wantCode(t, tc.name, err, tc.code)
		if errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("%s: %v is reported as an unsupported operation", tc.name, err)
		}
	}
	_, err := c.RenameDirectory(ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/t"})
	te := wantCode(t, "rename onto a memory", err, trove.EPATHCONFLICT)
	if te.ConflictingPath != "/t" || te.ConflictingMemoryID != ms["/t"].ID {
		t.Fatalf("conflict names %q %q, want /t %s", te.ConflictingPath, te.ConflictingMemoryID, ms["/t"].ID)
	}
	if diff := cmp.Diff([]string{"/a/b/y.md", "/a/x.md", "/ab/z.md", "/t"}, d.paths(t, st.ID)); diff != "" {
		t.Fatalf("refusals changed the store (-want +got):\n%s", diff)
	}

	// A rename with a matching expect: the client returns what core holds.
	expect := []trove.MemoryPrecondition{{MemoryID: ms["/a/x.md"].ID, SHA256: ms["/a/x.md"].SHA256}, {MemoryID: ms["/a/b/y.md"].ID, SHA256: ms["/a/b/y.md"].SHA256}}
	got, err := c.RenameDirectory(ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/n/a", Expect: expect})
	if err != nil {
		t.Fatalf("RenameDirectory: %v", err)
	}
	var want []trove.Memory
	for _, id := range []string{ms["/a/b/y.md"].ID, ms["/a/x.md"].ID} {
		m, err := d.svc.GetMemory(d.local(), st.ID, id, trove.ViewBasic)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, *m)
	}
	if diff := cmp.Diff(&trove.DirectoryChange{Memories: want}, got); diff != "" {
		t.Fatalf("RenameDirectory through the client vs core (-core +client):\n%s", diff)
	}
	vs, err := d.svc.ListVersions(d.local(), st.ID, trove.ListVersionsParams{Operation: trove.OpModified})
	if err != nil || len(vs.Data) != 2 || *vs.Data[0].CreatedBy != trove.NewActor(trove.ActorAPI, d.keyID) {
		t.Fatalf("versions after the rename: %+v, %v", vs, err)
	}

	del, err := c.DeleteDirectory(ctx, st.ID, trove.DeleteDirectoryParams{Path: "/n"})
	if err != nil || len(del.Memories) != 2 || del.Memories[0].Path != "/n/a/b/y.md" || del.Memories[1].Path != "/n/a/x.md" {
		t.Fatalf("DeleteDirectory = %+v, %v", del, err)
	}
	if diff := cmp.Diff([]string{"/ab/z.md", "/t"}, d.paths(t, st.ID)); diff != "" {
		t.Fatalf("after the delete (-want +got):\n%s", diff)
	}
}

// TestDirectoriesWire checks the endpoints' JSON: the answer's shape and the
// refusal of bad bodies with the envelope.
func TestDirectoriesWire(t *testing.T) {
	t.Parallel()
	d := newDirServer(t, nil)
	st, ms := d.fill(t, "/a/x.md", "/b")
	base := "/trove/v1/memory_stores/" + st.ID + "/directories/"
	bad := []struct{ path, body string }{
		{"rename", `{"to":"/c"}`},
		{"rename", `{"from":"/a"}`},
		{"rename", `{"from":"/a","to":"/c","extra":1}`},
		{"rename", `{"from":"/a","to":"/c","expect":[{"memory_id":"` + ms["/a/x.md"].ID + `"}]}`},
		{"rename", `{"from":"/a","to":"/c","expect":[{"content_sha256":"` + ms["/a/x.md"].SHA256 + `"}]}`},
		{"rename", `{"from":"/a","to":"/c","expect":{}}`},
		{"rename", `{"from":1,"to":"/c"}`},
		{"rename", ``},
		{"delete", `{}`},
		{"delete", `{"path":"/a","expect":[{"memory_id":"x","content_sha256":"ABC"}]}`},
		{"delete", `[]`},
	}
	for _, tc := range bad {
		status, marker, out := d.post(t, base+tc.path, tc.body)
		e, _ := out["error"].(map[string]any)
		if status != http.StatusBadRequest || out["type"] != "error" || e["type"] != "invalid_request_error" || marker != "1" {
			t.Fatalf("POST %s %s = %d %v (marker %q), want the 400 envelope", tc.path, tc.body, status, out, marker)
		}
	}
	if diff := cmp.Diff([]string{"/a/x.md", "/b"}, d.paths(t, st.ID)); diff != "" {
		t.Fatalf("bad bodies changed the store (-want +got):\n%s", diff)
	}
	status, marker, out := d.post(t, "/trove/v1/memory_stores/memstore_nope/directories/delete", `{"path":"/a"}`)
	if status != http.StatusNotFound || marker != "1" {
		t.Fatalf("unknown store: %d %v (marker %q)", status, out, marker)
	}

	// A null expect is no expectation.
	status, marker, out = d.post(t, base+"rename", `{"from":"/a","to":"/c","expect":null}`)
	if status != http.StatusOK || marker != "1" {
		t.Fatalf("rename: %d %v", status, out)
	}
	data, _ := out["data"].([]any)
	if len(data) != 1 || len(out) != 1 {
		t.Fatalf("rename answered %v, want {\"data\":[one memory]}", out)
	}
	m := data[0].(map[string]any)
	for _, k := range []string{"type", "id", "memory_store_id", "path", "content", "content_size_bytes", "content_sha256", "memory_version_id", "created_at", "updated_at"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("memory object %v lacks %q", m, k)
		}
	}
	if m["type"] != "memory" || m["id"] != ms["/a/x.md"].ID || m["path"] != "/c/x.md" || m["content"] != nil {
		t.Fatalf("memory object %v", m)
	}
}

// TestClientDirectoriesUnsupported runs the client against a real server
// made to lack the directory endpoints: a wrapper sends their paths to a
// path the server does not route, so the answer is the server's own "no
// route" 404 (or a 405). The client then reports errors.ErrUnsupported
// when the store exists, and the store's own 404 when it does not.
func TestClientDirectoriesUnsupported(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			d := newDirServer(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if strings.Contains(r.URL.Path, "/directories/") {
						if status == http.StatusNotFound {
							r.URL.Path = "/trove/v1/no-such-route"
						} else {
							r.URL.Path = "/healthz" // routed, but for GET only
						}
					}
					h.ServeHTTP(w, r)
				})
			})
			st, _ := d.fill(t, "/a/x.md", "/a/y.md")
			c := httpapi.NewClient(d.url, d.key)
			ctx := context.Background()
			_, err := c.RenameDirectory(ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/b"})
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("RenameDirectory against a server without the endpoint: %v, want errors.ErrUnsupported", err)
			}
			_, err = c.DeleteDirectory(ctx, st.ID, trove.DeleteDirectoryParams{Path: "/a"})
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("DeleteDirectory against a server without the endpoint: %v, want errors.ErrUnsupported", err)
			}
			if msg := trove.ErrorMessage(err); !strings.Contains(msg, "one memory at a time") {
				t.Fatalf("unsupported message %q", msg)
			}
			_, err = c.RenameDirectory(ctx, "memstore_nope", trove.RenameDirectoryParams{From: "/a", To: "/b"})
			wantCode(t, "unknown store on a server without the endpoint", err, trove.ENOTFOUND)
			if errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("an unknown store is reported as an unsupported operation: %v", err)
			}
			if diff := cmp.Diff([]string{"/a/x.md", "/a/y.md"}, d.paths(t, st.ID)); diff != "" {
				t.Fatalf("the store changed (-want +got):\n%s", diff)
			}
		})
	}
}
