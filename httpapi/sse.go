package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/trovehq/trove"
)

// sseEvent is one server-sent event as the client streams read it: its
// id, event and data fields (the data lines joined without separators,
// as the server sends JSON on one line).
type sseEvent struct {
	id, event string
	data      []byte
}

// readSSE reads server-sent events from r and calls fn with each one a
// blank line completes (fn must not keep e.data). An event whose data
// passes max bytes, or a line longer than max, is an error (EINTERNAL:
// the server sent more than an event can be), so that a broken or hostile
// server cannot make the client hold an unbounded event. It returns nil
// when r ends, fn's error as is, or the read's error wrapped with
// errStreamRead (the connection broke: the caller's EUNAVAILABLE).
func readSSE(r io.Reader, max int, fn func(e *sseEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), max)
	var e sseEvent
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if err := fn(&e); err != nil {
				return err
			}
			e.id, e.event, e.data = "", "", e.data[:0]
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			e.id = value
		case "event":
			e.event = value
		case "data":
			if len(e.data)+len(value) > max {
				return trove.Errorf(trove.EINTERNAL, "the server sent an event of more than %d bytes", max)
			}
			e.data = append(e.data, value...)
		}
	}
	if err := sc.Err(); err == bufio.ErrTooLong {
		return trove.Errorf(trove.EINTERNAL, "the server sent a line of more than %d bytes", max)
	} else if err != nil {
		return fmt.Errorf("%w: %w", errStreamRead, err)
	}
	return nil
}

// errStreamRead marks readSSE's errors of the connection itself.
var errStreamRead = errors.New("reading the event stream")

// streamRequest is a GET of a server-sent event stream at path with the
// client's credentials, resuming after lastEventID ("" for none), with
// the beta header when beta is not "".
func (c *Client) streamRequest(ctx context.Context, path, lastEventID, beta string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, trove.Errorf(trove.EINVALID, "building the request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	if beta != "" {
		req.Header.Set("anthropic-beta", beta)
	}
	if c.workspace != "" {
		req.Header.Set("anthropic-workspace-id", c.workspace)
	}
	return req, nil
}
