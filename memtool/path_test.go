package memtool_test

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/internal/pathrune"
	"github.com/trovehq/trove/memtool"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		raw     string
		rel     string
		slash   bool
		wantErr string // substring of the error; "" for success
	}{
		{"/memories", "", false, ""},
		{"/memories/", "", false, ""},
		{"/memories/a", "a", false, ""},
		{"/memories/a/b.md", "a/b.md", false, ""},
		{"/memories/a/", "a", true, ""},
		{"/memories/.hidden", ".hidden", false, ""},
		{"/memories/...", "...", false, ""},
		{"/memories/café", "café", false, ""},
		{"/memories/100%", "100%", false, ""},
		{"/memories/50%25off", "", false, "percent-encoded"},
		{"/memories/%41", "%41", false, ""},
		{"/memoriesX", "", false, "must be /memories"},
		{"/memories_backup/x", "", false, "must be /memories"},
		{"memories/a", "", false, "must be /memories"},
		{"", "", false, "must be /memories"},
		{"/Memories/a", "", false, "must be /memories"},
		{"/memories/..", "", false, `"." and ".."`},
		{"/memories/a/../b", "", false, `"." and ".."`},
		{"/memories/./a", "", false, `"." and ".."`},
		{"/memories/a/.", "", false, `"." and ".."`},
		{"/memories//a", "", false, "empty path segments"},
		{"/memories/a//", "", false, "empty path segments"},
		{"/memories/a\\..\\b", "", false, "backslashes"},
		{"/memories/%2e%2e/x", "", false, "percent-encoded"},
		{"/memories/%2E%2E%2F", "", false, "percent-encoded"},
		{"/memories/a%2fb", "", false, "percent-encoded"},
		{"/memories/a%5Cb", "", false, "percent-encoded"},
		{"/memories/a%00b", "", false, "percent-encoded"},
		{"/memories/a\x00", "", false, "control characters"},
		{"/memories/a\tb", "", false, "control characters"},
		{"/memories/a\x7f", "", false, "control characters"},
		{"/memories/a\u0085", "", false, "control characters"},
		{"/memories/a\u2028", "", false, "control characters"},
		{"/memories/a\u2029", "", false, "control characters"},
		{"/memories/\xff", "", false, "not valid UTF-8"},
		{"/memories/my notes.md", "my notes.md", false, ""},
		{"/memories/my\u00a0notes.md", "", false, "invisible or look like a space (here U+00A0)"},
		{"/memories/notes.md\u034f", "", false, "invisible or look like a space (here U+034F)"},
		{"/memories/notes.md\ufe0f", "", false, "invisible or look like a space (here U+FE0F)"},
		{"/memories/a\u200bb", "", false, "invisible or look like a space (here U+200B)"},
		{"/memories/\u202etxt.md", "", false, "invisible or look like a space (here U+202E)"},
		{"/memories/" + strings.Repeat("n", 255), strings.Repeat("n", 255), false, ""},
		{"/memories/" + strings.Repeat("n", 256), "", false, "is 256 bytes long; the maximum is 255"},
		{"/memories/" + strings.Repeat("a/", 507), "", false, ""},
		{"/memories/" + strings.Repeat("a/", 508), "", false, "is 1026 bytes long; the maximum is 1024"},
	}
	for _, tc := range tests {
		p, err := memtool.ParsePath(tc.raw)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePath(%q) = %+v, %v; want error containing %q", tc.raw, p, err, tc.wantErr)
			}
			continue
		}
		if tc.raw == "/memories/"+strings.Repeat("a/", 507) {
			tc.rel, tc.slash = strings.TrimSuffix(strings.Repeat("a/", 507), "/"), true
		}
		if err != nil {
			t.Errorf("ParsePath(%q): %v", tc.raw, err)
			continue
		}
		if diff := cmp.Diff(memtool.Path{Raw: tc.raw, Rel: tc.rel, TrailingSlash: tc.slash}, p); diff != "" {
			t.Errorf("ParsePath(%q) (-want +got):\n%s", tc.raw, diff)
		}
	}
}

