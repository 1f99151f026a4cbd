package console_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
)

// TestTimeMachineMoments: the time machine's forms take moments as people
// type them (a duration ago from the console's clock, a date, a date and
// time in UTC or with an offset), the store page says that zoneless times
// are UTC, a rollback preview pins its moment for the apply form, and the
// history page shows each version's number (seq) linked to the store as of
// it.
func TestTimeMachineMoments(t *testing.T) {
	t.Parallel()
	e := newBenchEnv(t)
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "moments"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "one"})
	if err != nil {
		t.Fatal(err)
	}
	// A session writes the second version (rollback undoes a session's
	// or a key's writes).
	se, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := e.svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateMemory(trove.WithPrincipal(context.Background(), sp), st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("two")}); err != nil {
		t.Fatal(err)
	}
	vs, err := e.svc.ListVersions(e.ctx, st.ID, trove.ListVersionsParams{MemoryID: m.ID})
	if err != nil || len(vs.Data) != 2 {
		t.Fatalf("versions: %v, %v", vs, err)
	}
	written := vs.Data[0].CreatedAt
	// The console's clock is three hours after the writes: "2h" is an
	// hour after them, "4h" an hour before.
	now := written.Add(3 * time.Hour)
	e.h = console.New(console.Config{Services: e.svc, Sessions: e.svc, Auth: e.svc, Now: func() time.Time { return now }})
	page := func(t *testing.T, path string) string {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: e.token})
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", path, w.Code, w.Body.String())
		}
		return html.UnescapeString(w.Body.String())
	}
	base := "/console/stores/" + st.ID
	for _, c := range []struct {
		name, at, want string
	}{
		{"two hours ago", "2h", "(version 2)"},
		{"two hours ago, said so", "2h ago", "(version 2)"},
		{"four hours ago", "4h", "(version 0)"},
		{"a day before", "1d", "(version 0)"},
		{"the next day", written.AddDate(0, 0, 1).UTC().Format("2006-01-02"), "(version 2)"},
		{"a UTC date and time after", written.Add(time.Minute).UTC().Format("2006-01-02 15:04"), "(version 2)"},
		{"a UTC date and time before", written.Add(-time.Minute).UTC().Format("2006-01-02T15:04"), "(version 0)"},
		// With an offset two hours ahead, the wall clock of the writes
		// is two hours later than in UTC.
		{"an offset", written.Add(-time.Minute).In(time.FixedZone("", 7200)).Format("2006-01-02T15:04-07:00"), "(version 0)"},
		{"a version number", "1", "version 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := page(t, base+"/asof?at="+url.QueryEscape(c.at))
			if !strings.Contains(body, c.want) {
				t.Errorf("as of %q: the page lacks %q:\n%.2000s", c.at, c.want, body)
			}
		})
	}

	if body := page(t, base); !strings.Contains(body, "Dates and times are in <strong>UTC</strong>") {
		t.Errorf("the store page does not say that moments without an offset are UTC")
	}

	// The rollback preview's apply form carries the resolved time, not
	// "2h", which would move before the click.
	body := page(t, base+"/rollback?actor="+se.ID+"&since=4h")
	pinned := now.Add(-4 * time.Hour).UTC().Format(time.RFC3339Nano)
	if !strings.Contains(body, `name="since" value="`+pinned+`"`) {
		t.Errorf("the rollback form does not pin since=%s:\n%.3000s", pinned, body)
	}

	// The history page numbers the versions.
	body = page(t, base+"/memories/"+m.ID+"/history")
	for _, v := range vs.Data {
		re := regexp.MustCompile(`<td class="num seq"><a href="/console/stores/` + st.ID + `/asof\?at=` + regexp.QuoteMeta(strconv.FormatInt(v.Seq, 10)) + `"[^>]*>` + strconv.FormatInt(v.Seq, 10) + `</a></td>`)
		if v.Seq == 0 || !re.MatchString(body) {
			t.Errorf("the history page does not show version %s as number %d:\n%.3000s", v.ID, v.Seq, body)
		}
	}
}
