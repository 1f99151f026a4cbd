package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/follow"
)

// The change feed (trove.ChangeService), a Trove extension:
//
//	GET /trove/v1/memory_stores/{memory_store_id}/changes?after=SEQ&limit=N[&wait=DUR]
//	    Accept: application/json (default)
//	    → {"data": [change, …], "cursor": SEQ, "has_more": bool, "head": SEQ}
//	    With wait (seconds, or a Go duration such as "1500ms"; at most
//	    MaxChangesWait) and nothing after `after` yet, the answer waits
//	    until there is, or wait passes (then "data" is empty): a long poll.
//	GET …/changes?after=SEQ   Accept: text/event-stream
//	    → server-sent events, one per change: "id: SEQ", "event: change",
//	    "data: <change>", in Seq order, for as long as the client stays
//	    (a comment line every FeedHeartbeat keeps proxies from closing
//	    it). A Last-Event-ID header, as an EventSource sends when it
//	    reconnects, takes the place of after. An error after the stream
//	    started ends it with "event: error" carrying the error envelope.
//
// A change is {"type": "memory_change", "seq", "memory_version_id",
// "memory_id", "operation", "path", "content_sha256", "content_size_bytes",
// "created_by", "created_at", "redacted"}.

// changesHeader marks every answer of the changes endpoint, errors
// included, so a client can tell "no such endpoint" from "no such store".
const changesHeader = "Trove-Changes"

// MaxChangesWait bounds a long poll's wait.
const MaxChangesWait = 5 * time.Minute

// DefaultFeedHeartbeat is Config.FeedHeartbeat's default.
const DefaultFeedHeartbeat = 15 * time.Second

type wireChange struct {
	Type             string     `json:"type"`
	Seq              int64      `json:"seq"`
	MemoryVersionID  string     `json:"memory_version_id"`
	MemoryID         string     `json:"memory_id"`
	Operation        string     `json:"operation"`
	Path             *string    `json:"path"`
	ContentSHA256    *string    `json:"content_sha256"`
	ContentSizeBytes *int       `json:"content_size_bytes"`
	CreatedBy        *wireActor `json:"created_by"`
	CreatedAt        string     `json:"created_at"`
	Redacted         bool       `json:"redacted"`
}

type wireChangePage struct {
	Data    []wireChange `json:"data"`
	Cursor  int64        `json:"cursor"`
	HasMore bool         `json:"has_more"`
	Head    int64        `json:"head"`
}

func changeToWire(c *trove.Change) wireChange {
	w := wireChange{
		Type: "memory_change", Seq: c.Seq, MemoryVersionID: c.VersionID, MemoryID: c.MemoryID,
		Operation: string(c.Operation), CreatedBy: actorToWire(c.CreatedBy), CreatedAt: formatTime(c.CreatedAt),
		Redacted: c.Redacted,
	}
	if !c.Redacted {
		p := c.Path
		w.Path = &p
		if c.Operation != trove.OpDeleted {
			sha, size := c.SHA256, c.SizeBytes
			w.ContentSHA256, w.ContentSizeBytes = &sha, &size
		}
	}
	return w
}

func changeFromWire(w *wireChange) trove.Change {
	c := trove.Change{
		Seq: w.Seq, VersionID: w.MemoryVersionID, MemoryID: w.MemoryID, Operation: trove.Operation(w.Operation),
		CreatedAt: parseTime(w.CreatedAt), Redacted: w.Redacted,
	}
	if w.Path != nil {
		c.Path = *w.Path
	}
	if w.ContentSHA256 != nil {
		c.SHA256 = *w.ContentSHA256
	}
	if w.ContentSizeBytes != nil {
		c.SizeBytes = *w.ContentSizeBytes
	}
	if w.CreatedBy != nil {
		a := trove.NewActor(trove.ActorType(w.CreatedBy.Type), w.CreatedBy.APIKeyID+w.CreatedBy.SessionID+w.CreatedBy.UserID+w.CreatedBy.ServiceAccountID)
		c.CreatedBy = &a
	}
	return c
}

