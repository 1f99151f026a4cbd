package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/trovehq/trove"
)

// TestPagesBounded (issue 22 item 6): the console's pages whose content
// grows with a store or a transcript show one bounded page and a link to
// the next: a rollback preview of 250 memories lists 100 with the whole
// totals and a "More" link whose pages hold the rest once; a transcript of
// 24 events of ~250 KiB shows about 1 MiB of them with "Older events".
func TestPagesBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := trove.WithPrincipal(context.Background(), mustPrincipal(t, e))
	token, _, err := e.svc.StartConsoleSession(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/0-first", Content: "before"}); err != nil {
		t.Fatal(err)
	}
	const n = 250
	for i := range n {
		if _, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%03d", i), Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	se, _, err := e.svc.CreateSession(ctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": strings.Repeat("0123456789abcdef", 250_000/16)}}})
	for range 24 {
		if _, err := e.svc.AppendEvents(ctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: string(body)}}); err != nil {
			t.Fatal(err)
		}
	}
	href := func(page, id string) string {
		m := regexp.MustCompile(`id="` + id + `"[^>]*href="([^"]+)"|href="([^"]+)"[^>]*id="` + id + `"`).FindStringSubmatch(page)
		if m == nil {
			return ""
		}
		return html.UnescapeString(m[1] + m[2])
	}
	rows := regexp.MustCompile(`<tr data-action="delete">`)
	for _, tc := range []struct {
		name, path string
		maxBytes   int
		check      func(t *testing.T, page string)
	}{
		{
			name: "rollback preview", path: "/console/stores/" + st.ID + "/rollback?actor=" + e.keyID + "&since=1", maxBytes: 256 << 10,
			check: func(t *testing.T, page string) {
				if !strings.Contains(page, fmt.Sprintf("<h2>Changes (%d)</h2>", n)) {
					t.Errorf("the preview does not show the whole total %d", n)
				}
				seen := len(rows.FindAllString(page, -1))
				if seen > trove.DefaultRollbackPageSize || href(page, "rb-next") == "" {
					t.Errorf("the first page lists %d changes (link to more: %q), want at most %d and a link", seen, href(page, "rb-next"), trove.DefaultRollbackPageSize)
				}
				for next := href(page, "rb-next"); next != ""; {
					code, p := consoleGet(t, e, token, next)
					if code != 200 {
						t.Fatalf("GET %s: %d\n%s", next, code, p)
					}
					seen += len(rows.FindAllString(p, -1))
					next = href(p, "rb-next")
				}
				if seen != n {
					t.Errorf("the preview's pages list %d changes, want %d", seen, n)
				}
			},
		},
		{
			name: "transcript", path: "/console/sessions/" + se.ID, maxBytes: trove.MaxEventPageBytes + 256<<10,
			check: func(t *testing.T, page string) {
				if href(page, "events-older") == "" {
					t.Error("no link to older events")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, page := consoleGet(t, e, token, tc.path)
			if code != 200 {
				t.Fatalf("GET %s: %d\n%.2000s", tc.path, code, page)
			}
			t.Logf("%d bytes", len(page))
			if len(page) > tc.maxBytes {
				t.Errorf("the page is %d bytes, want at most %d", len(page), tc.maxBytes)
			}
			tc.check(t, page)
		})
	}
}
