package console_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
)

// TestCreateStoreNames: the console's create and fork forms refuse a name
// that a live store already has, say so, and offer to allow it; allowed,
// the store is created; an archived store's name is free.
func TestCreateStoreNames(t *testing.T) {
	t.Parallel()
	e := newBenchEnv(t)
	serve := func(method, path string, form url.Values) *httptest.ResponseRecorder {
		t.Helper()
		var req *http.Request
		if form != nil {
			req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req = httptest.NewRequest(method, path, nil)
		}
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: e.token})
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		return w
	}
	csrf := csrfOf(t, serve("GET", "/console/stores", nil).Body.String())
	count := func(name string) int {
		t.Helper()
		page, err := e.svc.ListStores(e.ctx, trove.ListStoresParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, st := range page.Data {
			if st.Name == name {
				n++
			}
		}
		return n
	}
	create := func(form url.Values) *httptest.ResponseRecorder {
		form.Set("csrf", csrf)
		return serve("POST", "/console/stores", form)
	}

	if w := create(url.Values{"name": {"notes"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("first create: %d %.500s", w.Code, w.Body.String())
	}
	w := create(url.Values{"name": {"notes"}, "description": {"second"}})
	body := html.UnescapeString(w.Body.String())
	if w.Code != http.StatusConflict || !strings.Contains(body, `a store named "notes" already exists`) ||
		!strings.Contains(body, `id="allow-duplicate"`) || !strings.Contains(body, `value="notes"`) || !strings.Contains(body, ">second</textarea>") {
		t.Errorf("second create: %d, want 409 saying the name is taken, the form refilled and the box to allow it:\n%.3000s", w.Code, body)
	}
	if n := count("notes"); n != 1 {
		t.Fatalf("%d stores named notes after the refusal, want 1", n)
	}
	if w := create(url.Values{"name": {"notes"}, "allow_duplicate": {"yes"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("create allowed: %d %.500s", w.Code, w.Body.String())
	}
	if n := count("notes"); n != 2 {
		t.Fatalf("%d stores named notes after the allowed create, want 2", n)
	}

	// Fork: refused into a taken name, then allowed.
	src, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "source"})
	if err != nil {
		t.Fatal(err)
	}
	fork := func(form url.Values) *httptest.ResponseRecorder {
		form.Set("csrf", csrf)
		return serve("POST", "/console/stores/"+src.ID+"/fork", form)
	}
	if w := fork(url.Values{"name": {"notes"}}); w.Code != http.StatusConflict || !strings.Contains(html.UnescapeString(w.Body.String()), "allow a duplicate name") {
		t.Errorf("fork into a taken name: %d %.2000s", w.Code, w.Body.String())
	}
	if n := count("notes"); n != 2 {
		t.Fatalf("%d stores named notes after the refused fork, want 2", n)
	}
	if w := fork(url.Values{"name": {"notes"}, "allow_duplicate": {"yes"}}); w.Code != http.StatusSeeOther {
		t.Errorf("fork allowed: %d %.500s", w.Code, w.Body.String())
	}

	// An archived store's name is free again.
	if _, err := e.svc.ArchiveStore(e.ctx, src.ID); err != nil {
		t.Fatal(err)
	}
	if w := create(url.Values{"name": {"source"}}); w.Code != http.StatusSeeOther {
		t.Errorf("create under an archived store's name: %d %.500s", w.Code, w.Body.String())
	}
}
