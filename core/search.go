package core

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Search implements trove.SearchService: it parses the query, resolves the
// stores the principal may search and runs one storage MemorySearch in a
// storage.ReadSearch, then cuts each hit's snippet and highlights (the same code for
// every driver).
//
// Scope: with StoreIDs, each must be a store of the caller's workspace that
// it can read (a session: an attached one), else ENOTFOUND; archived stores
// named there are searched. Without StoreIDs, an API key searches every
// non-archived store of its workspace and a session every store attached
// to it. EINVALID for a bad query (trove.ParseSearchQuery), path prefix,
// limit (1..MaxPageSize, 0 for the default) or cursor, or more than
// trove.MaxSearchStores store IDs.
func (s *Service) Search(ctx context.Context, p trove.SearchParams) (*trove.Page[trove.SearchResult], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q, err := trove.ParseSearchQuery(p.Query)
	if err != nil {
		return nil, err
	}
	prefix, err := s.searchPrefix(p.PathPrefix)
	if err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	after, err := decodeSearchPosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	if len(p.StoreIDs) > trove.MaxSearchStores {
		return nil, trove.Errorf(trove.EINVALID, "at most %d store IDs can be searched at once, got %d", trove.MaxSearchStores, len(p.StoreIDs))
	}
	ids := slices.Clone(p.StoreIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	named := len(ids) > 0
	if !named && pr.Session != nil {
		for id := range pr.Session.Stores {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if len(ids) == 0 { // nothing attached: nothing to search (never "every store")
			return &trove.Page[trove.SearchResult]{Data: []trove.SearchResult{}}, nil
		}
	}
	var hits []storage.MemorySearchHit
	// ReadSearch: the index reflects every write acknowledged before this
	// call (a driver may index outside the write transaction).
	err = s.mapErr(ctx, "Search", storage.ReadSearch(ctx, s.db, func(tx storage.Tx) error {
		if named {
			for _, id := range ids {
				if _, err := s.readableStore(ctx, tx, pr, id); err != nil {
					return err
				}
			}
		}
		h, err := tx.MemorySearch(ctx, storage.MemorySearchParams{
			WorkspaceID: pr.WorkspaceID, StoreIDs: ids, Query: q, Prefix: prefix, After: after, Limit: limit + 1, MaxBytes: trove.MaxSearchPageBytes,
		})
		hits = h
		return err
	}))
	if err != nil {
		return nil, err
	}
	// The page: at most limit hits and trove.MaxSearchPageBytes of their
	// contents (at least one); the driver read at most one more, which
	// tells that more follow.
	n, size := 0, 0
	for n < len(hits) && n < limit && (n == 0 || size+hits[n].Memory.SizeBytes <= trove.MaxSearchPageBytes) {
		size += hits[n].Memory.SizeBytes
		n++
	}
	page := &trove.Page[trove.SearchResult]{Data: make([]trove.SearchResult, 0, n)}
	for i := range n {
		page.Data = append(page.Data, searchResult(q, &hits[i]))
		hits[i] = storage.MemorySearchHit{} // its content is not kept past its snippet
	}
	if n < len(hits) {
		last := page.Data[n-1]
		page.NextPage = encodeSearchPosition(last.Score, last.Memory.ID)
	}
	return page, nil
}

// searchPrefix validates a search path prefix: "" and "/" mean the whole
// store; a directory path gets its trailing "/" when it lacks one.
func (s *Service) searchPrefix(prefix string) (string, error) {
	if prefix == "" || prefix == "/" {
		return "", nil
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if err := trove.ValidatePathPrefix(prefix, s.limits.MaxPathBytes, s.limits.MaxPathSegments); err != nil {
		return "", err
	}
	return prefix, nil
}

// searchResult turns a hit into a result: the memory without content, its
// snippet and the highlights of the snippet and the path.
func searchResult(q trove.SearchQuery, h *storage.MemorySearchHit) trove.SearchResult {
	m := h.Memory
	content := ""
	if m.Content != nil {
		content = *m.Content
	}
	m.Content = nil
	r := trove.SearchResult{Memory: m, Score: h.Score, PathHighlights: q.Matches(m.Path)}
	r.SnippetOffset, r.Snippet, r.Highlights = snippet(content, q.Matches(content), trove.SearchSnippetBytes)
	if r.PathHighlights == nil {
		r.PathHighlights = []trove.TextRange{}
	}
	return r
}

// snippetLead is how many bytes of context a snippet keeps, at most, before
// its first match (and at most a quarter of the snippet).
const snippetLead = 60

// snippet returns the piece of content, at most size bytes of whole UTF-8
// characters, that holds the most matches within size bytes of one another
// (the first such run when several tie), starting up to snippetLead bytes
// (a quarter of size at most) before its first match, at the start of a word, and the matches inside it
// as ranges of the piece (a match cut by the end is cut too). Without
// matches it is the start of the content.
func snippet(content string, matches []trove.TextRange, size int) (offset int, text string, hl []trove.TextRange) {
	hl = []trove.TextRange{}
	start := 0
	if len(matches) > 0 {
		best, bestN := 0, 0
		j := 0
		for i := range matches {
			for j < len(matches) && matches[j].End-matches[i].Start <= size {
				j++
			}
			if j-i > bestN {
				best, bestN = i, j-i
			}
		}
		anchor := matches[best].Start
		start = max(0, anchor-min(snippetLead, size/4))
		if start > 0 {
			// Begin at a word: after the first space at or past start, when
			// there is one before the anchor.
			if k := strings.IndexAny(content[start:anchor], " \t\n"); k >= 0 {
				start += k + 1
			}
			for start < anchor && !utf8.RuneStart(content[start]) {
				start++
			}
		}
	}
	end := min(len(content), start+size)
	for end < len(content) && end > start && !utf8.RuneStart(content[end]) {
		end--
	}
	for _, m := range matches {
		if m.End <= start || m.Start >= end {
			continue
		}
		hl = append(hl, trove.TextRange{Start: max(m.Start, start) - start, End: min(m.End, end) - start})
	}
	return start, content[start:end], hl
}

// Search cursors hold the last result's (score, memory ID):
// {"v":1,"k":"s","s":"<score, strconv 'g' -1>","i":"<id>"}.
const kindSearch = "s"

func encodeSearchPosition(score float64, id string) string {
	return encodeCursor(cursorJSON{K: kindSearch, S: strconv.FormatFloat(score, 'g', -1, 64), I: id})
}

func decodeSearchPosition(s string) (*storage.SearchPosition, error) {
	if s == "" {
		return nil, nil
	}
	c, err := decodeCursor(s, kindSearch)
	if err != nil {
		return nil, err
	}
	score, err := strconv.ParseFloat(c.S, 64)
	if err != nil || c.I == "" || math.IsNaN(score) || math.IsInf(score, 0) {
		return nil, errBadCursor()
	}
	return &storage.SearchPosition{Score: score, ID: c.I}, nil
}