// FuzzParsePath: never panics; an accepted path is canonical, stays under
// the root whatever lexical resolution is applied, and round-trips.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/memories", "/memories/", "/memories/a/b", "/memories/../x", "/memories/%2e%2E", "/memoriesx", "/memories/a\\b", "/memories/a/", "/memories/\u2028", "/memories/notes.md\u034f", "/memories/my\u00a0notes.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := memtool.ParsePath(raw)
		if err != nil {
			if p != (memtool.Path{}) {
				t.Fatalf("error with non-zero Path %+v", p)
			}
			if len(raw) <= 200 && !strings.Contains(err.Error(), "Invalid path") {
				t.Fatalf("error %q does not say the path is invalid", err)
			}
			return
		}
		if len(raw) > memtool.MaxPathBytes || !utf8.ValidString(raw) {
			t.Fatalf("accepted %q", raw)
		}
		if !strings.HasPrefix(raw+"/", "/memories/") {
			t.Fatalf("accepted %q outside /memories", raw)
		}
		if clean := path.Clean(p.Display()); clean != p.Display() {
			t.Fatalf("%q: Display %q is not canonical (%q)", raw, p.Display(), clean)
		}
		for _, seg := range strings.Split(p.Rel, "/") {
			if p.Rel == "" {
				break
			}
			if seg == "" || seg == "." || seg == ".." || len(seg) > memtool.MaxNameBytes || strings.ContainsAny(seg, "\\\x00\n\r\t") || strings.IndexFunc(seg, pathrune.Hidden) >= 0 {
				t.Fatalf("%q: bad segment %q", raw, seg)
			}
			if strings.Contains(strings.ToLower(seg), "%2e") || strings.Contains(strings.ToLower(seg), "%2f") || strings.Contains(strings.ToLower(seg), "%5c") {
				t.Fatalf("%q: encoded traversal in %q", raw, seg)
			}
		}
		again, err := memtool.ParsePath(p.Display())
		if err != nil || again.Rel != p.Rel {
			t.Fatalf("round trip of %q: %+v, %v", p.Display(), again, err)
		}
	})
}

// FuzzInsertText checks insert's arithmetic: the text lands as line k, one
// trailing newline is dropped, every other byte is unchanged.
func FuzzInsertText(f *testing.F) {
	f.Add("a\nb\n", 1, "x\n")
	f.Add("", 0, "E")
	f.Add("a\r\nb", 2, "\r\n")
	f.Add("a", 5, "x")
	f.Fuzz(func(t *testing.T, content string, line int, text string) {
		got, n, ok := memtool.InsertText(content, line, text)
		if n != strings.Count(content, "\n")+1 {
			t.Fatalf("n = %d", n)
		}
		if !ok {
			if line >= 0 && line <= n {
				t.Fatalf("line %d refused within [0, %d]", line, n)
			}
			if got != content {
				t.Fatalf("content changed on refusal")
			}
			return
		}
		ins := strings.TrimSuffix(text, "\n")
		if len(got) != len(content)+len(ins)+1 {
			t.Fatalf("len = %d, want %d", len(got), len(content)+len(ins)+1)
		}
		lines := strings.Split(content, "\n")
		want := strings.Join(append(append(append([]string{}, lines[:line]...), ins), lines[line:]...), "\n")
		if got != want {
			t.Fatalf("InsertText(%q, %d, %q) = %q, want %q", content, line, text, got, want)
		}
	})
}

// FuzzStrReplace runs str_replace through the engine and checks that a
// success changed exactly the unique occurrence, and a refusal changed
// nothing.
func FuzzStrReplace(f *testing.F) {
	f.Add("alpha\nbeta\ngamma\n", "beta", "BETA")
	f.Add("aaa", "aa", "b")
	f.Add("a\r\nb\r\n", "\r\nb", "")
	f.Add("x", "x", "y\nz\n")
	f.Add("héllo wörld", "ö", "o")
	f.Fuzz(func(t *testing.T, content, old, new string) {
		if !utf8.ValidString(content) || !utf8.ValidString(old) || !utf8.ValidString(new) || strings.ContainsRune(content, 0) {
			t.Skip() // JSON cannot carry these bytes; view refuses NUL
		}
		ctx := context.Background()
		fsys := memtool.NewMemFS(nil)
		if _, err := fsys.WriteFile(ctx, "f", []byte(content), ""); err != nil {
			t.Fatal(err)
		}
		tool := memtool.New(fsys, memtool.Options{SecretFilter: memtool.AllowSecrets, MaxFileSize: -1, MaxViewChars: -1})
		in, _ := json.Marshal(map[string]string{"command": "str_replace", "path": "/memories/f", "old_str": old, "new_str": new})
		r := tool.Execute(ctx, in)
		data, _, err := fsys.ReadFile(ctx, "f", -1)
		if err != nil {
			t.Fatal(err)
		}
		got := string(data)
		occurrences := 0
		for i := 0; old != "" && i+len(old) <= len(content); i++ {
			if strings.HasPrefix(content[i:], old) {
				occurrences++
			}
		}
		if r.IsError {
			if got != content {
				t.Fatalf("refused (%s) but content changed", r.String())
			}
			if occurrences == 1 {
				t.Fatalf("unique old_str refused: %s", r.String())
			}
			return
		}
		if occurrences != 1 {
			t.Fatalf("replaced although old_str occurs %d times", occurrences)
		}
		i := strings.Index(content, old)
		if got != content[:i]+new+content[i+len(old):] || len(got) != len(content)-len(old)+len(new) {
			t.Fatalf("got %q", got)
		}
		if !strings.HasPrefix(r.String(), "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n") {
			t.Fatalf("success text %q", r.String())
		}
	})
}
