package console

import (
	"net/http"
	"strings"

	"github.com/trovehq/trove"
)

// searchPageSize is how many results one search page shows.
const searchPageSize = 20

// segment is a piece of a snippet or path: Mark says whether it is a
// match. Templates write Text escaped, inside <mark> when Mark is set, so
// that highlighting never turns a memory's text into markup.
type segment struct {
	Text string
	Mark bool
}

// segments cuts s at the byte ranges rs (ascending, non-overlapping, as
// SearchResult documents them). A range that is out of bounds, overlaps
// the previous one or splits a UTF-8 character ends the marking: the rest
// is plain text.
func segments(s string, rs []trove.TextRange) []segment {
	var out []segment
	at := 0
	for _, r := range rs {
		if r.Start < at || r.End <= r.Start || r.End > len(s) || !boundary(s, r.Start) || !boundary(s, r.End) {
			break
		}
		if r.Start > at {
			out = append(out, segment{Text: s[at:r.Start]})
		}
		out = append(out, segment{Text: s[r.Start:r.End], Mark: true})
		at = r.End
	}
	if at < len(s) {
		out = append(out, segment{Text: s[at:]})
	}
	return out
}

// boundary reports whether byte i of s starts a UTF-8 character (or ends s).
func boundary(s string, i int) bool { return i == len(s) || s[i]&0xC0 != 0x80 }

type searchHit struct {
	Store   *trove.Store // nil when the store could not be read
	Memory  trove.Memory
	Path    []segment
	Snippet []segment
	Before  bool // the snippet starts inside the content
	After   bool // the snippet ends before the content does
}

type searchData struct {
	Query    string
	StoreID  string // "" for every store
	Prefix   string
	Stores   []trove.Store // the stores to choose from
	Hits     []searchHit
	Next     string
	Searched bool
}

// searchPage searches every store the signed-in key sees, or one, and
// shows the ranked results with their matches marked.
func (h *Handler) searchPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	q := query(r)
	d := searchData{Query: q.Get("q"), StoreID: q.Get("store"), Prefix: q.Get("prefix")}
	stores, err := h.svc.ListStores(ctx, trove.ListStoresParams{Limit: 100})
	if err != nil {
		return err
	}
	d.Stores = stores.Data
	v := &view{Title: "Search", Data: &d}
	if strings.TrimSpace(d.Query) == "" {
		h.render(w, r, http.StatusOK, "search", s, v)
		return nil
	}
	p := trove.SearchParams{Query: d.Query, PathPrefix: d.Prefix, Limit: searchPageSize, Cursor: q.Get("cursor")}
	if d.StoreID != "" {
		p.StoreIDs = []string{d.StoreID}
	}
	pg, err := h.svc.Search(ctx, p)
	if err != nil {
		if c := status(err); c < 500 {
			v.Error = "Could not search: " + trove.ErrorMessage(err)
			h.render(w, r, c, "search", s, v)
			return nil
		}
		return err
	}
	d.Searched, d.Next = true, pg.NextPage
	byID := map[string]*trove.Store{}
	for i := range d.Stores {
		byID[d.Stores[i].ID] = &d.Stores[i]
	}
	for _, res := range pg.Data {
		st := byID[res.Memory.StoreID]
		if st == nil {
			if x, err := h.svc.GetStore(ctx, res.Memory.StoreID); err == nil {
				st, byID[x.ID] = x, x
			}
		}
		d.Hits = append(d.Hits, searchHit{
			Store: st, Memory: res.Memory,
			Path:    segments(res.Memory.Path, res.PathHighlights),
			Snippet: segments(res.Snippet, res.Highlights),
			Before:  res.SnippetOffset > 0,
			After:   res.SnippetOffset+len(res.Snippet) < res.Memory.SizeBytes,
		})
	}
	h.render(w, r, http.StatusOK, "search", s, v)
	return nil
}
