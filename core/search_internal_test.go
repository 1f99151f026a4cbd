package core

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trovehq/trove"
)

func TestSnippet(t *testing.T) {
	mark := func(text string, rs []trove.TextRange) string {
		var b strings.Builder
		at := 0
		for _, r := range rs {
			b.WriteString(text[at:r.Start] + "[" + text[r.Start:r.End] + "]")
			at = r.End
		}
		return b.String() + text[at:]
	}
	long := strings.Repeat("lorem ipsum ", 30)
	cases := []struct {
		name, query, content string
		size                 int
		wantOffset           int
		want                 string
	}{
		{"short, whole", "b", "a b c", 240, 0, "a [b] c"},
		{"no match: the start", "zzz", "abc def ghi", 5, 0, "abc d"},
		{"cut before: at a word", "needle", long + "the needle here", 40, 360, "the [needle] here"},
		{"densest run wins", "x", "x " + strings.Repeat("- ", 50) + "x x x", 20, 98, "- - [x] [x] [x]"},
		{"multibyte: whole characters", "é", strings.Repeat("é", 10) + " é " + strings.Repeat("ü", 10), 9, 21, "[é] üüü"},
		{"lead: a quarter of the size at most", "needle", "the needle", 6, 4, "[needle]"},
		{"match cut by the end", "needle", "needle", 3, 0, "[nee]"},
	}
	for _, c := range cases {
		q, err := trove.ParseSearchQuery(`"` + c.query + `"`)
		if err != nil {
			t.Fatal(err)
		}
		off, text, hl := snippet(c.content, q.Matches(c.content), c.size)
		if got := mark(text, hl); off != c.wantOffset || got != c.want {
			t.Errorf("%s: offset %d %q, want %d %q", c.name, off, got, c.wantOffset, c.want)
		}
	}
}

// FuzzSnippet: a snippet is the content's bytes at its offset, at most size
// bytes, whole characters of valid content, with ascending highlights
// inside it that hold a match.
func FuzzSnippet(f *testing.F) {
	f.Add("needle", "the needle and another needle", 12)
	f.Add("é", "ééé é üüü", 3)
	f.Add("a", "", 1)
	f.Fuzz(func(t *testing.T, query, content string, size int) {
		q, err := trove.ParseSearchQuery(query)
		if err != nil || size < 1 || size > 1<<16 {
			return
		}
		off, text, hl := snippet(content, q.Matches(content), size)
		if off < 0 || off+len(text) > len(content) || content[off:off+len(text)] != text || len(text) > size {
			t.Fatalf("snippet %d %q of %q (size %d)", off, text, content, size)
		}
		if utf8.ValidString(content) && !utf8.ValidString(text) {
			t.Fatalf("snippet %q cuts a character of %q", text, content)
		}
		at := 0
		for _, r := range hl {
			if r.Start < at || r.End <= r.Start || r.End > len(text) {
				t.Fatalf("highlight %v of %q (after %d)", r, text, at)
			}
			at = r.End
		}
	})
}
