package trove

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestParseSearchQuery(t *testing.T) {
	w := func(words ...string) SearchTerm { return SearchTerm{Words: words} }
	p := func(words ...string) SearchTerm { return SearchTerm{Words: words, Prefix: true} }
	cases := []struct {
		in   string
		want []SearchTerm
		err  bool
	}{
		{"kubernetes", []SearchTerm{p("kubernetes")}, false},
		{"Drain  the NODE", []SearchTerm{w("drain"), w("the"), p("node")}, false},
		{"a", []SearchTerm{w("a")}, false}, // one character: no prefix
		{`"upgrade plan" now`, []SearchTerm{w("upgrade", "plan"), p("now")}, false},
		{`now "upgrade plan"`, []SearchTerm{w("now"), w("upgrade", "plan")}, false}, // a phrase last: no prefix
		{`“curly quotes” too`, []SearchTerm{w("curly", "quotes"), p("too")}, false},
		{`unclosed "phrase here`, []SearchTerm{w("unclosed"), w("phrase", "here")}, false},
		{"long-term v1.23", []SearchTerm{w("long", "term"), p("v1", "23")}, false},
		{`a OR b* NEAR(c d) -e col:f`, []SearchTerm{w("a"), w("or"), w("b"), w("near", "c"), w("d"), w("e"), w("col", "f")}, false},
		{"Crème BRÛLÉE", []SearchTerm{w("crème"), p("brûlée")}, false},
		{"日本語 テキスト", []SearchTerm{w("日本語"), p("テキスト")}, false},
		{`"" xy ""`, []SearchTerm{p("xy")}, false},
		{"", nil, true},
		{"  \t ", nil, true},
		{`!!! "" -- *`, nil, true},
		{"a\xffb", nil, true},
		{strings.Repeat("é", MaxSearchQueryChars+1), nil, true},
		{strings.Repeat("w ", MaxSearchTerms+1), nil, true},
		{strings.Repeat("a-", MaxSearchTerms) + "b", nil, true}, // a phrase's words count
	}
	for _, c := range cases {
		got, err := ParseSearchQuery(c.in)
		if c.err {
			if ErrorCode(err) != EINVALID {
				t.Errorf("ParseSearchQuery(%q) = %v, %v; want EINVALID", c.in, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSearchQuery(%q): %v", c.in, err)
			continue
		}
		if diff := cmp.Diff(c.want, got.Terms); diff != "" {
			t.Errorf("ParseSearchQuery(%q) (-want +got):\n%s", c.in, diff)
		}
	}
}

func TestSearchQueryMatches(t *testing.T) {
	mark := func(text string, rs []TextRange) string {
		var b strings.Builder
		at := 0
		for _, r := range rs {
			b.WriteString(text[at:r.Start] + "[" + text[r.Start:r.End] + "]")
			at = r.End
		}
		return b.String() + text[at:]
	}
	cases := []struct{ query, text, want string }{
		{"node", "Drain each node; NODE count, nodes.", "Drain each [node]; [NODE] count, [nodes]."},
		{`"node"`, "Drain each node; NODE count, nodes.", "Drain each [node]; [NODE] count, nodes."},
		{`"upgrade plan" x`, "The upgrade plan: upgrade  plan, plan upgrade.", "The [upgrade plan]: [upgrade  plan], plan upgrade."},
		{"café", "Un CAFÉ, un café-crème.", "Un [CAFÉ], un [café]-crème."},
		{"v1.2", "ship v1.2 and v1.3", "ship [v1.2] and v1.3"},
		{"zzz", "nothing here", "nothing here"},
	}
	for _, c := range cases {
		q, err := ParseSearchQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := mark(c.text, q.Matches(c.text)); got != c.want {
			t.Errorf("%q in %q:\n got %s\nwant %s", c.query, c.text, got, c.want)
		}
	}
}

// FuzzParseSearchQuery: any input either is refused with EINVALID or
// parses into 1..MaxSearchTerms words that hold only word characters in
// lower case (so nothing of the input can reach an index's query syntax),
// with Prefix on the last term at most; Matches of any text returns
// ascending, non-overlapping ranges on word boundaries.
func FuzzParseSearchQuery(f *testing.F) {
	for _, s := range []string{
		"kubernetes", `"upgrade plan" now`, `a OR b* NEAR(c d) -e col:f`, `"`, `""`, `a"b`, `*`, `'it''s'`, `\`, `:*`,
		`a:*`, `^a`, `(a`, `a)`, `&|!`, `<->`, "ÉCOLE", "日本語", "e\u0301", "İstanbul", "ß", "\x00", "\u200b", "“a”b\"c",
	} {
		f.Add(s, "the text: a b c, ÉCOLE école e\u0301 İstanbul straße")
	}
	f.Fuzz(func(t *testing.T, in, text string) {
		q, err := ParseSearchQuery(in)
		if err != nil {
			if ErrorCode(err) != EINVALID {
				t.Fatalf("ParseSearchQuery(%q): %v, want EINVALID", in, err)
			}
			return
		}
		n := 0
		for i, term := range q.Terms {
			if len(term.Words) == 0 {
				t.Fatalf("%q: empty term %d", in, i)
			}
			if term.Prefix && i != len(q.Terms)-1 {
				t.Fatalf("%q: prefix on term %d of %d", in, i, len(q.Terms))
			}
			for _, w := range term.Words {
				n++
				if w == "" || w != strings.ToLower(w) {
					t.Fatalf("%q: word %q", in, w)
				}
				for _, r := range w {
					if !IsSearchWordRune(r) {
						t.Fatalf("%q: word %q holds %q", in, w, r)
					}
				}
			}
		}
		if n < 1 || n > MaxSearchTerms {
			t.Fatalf("%q: %d words", in, n)
		}
		at := 0
		for _, r := range q.Matches(text) {
			if r.Start < at || r.End <= r.Start || r.End > len(text) || !utf8.ValidString(text[r.Start:r.End]) && utf8.ValidString(text) {
				t.Fatalf("%q in %q: bad range %v (after %d)", in, text, r, at)
			}
			at = r.End
		}
	})
}
