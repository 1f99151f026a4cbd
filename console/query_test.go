package console_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovehq/trove"
)

// TestStrictQuery (issue 22, "strict everywhere"): the console parses every
// query string by the API's one rule (trove.ParseQuery). A query that does
// not parse whole (a bad %-escape, a ";", a nameless pair) or names a
// parameter twice is a 400 page with a fixed message (no text from the
// URL), on every page, signed in or not; a parameter a page does not know
// is ignored, as the API ignores it.
func TestStrictQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := e.svc.StartConsoleSession(ctx, e.key)
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{
		"/console/signin",
		"/console/stores",
		"/console/stores/" + st.ID,
		"/console/stores/" + st.ID + "/memories/" + m.ID,
		"/console/stores/" + st.ID + "/memories/" + m.ID + "/history",
		"/console/stores/" + st.ID + "/asof",
		"/console/stores/" + st.ID + "/changes?from=1",
		"/console/search",
		"/console/sessions",
	}
	for _, tc := range []struct {
		name, query string
		want        int
	}{
		{"bad escape", "q=%zz", 400},
		{"bad escape in a name", "%zz=1", 400},
		{"semicolon", "q=a;b=1", 400},
		{"no name", "=1", 400},
		{"twice", "cursor=a&cursor=b", 400},
		{"unknown parameter", "utm_source=x&not_a_param=", 200},
		{"empty value", "q=", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range pages {
				sep := "?"
				if strings.Contains(p, "?") {
					sep = "&"
				}
				code, body := consoleGet(t, e, token, p+sep+tc.query)
				if code != tc.want {
					t.Errorf("GET %s?%s: %d, want %d\n%s", p, tc.query, code, tc.want, body)
					continue
				}
				if tc.want == 400 && (!strings.Contains(body, "query string could not be read") || strings.Contains(body, "zz") || strings.Contains(body, "cursor")) {
					t.Errorf("GET %s?%s: the 400 page is not the fixed message (or shows URL text):\n%s", p, tc.query, body)
				}
			}
		})
	}
}

// TestNoLenientQueryReads: no console handler reads its query with
// r.URL.Query (which drops pairs it cannot parse); they use query(r),
// which ServeHTTP filled by the strict rule.
func TestNoLenientQueryReads(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "URL.Query()") {
			t.Errorf("%s reads a query with URL.Query(); use query(r)", f)
		}
	}
}