// parseSeq reads a cursor: a decimal integer >= 0.
func parseSeq(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, trove.Errorf(trove.EINVALID, "%s must be a sequence number (an integer >= 0), got %q", name, v)
	}
	return n, nil
}

// parseWait reads wait: seconds ("30", "0.5") or a Go duration ("1500ms"),
// 0..MaxChangesWait.
func parseWait(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, trove.Errorf(trove.EINVALID, "wait must be seconds (\"30\") or a duration (\"1500ms\"), got %q", v)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < 0 || d > MaxChangesWait {
		return 0, trove.Errorf(trove.EINVALID, "wait must be between 0 and %v, got %q", MaxChangesWait, v)
	}
	return d, nil
}

func (s *Server) listChanges(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set(changesHeader, "1")
	if s.changes == nil {
		return trove.Errorf(trove.ENOTFOUND, "this server does not offer a change feed")
	}
	q := queryOf(w, r)
	for k := range q {
		switch k {
		case "after", "limit", "wait":
		default:
			return trove.Errorf(trove.EINVALID, "unknown query parameter %q: the changes endpoint takes after, limit and wait", k)
		}
	}
	after, err := parseSeq("after", q.Get("after"))
	if err != nil {
		return err
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if after, err = parseSeq("Last-Event-ID", id); err != nil {
			return err
		}
	}
	limit, err := queryLimit(q) // the same rule as every list
	if err != nil {
		return err
	}
	wait, err := parseWait(q.Get("wait"))
	if err != nil {
		return err
	}
	storeID := r.PathValue("memory_store_id")
	// A stream or a long poll lasts: it re-checks its credential (live.go).
	ctx, done := s.liveCredential(r)
	defer done()
	page, err := s.changes.ListChanges(ctx, storeID, trove.ListChangesParams{After: after, Limit: limit})
	if err != nil {
		if lost := trove.CredentialLost(ctx); lost != nil {
			return lost // the credential ended before the first page was read
		}
		return err
	}
	if acceptsEventStream(r) {
		return s.streamChanges(ctx, w, r, storeID, limit, page)
	}
	if wait > 0 && len(page.Changes) == 0 {
		if r.ProtoMajor == 1 {
			// ServeHTTP's deadline until the response starts does not
			// count a wait.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + s.limits.Write))
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		head, werr := s.changes.WaitChanges(wctx, storeID, page.Cursor)
		cancel()
		switch {
		case werr == nil && head > page.Cursor:
			if page, err = s.changes.ListChanges(ctx, storeID, trove.ListChangesParams{After: page.Cursor, Limit: limit}); err != nil {
				if lost := trove.CredentialLost(ctx); lost != nil {
					return lost
				}
				return err
			}
		case errors.Is(werr, context.DeadlineExceeded) && ctx.Err() == nil:
			// Nothing within wait: the empty page stands.
		case trove.CredentialLost(ctx) != nil:
			return trove.CredentialLost(ctx)
		case werr != nil:
			return werr
		}
	}
	out := wireChangePage{Data: make([]wireChange, len(page.Changes)), Cursor: page.Cursor, HasMore: page.More, Head: page.Head}
	for i := range page.Changes {
		out.Data[i] = changeToWire(&page.Changes[i])
	}
	return s.ok(w, &out)
}

// acceptsEventStream reports whether the client asked for server-sent
// events.
func acceptsEventStream(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for v := range strings.SplitSeq(a, ",") {
			mt, _, _ := strings.Cut(v, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// streamChanges sends first and every later change as server-sent events
// until the client leaves, the server shuts down, the credential stops
// being valid (ctx, from liveCredential: its error is sent as an error
// event), or an error (sent as an error event). Each write gets a fresh
// Timeouts.Write deadline, so a stream lives as long as its client reads
// it and its credential holds.
func (s *Server) streamChanges(ctx context.Context, w http.ResponseWriter, r *http.Request, storeID string, limit int, page *trove.ChangeBatch) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.limits.Write))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 1000\n\n")) {
		return nil
	}
	var buf []byte
	for {
		buf = buf[:0]
		for i := range page.Changes {
			data, err := json.Marshal(changeToWire(&page.Changes[i]))
			if err != nil {
				return nil // cannot happen: plain strings and numbers
			}
			buf = fmt.Appendf(buf, "id: %d\nevent: change\ndata: %s\n\n", page.Changes[i].Seq, data)
		}
		if len(buf) > 0 && !send(buf) {
			return nil
		}
		cursor := page.Cursor
		for !page.More {
			wctx, cancel := context.WithTimeout(ctx, s.heartbeat)
			stop := context.AfterFunc(s.closing, cancel)
			_, err := s.changes.WaitChanges(wctx, storeID, cursor)
			stop()
			cancel()
			if lost := trove.CredentialLost(ctx); lost != nil {
				s.sendStreamError(send, w, r, lost)
				return nil
			}
			if ctx.Err() != nil || s.closing.Err() != nil {
				return nil
			}
			if err == nil {
				break
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				s.sendStreamError(send, w, r, err)
				return nil
			}
			if !send([]byte(": heartbeat\n\n")) {
				return nil
			}
		}
		var err error
		if page, err = s.changes.ListChanges(ctx, storeID, trove.ListChangesParams{After: cursor, Limit: limit}); err != nil {
			if lost := trove.CredentialLost(ctx); lost != nil {
				s.sendStreamError(send, w, r, lost)
				return nil
			}
			if ctx.Err() != nil {
				return nil
			}
			s.sendStreamError(send, w, r, err)
			return nil
		}
	}
}

