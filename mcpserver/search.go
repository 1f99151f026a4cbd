package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/storetree"
)

// Search limits.
const (
	DefaultSearchLimit = 20  // memories listed when limit is not given
	MaxSearchLimit     = 100 // the largest limit accepted
	MaxQueryChars      = 500 // the longest query accepted
	snippetLines       = 3   // matching lines shown per memory
	snippetChars       = 200 // characters shown per matching line
)

const searchDescription = `Search the memory files (read-only). Finds files whose path or content contains every word of the query (whole words, case-insensitive; the last word also as a prefix; "double quotes" for words that must appear together in that order), most relevant first, and returns their paths with the matching lines, numbered as in view. A query with no letters or digits is matched as plain text. Arguments: query (required), path_prefix (optional directory under /memories to search in), limit (optional, 1-100 files, default 20).`

const searchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Words to find in memory paths and content (case-insensitive; \"quoted phrase\" for adjacent words)."},
    "path_prefix": {"type": "string", "description": "Only search below this directory, e.g. /memories/projects/."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "The most files to return (default 20)."}
  },
  "required": ["query"]
}`

// searchArgs is the validated input of search.
type searchArgs struct {
	query  string
	prefix memtool.Path
	limit  int
}

// parseSearch validates the raw input, returning a message for the model on
// failure.
func parseSearch(raw json.RawMessage) (searchArgs, string) {
	a := searchArgs{limit: DefaultSearchLimit, prefix: memtool.Path{Raw: memtool.RootPath}}
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return a, `The search input must be a JSON object with a "query" field.`
	}
	for k := range m {
		switch k {
		case "query", "path_prefix", "limit":
		default:
			return a, fmt.Sprintf("Unknown parameter %q for search: use query, path_prefix and limit.", k)
		}
	}
	q, ok := m["query"]
	if !ok || string(bytes.TrimSpace(q)) == "null" {
		return a, `Missing required parameter "query" for search: give the text to find.`
	}
	if err := json.Unmarshal(q, &a.query); err != nil {
		return a, `Invalid parameter "query" for search: expected a string.`
	}
	if strings.TrimSpace(a.query) == "" {
		return a, `Invalid parameter "query" for search: it must not be empty.`
	}
	if n := utf8.RuneCountInString(a.query); n > MaxQueryChars {
		return a, fmt.Sprintf(`Invalid parameter "query" for search: it is %d characters; the maximum is %d.`, n, MaxQueryChars)
	}
	if pp, ok := m["path_prefix"]; ok && string(bytes.TrimSpace(pp)) != "null" {
		var s string
		if err := json.Unmarshal(pp, &s); err != nil {
			return a, `Invalid parameter "path_prefix" for search: expected a string such as "/memories/projects/".`
		}
		p, err := memtool.ParsePath(s)
		if err != nil {
			return a, err.Error()
		}
		a.prefix = p
	}
	if l, ok := m["limit"]; ok && string(bytes.TrimSpace(l)) != "null" {
		var n json.Number
		if err := json.Unmarshal(l, &n); err != nil {
			return a, fmt.Sprintf(`Invalid parameter "limit" for search: expected an integer from 1 to %d.`, MaxSearchLimit)
		}
		i, err := strconv.Atoi(n.String())
		if err != nil || i < 1 || i > MaxSearchLimit {
			return a, fmt.Sprintf(`Invalid parameter "limit" for search: %s; it must be an integer from 1 to %d.`, n.String(), MaxSearchLimit)
		}
		a.limit = i
	}
	return a, ""
}

// target is one store prefix to scan, with the tool path its memory paths
// appear under.
type target struct {
	storeID string
	dir     string // store directory searched: "/" or "/a/b"
	display string // tool path of the store root: "/memories" or "/memories/<slug>"
}

func (s *Server) targets(p memtool.Path) ([]target, string) {
	rel := p.Rel
	if s.single {
		return []target{{storeID: s.mounts[0].StoreID, dir: storetree.MemPath(rel), display: memtool.RootPath}}, ""
	}
	if rel == "" {
		var out []target
		for _, m := range s.mounts {
			out = append(out, target{storeID: m.StoreID, dir: "/", display: mountRoot(m.Slug)})
		}
		return out, ""
	}
	slug, rest, _ := strings.Cut(rel, "/")
	for _, m := range s.mounts {
		if m.Slug == slug {
			return []target{{storeID: m.StoreID, dir: storetree.MemPath(rest), display: mountRoot(m.Slug)}}, ""
		}
	}
	return nil, fmt.Sprintf("The path_prefix %s is not inside a store's directory; use one of %s.", p.Raw, s.mountDirs())
}

// handleSearch runs one search call.
func (s *Server) handleSearch(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, msg := parseSearch(req.Params.Arguments)
	if msg != "" {
		return errorResult("%s", strings.TrimPrefix(msg, "Error: ")), nil
	}
	targets, msg := s.targets(a.prefix)
	if msg != "" {
		return errorResult("%s", msg), nil
	}
	ctx = s.ctx(ctx)
	r := &searchRun{needle: strings.ToLower(a.query), limit: a.limit}
	if q, err := trove.ParseSearchQuery(a.query); err == nil {
		res, ok := s.searchIndex(ctx, targets, q, a, r)
		if res != nil {
			return res, nil
		}
		if ok {
			return r.result(a), nil
		}
		// The service has no search (an older server): grep below.
		r = &searchRun{needle: strings.ToLower(a.query), limit: a.limit}
	}
	for _, t := range targets {
		if res := s.searchTarget(ctx, t, r); res != nil {
			return res, nil
		}
		if r.more {
			break
		}
	}
	return r.result(a), nil
}

// result is the tool result of a finished run.
func (r *searchRun) result(a searchArgs) *mcp.CallToolResult {
	where := a.prefix.Raw
	if r.found == 0 {
		return textResult(fmt.Sprintf("No memory under %s matches %s.", where, strconv.Quote(a.query)))
	}
	head := fmt.Sprintf("Found %d memories under %s matching %s", r.found, where, strconv.Quote(a.query))
	if r.more {
		head += fmt.Sprintf(" (showing the first %d; raise limit or narrow path_prefix to see more)", a.limit)
	}
	return textResult(head + ":" + r.sb.String())
}

// searchIndex runs the search through the service's full-text index
// (trove.SearchService): one request over every target store, ranked,
// then each result's content read to show its matching lines numbered as
// in view. ok is false when the service has no search (errors.ErrUnsupported),
// and res is the tool result to give when the search failed otherwise.
func (s *Server) searchIndex(ctx context.Context, targets []target, q trove.SearchQuery, a searchArgs, r *searchRun) (res *mcp.CallToolResult, ok bool) {
	display := map[string]string{}
	p := trove.SearchParams{Query: a.query, Limit: a.limit}
	lim := s.opt.Limits
	for _, t := range targets {
		if err := trove.ValidatePathPrefix(storetree.Prefix(t.dir), lim.MaxPathBytes, lim.MaxPathSegments); err != nil {
			continue // no memory can live there
		}
		display[t.storeID] = t.display
		p.StoreIDs = append(p.StoreIDs, t.storeID)
		if t.dir != "/" {
			p.PathPrefix = storetree.Prefix(t.dir) // one target only: a directory is in one store
		}
	}
	if len(p.StoreIDs) == 0 {
		return nil, true
	}
	page, err := s.svc.Search(ctx, p)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, false
	}
	if err != nil {
		return s.searchError(p.StoreIDs, err), true
	}
	for _, hit := range page.Data {
		m, err := s.svc.GetMemory(ctx, hit.Memory.StoreID, hit.Memory.ID, trove.ViewFull)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			continue // deleted since the search
		}
		if err != nil {
			return s.searchError(p.StoreIDs, err), true
		}
		r.addRanked(display[m.StoreID]+m.Path, *m.Content, q)
	}
	r.more = page.NextPage != ""
	return nil, true
}

// addRanked lists a memory the index found, with up to snippetLines of its
// lines that hold a match.
func (r *searchRun) addRanked(path, content string, q trove.SearchQuery) {
	r.found++
	r.sb.WriteString("\n" + path)
	var lines []int
	for i, line := range strings.Split(content, "\n") {
		if len(q.Matches(line)) > 0 {
			lines = append(lines, i)
		}
	}
	if len(lines) == 0 {
		r.sb.WriteString(" (the path matches)")
		return
	}
	all := strings.Split(content, "\n")
	for _, i := range lines[:min(len(lines), snippetLines)] {
		line := all[i]
		if utf8.RuneCountInString(line) > snippetChars {
			line = string([]rune(line)[:snippetChars]) + "…"
		}
		fmt.Fprintf(&r.sb, "\n%6d\t%s", i+1, line)
	}
	if len(lines) > snippetLines {
		fmt.Fprintf(&r.sb, "\n       ... %d more matching lines", len(lines)-snippetLines)
	}
}

// searchError is the tool result for a failed search.
func (s *Server) searchError(storeIDs []string, err error) *mcp.CallToolResult {
	s.opt.Logger.Error("search", "stores", storeIDs, "err", err)
	switch trove.ErrorCode(err) {
	case trove.EINVALID, trove.EFORBIDDEN, trove.ENOTFOUND, trove.EUNAUTHENTICATED:
		return errorResult("The memory store refused the search: %s.", trove.ErrorMessage(err))
	}
	return errorResult("The search failed because of a storage error. Try again later.")
}

// searchRun collects the matches of one search.
type searchRun struct {
	needle string // the lower-case query
	limit  int
	found  int
	more   bool // a match beyond limit was seen
	sb     strings.Builder
}

// add lists the memory at tool path path if it matches; it returns false
// once a match beyond the limit is seen.
func (r *searchRun) add(path, content string) bool {
	snip, n := matchLines(content, r.needle)
	if n == 0 && !strings.Contains(strings.ToLower(path), r.needle) {
		return true
	}
	if r.found == r.limit {
		r.more = true
		return false
	}
	r.found++
	r.sb.WriteString("\n" + path)
	if n == 0 {
		r.sb.WriteString(" (the path matches)")
	}
	r.sb.WriteString(snip)
	if n > snippetLines {
		fmt.Fprintf(&r.sb, "\n       ... %d more matching lines", n-snippetLines)
	}
	return true
}

// searchTarget adds the memories of t to r until r is full. It returns the
// tool result to give when the store cannot be listed, else nil.
func (s *Server) searchTarget(ctx context.Context, t target, r *searchRun) *mcp.CallToolResult {
	lim := s.opt.Limits
	if err := trove.ValidatePathPrefix(storetree.Prefix(t.dir), lim.MaxPathBytes, lim.MaxPathSegments); err != nil {
		return nil // no memory can live there
	}
	tree := storetree.New(s.svc, t.storeID, lim)
	err := tree.List(ctx, t.dir, 0, trove.ViewFull, func(it trove.MemoryListItem) bool {
		return it.Memory == nil || it.Memory.Content == nil || r.add(t.display+it.Memory.Path, *it.Memory.Content)
	})
	if err != nil {
		s.opt.Logger.Error("search: list memories", "store", t.storeID, "err", err)
		switch trove.ErrorCode(err) {
		case trove.EINVALID, trove.EFORBIDDEN, trove.ENOTFOUND, trove.EUNAUTHENTICATED:
			return errorResult("The memory store refused the search: %s.", trove.ErrorMessage(err))
		}
		return errorResult("The search failed because of a storage error. Try again later.")
	}
	return nil
}

// matchLines returns up to snippetLines numbered matching lines of content
// (each starting with "\n") and the number of matching lines.
func matchLines(content, needle string) (string, int) {
	var sb strings.Builder
	n := 0
	for i, line := range strings.Split(content, "\n") {
		if !strings.Contains(strings.ToLower(line), needle) {
			continue
		}
		n++
		if n > snippetLines {
			continue
		}
		if utf8.RuneCountInString(line) > snippetChars {
			line = string([]rune(line)[:snippetChars]) + "…"
		}
		fmt.Fprintf(&sb, "\n%6d\t%s", i+1, line)
	}
	return sb.String(), n
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
