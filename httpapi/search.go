package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/trovehq/trove"
)

// Search (trove.SearchService), a Trove extension:
//
//	GET /trove/v1/search?q=…[&store_id=…]…[&path_prefix=…][&limit=…][&page=…]
//
// answers {"data": [search_result, …], "next_page": "page_…" | null}; see
// docs/API.md. store_id may repeat.

// searchHeader marks every answer of the search endpoint, errors included,
// so a client can tell "the server has no search" (a 404 or 405 without
// it) from "no such store" (a 404 with it).
const searchHeader = "Trove-Search"

type wireTextRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type wireSearchResult struct {
	Type           string          `json:"type"`
	Memory         wireMemory      `json:"memory"`
	Score          float64         `json:"score"`
	Snippet        string          `json:"snippet"`
	SnippetOffset  int             `json:"snippet_offset"`
	Highlights     []wireTextRange `json:"highlights"`
	PathHighlights []wireTextRange `json:"path_highlights"`
}

func rangesToWire(rs []trove.TextRange) []wireTextRange {
	out := make([]wireTextRange, len(rs))
	for i, r := range rs {
		out[i] = wireTextRange{Start: r.Start, End: r.End}
	}
	return out
}

func rangesFromWire(rs []wireTextRange) []trove.TextRange {
	out := make([]trove.TextRange, len(rs))
	for i, r := range rs {
		out[i] = trove.TextRange{Start: r.Start, End: r.End}
	}
	return out
}

// searchResultToWire is the wire form of one result (its memory in the
// basic view: content null).
func searchResultToWire(r *trove.SearchResult) wireSearchResult {
	m := r.Memory
	m.Content = nil
	return wireSearchResult{
		Type: "search_result", Memory: memoryToWire(&m), Score: r.Score,
		Snippet: r.Snippet, SnippetOffset: r.SnippetOffset,
		Highlights: rangesToWire(r.Highlights), PathHighlights: rangesToWire(r.PathHighlights),
	}
}

// searchQueryParams are the parameters the endpoint knows; any other is
// refused, so a misspelt filter is not silently ignored.
var searchQueryParams = map[string]bool{"q": true, "store_id": true, "path_prefix": true, "limit": true, "page": true}

func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set(searchHeader, "1")
	q := queryOf(w, r)
	for k, v := range q {
		if !searchQueryParams[k] {
			return trove.Errorf(trove.EINVALID, "unknown query parameter %q; use q, store_id, path_prefix, limit and page", k)
		}
		if k != "store_id" && len(v) > 1 {
			return trove.Errorf(trove.EINVALID, "query parameter %q given %d times", k, len(v))
		}
	}
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	page, err := s.svc.Search(r.Context(), trove.SearchParams{
		Query: q.Get("q"), StoreIDs: q["store_id"], PathPrefix: q.Get("path_prefix"), Limit: limit, Cursor: q.Get("page"),
	})
	if err != nil {
		return err
	}
	out := wirePage[wireSearchResult]{Data: make([]wireSearchResult, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = searchResultToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

// WireSearchResult is the JSON value of a search result on the wire, for
// the CLI's -o json.
func WireSearchResult(r *trove.SearchResult) any { return searchResultToWire(r) }

// Client side.

var _ trove.SearchService = (*Client)(nil)

// Search runs a search on the server (trove.SearchService). Against a
// server without the endpoint it returns an ENOTFOUND *trove.Error for
// which errors.Is(err, errors.ErrUnsupported) holds.
func (c *Client) Search(ctx context.Context, p trove.SearchParams) (*trove.Page[trove.SearchResult], error) {
	q := url.Values{"q": {p.Query}}
	for _, id := range p.StoreIDs {
		q.Add("store_id", id)
	}
	if p.PathPrefix != "" {
		q.Set("path_prefix", p.PathPrefix)
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("page", p.Cursor)
	}
	const path = "/trove/v1/search"
	var out wirePage[wireSearchResult]
	if _, err := c.do(ctx, http.MethodGet, path, q, nil, &out); err != nil {
		var se *httpStatusError
		if !errors.As(err, &se) || se.search || (se.status != http.StatusNotFound && se.status != http.StatusMethodNotAllowed) {
			return nil, err
		}
		return nil, &trove.Error{
			Code:    trove.ENOTFOUND,
			Message: fmt.Sprintf("the server does not offer search (GET %s answered %s)", path, se.statusText),
			Err:     fmt.Errorf("%w: %w", errors.ErrUnsupported, se),
		}
	}
	page := &trove.Page[trove.SearchResult]{Data: make([]trove.SearchResult, len(out.Data))}
	if out.NextPage != nil {
		page.NextPage = *out.NextPage
	}
	for i, w := range out.Data {
		m := w.Memory
		page.Data[i] = trove.SearchResult{
			Memory: trove.Memory{
				ID: m.ID, StoreID: m.MemoryStoreID, Path: m.Path, SizeBytes: m.ContentSizeBytes,
				SHA256: m.ContentSHA256, VersionID: m.MemoryVersionID,
				CreatedAt: parseTime(m.CreatedAt), UpdatedAt: parseTime(m.UpdatedAt),
			},
			Score: w.Score, Snippet: w.Snippet, SnippetOffset: w.SnippetOffset,
			Highlights: rangesFromWire(w.Highlights), PathHighlights: rangesFromWire(w.PathHighlights),
		}
	}
	return page, nil
}
