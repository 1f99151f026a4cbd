package trove

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SearchService is a Trove extension (not part of the hosted API): ranked
// full-text search of the live memories' paths and content, across every
// store the caller can read. Served at GET /trove/v1/search (docs/API.md).
//
// A client of a server that lacks the endpoint gets an error for which
// errors.Is(err, errors.ErrUnsupported) holds.
type SearchService interface {
	// Search returns the live memories that match p.Query, most relevant
	// first. Only the current content of live memories is searched: older
	// versions (redacted or not) and deleted memories are never found.
	//
	// Without StoreIDs it searches every non-archived store of the caller's
	// workspace, or, for a session credential, every store attached to the
	// session. EINVALID for an empty or over-long query (no word in it, more
	// than MaxSearchQueryChars characters or MaxSearchTerms words), a bad
	// path prefix, limit or cursor, or more than MaxSearchStores store IDs;
	// ENOTFOUND for a named store that does not exist or that a session
	// credential is not attached to.
	Search(ctx context.Context, p SearchParams) (*Page[SearchResult], error)
}

// Search limits.
const (
	MaxSearchQueryChars = 500 // characters of SearchParams.Query
	MaxSearchTerms      = 32  // words in a query, phrases' words included
	MaxSearchStores     = 100 // entries of SearchParams.StoreIDs
	// SearchSnippetBytes is the most bytes a SearchResult.Snippet holds.
	SearchSnippetBytes = 240
)

// SearchParams is one search request.
//
// Query syntax: words separated by spaces, each of which must occur; text in
// double quotes is a phrase whose words must occur next to each other in
// that order; a bare word that holds punctuation ("long-term", "v1.2") is a
// phrase of its parts. The last bare word also matches as a prefix
// ("kube" finds "kubernetes") when it has at least two characters. Matching
// is by whole words (see SearchWords), case-insensitive, without stemming;
// no character of the query has any other meaning (there are no operators).
type SearchParams struct {
	Query string
	// StoreIDs limits the search to these stores; empty means every store
	// the caller can read (see SearchService).
	StoreIDs []string
	// PathPrefix limits the search to memories below a directory: "" or "/"
	// for all, else a directory path; a missing trailing "/" is added
	// ("/notes" means "/notes/").
	PathPrefix string
	Limit      int // 0 means the default (20); at most 100; a page also ends at MaxSearchPageBytes
	Cursor     string
}

// MaxSearchPageBytes bounds the contents a page of search results is cut
// from (the server reads each hit's content to cut its snippet): a page
// ends before the hit whose content would take them past it, with a next
// page (a page holds at least one hit).
const MaxSearchPageBytes = 1 << 20

// SearchResult is one memory that matches a search.
type SearchResult struct {
	// Memory is the memory as a basic view returns it (Content nil).
	Memory Memory
	// Score is the relevance, higher is better. Scores compare within one
	// search only; their scale depends on the driver.
	Score float64
	// Snippet is a piece of the memory's content around the best match:
	// the bytes [SnippetOffset, SnippetOffset+len(Snippet)) of the content,
	// whole UTF-8 characters, at most SearchSnippetBytes bytes. It is the
	// start of the content when only the path matches.
	Snippet       string
	SnippetOffset int
	// Highlights are the matched words of Snippet and PathHighlights those
	// of Memory.Path, as ascending, non-overlapping byte ranges. They are
	// offsets, not markup, so every edge can escape the text as its format
	// needs and mark the ranges its own way.
	Highlights     []TextRange
	PathHighlights []TextRange
}

// TextRange is the byte range [Start, End) of a string.
type TextRange struct {
	Start int
	End   int
}

// SearchQuery is a parsed search query: every term must match.
type SearchQuery struct {
	Terms []SearchTerm
}

// SearchTerm is one word (len(Words) == 1) or a phrase of adjacent words.
// Words are as SearchWords returns them: lower case, letters and digits
// only, so they hold no character any query language gives a meaning to.
// When Prefix is set, the last word also matches as a prefix.
type SearchTerm struct {
	Words  []string
	Prefix bool
}