// sendStreamError ends a stream with an error event carrying the envelope.
func (s *Server) sendStreamError(send func([]byte) bool, w http.ResponseWriter, r *http.Request, err error) {
	cw := &captureWriter{header: http.Header{}}
	s.writeError(cw, r, err)
	send(fmt.Appendf(nil, "event: error\ndata: %s\n\n", strings.TrimSpace(string(cw.body))))
}

// captureWriter collects what writeError sends, to put it in an event.
type captureWriter struct {
	header http.Header
	body   []byte
}

func (c *captureWriter) Header() http.Header { return c.header }
func (c *captureWriter) WriteHeader(int)     {}
func (c *captureWriter) Write(b []byte) (int, error) {
	c.body = append(c.body, b...)
	return len(b), nil
}

// Client side.

var _ trove.ChangeService = (*Client)(nil)

// clientWait is how long one long poll of Client.WaitChanges asks the
// server to wait: under the default client's 60 s timeout.
const clientWait = 25 * time.Second

func changesPath(storeID string) string {
	return "/trove/v1/memory_stores/" + url.PathEscape(storeID) + "/changes"
}

// changesErr turns an answer without the changes marker (no such
// endpoint: an older server or another memory stores API) into an
// ENOTFOUND for which errors.Is(err, errors.ErrUnsupported) holds.
func changesErr(err error) error {
	var se *httpStatusError
	if !errors.As(err, &se) || se.changes || (se.status != http.StatusNotFound && se.status != http.StatusMethodNotAllowed) {
		return err
	}
	return &trove.Error{
		Code:    trove.ENOTFOUND,
		Message: fmt.Sprintf("the server does not offer a change feed (GET %s answered %s)", se.path, se.statusText),
		Err:     fmt.Errorf("%w: %w", errors.ErrUnsupported, se),
	}
}

// ListChanges lists a store's changes after p.After (trove.ChangeService).
// Against a server without the feed: ENOTFOUND with errors.ErrUnsupported.
func (c *Client) ListChanges(ctx context.Context, storeID string, p trove.ListChangesParams) (*trove.ChangeBatch, error) {
	return c.listChanges(ctx, storeID, p, 0)
}

