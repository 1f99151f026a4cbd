package httpapi

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

// TestFastWriter: the FastHTTP response writer follows net/http's
// ResponseWriter rules for what handlers may do that the API's own never
// do (no write at all, no Content-Type, headers changed after the status).
func TestFastWriter(t *testing.T) {
	type result struct {
		Status int
		Header map[string]string
		Body   string
	}
	run := func(h func(w http.ResponseWriter)) result {
		var ctx fasthttp.RequestCtx
		ctx.Response.Header.SetNoDefaultContentType(true)
		w := &fastWriter{ctx: &ctx, hdr: http.Header{}}
		h(w)
		w.finish()
		r := result{Status: ctx.Response.StatusCode(), Header: map[string]string{}, Body: string(ctx.Response.Body())}
		for k, v := range ctx.Response.Header.All() {
			r.Header[string(k)] = string(v)
		}
		delete(r.Header, "Date")
		return r
	}
	for _, c := range []struct {
		name string
		h    func(w http.ResponseWriter)
		want result
	}{
		{"nothing written", func(w http.ResponseWriter) { w.Header().Set("X-A", "1") },
			result{200, map[string]string{"X-A": "1"}, ""}},
		{"sniffed Content-Type", func(w http.ResponseWriter) { w.Write([]byte("hello")) },
			result{200, map[string]string{"Content-Type": "text/plain; charset=utf-8"}, "hello"}},
		{"first status wins, later headers ignored", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			w.Header().Set("X-Late", "1")
			w.WriteHeader(500)
			w.Write([]byte("{}"))
		}, result{404, map[string]string{"Content-Type": "application/json"}, "{}"}},
		{"repeated values, framing headers left to fasthttp", func(w http.ResponseWriter) {
			w.Header().Add("Vary", "a")
			w.Header().Add("Vary", "b")
			w.Header().Set("Content-Length", "99")
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{}"))
		}, result{200, map[string]string{"Content-Type": "application/json", "Vary": "b"}, "{}"}},
	} {
		got := run(c.h)
		if c.name == "repeated values, framing headers left to fasthttp" {
			// All yields each value; the map keeps the last: check both.
			var ctx fasthttp.RequestCtx
			w := &fastWriter{ctx: &ctx, hdr: http.Header{}}
			c.h(w)
			w.finish()
			var vary []string
			for _, v := range ctx.Response.Header.PeekAll("Vary") {
				vary = append(vary, string(v))
			}
			if diff := cmp.Diff([]string{"a", "b"}, vary); diff != "" {
				t.Errorf("%s: Vary (-want +got):\n%s", c.name, diff)
			}
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}