// ParseSearchQuery parses q (see SearchParams for the syntax). EINVALID
// when q is longer than MaxSearchQueryChars characters, is not valid UTF-8,
// holds no word or more than MaxSearchTerms words.
func ParseSearchQuery(q string) (SearchQuery, error) {
	var out SearchQuery
	if !utf8.ValidString(q) {
		return out, Errorf(EINVALID, "query must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(q); n > MaxSearchQueryChars {
		return out, Errorf(EINVALID, "query is %d characters; the maximum is %d", n, MaxSearchQueryChars)
	}
	words := 0
	lastBare := false
	add := func(text string, quoted bool) {
		ws := SearchWords(text)
		if len(ws) == 0 {
			return
		}
		words += len(ws)
		out.Terms = append(out.Terms, SearchTerm{Words: ws})
		lastBare = !quoted
	}
	rest := q
	for rest != "" {
		i := strings.IndexAny(rest, "\"“”")
		bare := rest
		if i >= 0 {
			bare = rest[:i]
		}
		for _, w := range strings.Fields(bare) {
			add(w, false)
		}
		if i < 0 {
			break
		}
		_, n := utf8.DecodeRuneInString(rest[i:])
		rest = rest[i+n:]
		// A phrase runs to the next quote, or to the end when unclosed.
		j := strings.IndexAny(rest, "\"“”")
		if j < 0 {
			add(rest, true)
			break
		}
		add(rest[:j], true)
		_, n = utf8.DecodeRuneInString(rest[j:])
		rest = rest[j+n:]
	}
	if words == 0 {
		return out, Errorf(EINVALID, "query must contain at least one word (letters or digits)")
	}
	if words > MaxSearchTerms {
		return out, Errorf(EINVALID, "query has %d words; the maximum is %d", words, MaxSearchTerms)
	}
	if last := &out.Terms[len(out.Terms)-1]; lastBare && utf8.RuneCountInString(last.Words[len(last.Words)-1]) >= 2 {
		last.Prefix = true
	}
	return out, nil
}

// IsSearchWordRune reports whether r belongs to a word: an ASCII letter or
// digit, or a non-ASCII letter, number, mark or private-use character
// (Unicode categories L, N, M, Co). Everything else (spaces, punctuation,
// symbols) separates words.
func IsSearchWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) || unicode.Is(unicode.Co, r)
}

// SearchWords returns the words of text in lower case: the maximal runs of
// IsSearchWordRune characters. This is the word rule of the search index of
// every driver (see storage/sqlite and storage/postgres migration 0007).
func SearchWords(text string) []string {
	var out []string
	for _, sp := range SearchWordSpans(text) {
		out = append(out, strings.ToLower(text[sp.Start:sp.End]))
	}
	return out
}

// SearchWordSpans returns the byte ranges of the words of text, in order.
func SearchWordSpans(text string) []TextRange {
	var out []TextRange
	start := -1
	for i, r := range text {
		if IsSearchWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, TextRange{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, TextRange{start, len(text)})
	}
	return out
}

// Matches returns the byte ranges of text that match a term of q: every
// occurrence of a word term, and of a phrase term from its first word's
// start to its last word's end; the last word matches as a prefix when the
// term says so. The ranges are ascending; overlapping ones are merged.
func (q SearchQuery) Matches(text string) []TextRange {
	spans := SearchWordSpans(text)
	if len(spans) == 0 {
		return nil
	}
	words := make([]string, len(spans))
	for i, sp := range spans {
		words[i] = strings.ToLower(text[sp.Start:sp.End])
	}
	var found []TextRange
	for _, t := range q.Terms {
		n := len(t.Words)
	next:
		for i := 0; i+n <= len(words); i++ {
			for k, w := range t.Words {
				got := words[i+k]
				if got != w && !(t.Prefix && k == n-1 && strings.HasPrefix(got, w)) {
					continue next
				}
			}
			found = append(found, TextRange{spans[i].Start, spans[i+n-1].End})
		}
	}
	slices.SortFunc(found, func(a, b TextRange) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
	var out []TextRange
	for _, r := range found {
		if len(out) > 0 && r.Start < out[len(out)-1].End {
			out[len(out)-1].End = max(out[len(out)-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