func (c *Client) listChanges(ctx context.Context, storeID string, p trove.ListChangesParams, wait time.Duration) (*trove.ChangeBatch, error) {
	if storeID == "" {
		return nil, errStoreNotFound("")
	}
	q := url.Values{"after": {strconv.FormatInt(p.After, 10)}}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	var out wireChangePage
	if _, err := c.do(ctx, http.MethodGet, changesPath(storeID), q, nil, &out); err != nil {
		return nil, changesErr(err)
	}
	b := &trove.ChangeBatch{Changes: make([]trove.Change, len(out.Data)), Cursor: out.Cursor, More: out.HasMore, Head: out.Head}
	for i := range out.Data {
		b.Changes[i] = changeFromWire(&out.Data[i])
	}
	return b, nil
}

// WaitChanges long-polls the server until the store's history goes past
// after (trove.ChangeService) and returns a Seq above after that it has
// reached. It returns ctx's error as is when ctx ends first.
func (c *Client) WaitChanges(ctx context.Context, storeID string, after int64) (int64, error) {
	for {
		b, err := c.listChanges(ctx, storeID, trove.ListChangesParams{After: after, Limit: 1}, clientWait)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err != nil {
			return 0, err
		}
		if b.Cursor > after {
			return b.Cursor, nil
		}
	}
}

// FollowChanges streams a store's changes after `after` (server-sent
// events) and calls fn with each, in Seq order, each exactly once. When the
// stream drops (a network error, a server restart) it reconnects, with
// Last-Event-ID set to the last Seq delivered, after a pause that grows
// from 100 ms to 5 s while reconnecting fails, so nothing is lost or
// repeated. connected, when not nil, is called with true each time a
// stream is open and false each time it is lost. It returns when ctx ends
// (ctx's error), when fn returns an error (that error), or on an answer
// that reconnecting cannot change: ENOTFOUND (errors.ErrUnsupported when
// the server has no feed), EUNAUTHENTICATED, EFORBIDDEN, EINVALID. The
// loop is internal/follow's; streamOnce is one connection.
func (c *Client) FollowChanges(ctx context.Context, storeID string, after int64, fn func(trove.Change) error, connected func(bool)) error {
	if storeID == "" {
		return errStoreNotFound("")
	}
	hc := *c.http
	hc.Timeout = 0 // a stream has no end; heartbeats and ctx bound it
	return follow.Run(ctx, after, func(ctx context.Context, f *follow.Feed[trove.Change]) error {
		return c.streamOnce(ctx, &hc, storeID, f)
	}, fn, connected)
}

// streamOnce reads one stream of the store's changes after f.After()
// until it ends, handing each change to f.Deliver.
func (c *Client) streamOnce(ctx context.Context, hc *http.Client, storeID string, f *follow.Feed[trove.Change]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	after := strconv.FormatInt(f.After(), 10)
	req, err := c.streamRequest(ctx, changesPath(storeID)+"?after="+after, after, "")
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached", Err: err}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return changesErr(fromEnvelope(res.StatusCode, data, &httpStatusError{method: http.MethodGet, path: changesPath(storeID), status: res.StatusCode, statusText: res.Status, changes: res.Header.Get(changesHeader) != ""}))
	}
	f.Live()
	err = readSSE(res.Body, 1<<20, func(e *sseEvent) error {
		switch e.event {
		case "change":
			var wc wireChange
			if err := json.Unmarshal(e.data, &wc); err != nil {
				return &trove.Error{Code: trove.EINTERNAL, Message: "the server sent a change that is not valid JSON", Err: err}
			}
			ch := changeFromWire(&wc)
			return f.Deliver(ch.Seq, ch)
		case "error":
			return fromEnvelope(http.StatusOK, e.data, errors.New("error event in the change stream"))
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStreamRead) {
		return err
	}
	if err == nil {
		err = io.ErrUnexpectedEOF // the server ends a change stream only at shutdown
	}
	return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the change stream ended", Err: err}
}
