package console

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

func TestSafeNext(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/console/stores/memstore_1?dir=%2Fa%2F", "/console/stores/memstore_1?dir=%2Fa%2F"},
		{"", "/console/stores"},
		{"https://evil.example/console/", "/console/stores"},
		{"//evil.example/console/", "/console/stores"},
		{"/console/\\evil", "/console/stores"},
		{"/v1/memory_stores", "/console/stores"},
		{"/console/x\r\nSet-Cookie: a=b", "/console/stores"},
		{"javascript:alert(1)", "/console/stores"},
	} {
		if got := safeNext(c.in); got != c.want {
			t.Errorf("safeNext(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseMetadata(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
		code string
	}{
		{"", map[string]string{}, ""},
		{"a=1\r\nb=x=y\n\n", map[string]string{"a": "1", "b": "x=y"}, ""},
		{"k=", map[string]string{"k": ""}, ""},
		{"novalue", nil, trove.EINVALID},
		{"=v", nil, trove.EINVALID},
		{"a=1\na=2", nil, trove.EINVALID},
	} {
		got, err := parseMetadata(c.in)
		if trove.ErrorCode(err) != c.code {
			t.Errorf("parseMetadata(%q) error %v, want code %q", c.in, err, c.code)
			continue
		}
		if diff := cmp.Diff(c.want, got); c.code == "" && diff != "" {
			t.Errorf("parseMetadata(%q) (-want +got):\n%s", c.in, diff)
		}
	}
}

// FuzzParseMetadata: whatever is typed, parseMetadata either refuses it
// or returns pairs that formatMetadata writes back to an equal map.
func FuzzParseMetadata(f *testing.F) {
	for _, s := range []string{"", "a=1\nb=2", "a=1\r\n", "=", "a==", "x\n=y", "é=ü\n", "0=\r", `"k=1"="v\nw"`, `a="`, "a=\"\\xff\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMetadata(s)
		if err != nil {
			if trove.ErrorCode(err) != trove.EINVALID {
				t.Fatalf("error %v is not EINVALID", err)
			}
			return
		}
		back, err := parseMetadata(formatMetadata(m))
		if err != nil {
			t.Fatalf("reparse of %q: %v", formatMetadata(m), err)
		}
		if diff := cmp.Diff(m, back); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

func TestFormContentLineEnds(t *testing.T) {
	for _, c := range []struct {
		content, crlf, want string
	}{
		{"a\r\nb\r\n", "", "a\nb\n"},      // a textarea's CRLF back to LF
		{"a\r\nb\r\n", "1", "a\r\nb\r\n"}, // the memory used CRLF: kept
		{"a\rb", "", "a\rb"},              // a lone CR is content
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(url.Values{"content": {c.content}, "crlf": {c.crlf}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if got := formContent(r); got != c.want {
			t.Errorf("formContent(%q, crlf=%q) = %q, want %q", c.content, c.crlf, got, c.want)
		}
	}
}

func TestCrossSite(t *testing.T) {
	for _, c := range []struct {
		hdr     map[string]string
		refused bool
	}{
		{nil, false}, // not a browser: the CSRF token decides
		{map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}, false},
		{map[string]string{"Sec-Fetch-Site": "none"}, false},
		{map[string]string{"Sec-Fetch-Site": "same-site"}, true},
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, true},
		{map[string]string{"Origin": "http://evil.example"}, true},
		{map[string]string{"Origin": "null"}, true},
		{map[string]string{"Origin": "https://example.com"}, false}, // same host: a scheme change is not cross-site
	} {
		r := httptest.NewRequest("POST", "http://example.com/console/stores", nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := crossSite(r) != ""; got != c.refused {
			t.Errorf("crossSite(%v) refused=%v, want %v", c.hdr, got, c.refused)
		}
	}
}

func TestCSRFTokenIsPerSession(t *testing.T) {
	a, b := csrfToken("trove_cs_a"), csrfToken("trove_cs_b")
	if a == b || len(a) != 32 || strings.Contains(a, "trove_cs") {
		t.Errorf("csrf tokens %q %q", a, b)
	}
}
