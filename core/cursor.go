package core

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Page cursors are opaque to clients: "page_" followed by the unpadded
// base64url encoding of a small versioned JSON object that holds only a
// position, never a filter or an offset, so a cursor stays valid under
// concurrent inserts and the client repeats its filters on every request.
//
//	{"v":1,"k":"p","t":"<RFC 3339 created_at>","i":"<id>"}  stores, versions, sessions
//	{"v":1,"k":"m","f":"<path>"}                           memories: the next From
//	{"v":1,"k":"s","s":"<score>","i":"<id>"}                search results (search.go)
const cursorPrefix = "page_"

const (
	cursorVersion  = 1
	kindPosition   = "p"
	kindMemoryFrom = "m"
)

type cursorJSON struct {
	V int    `json:"v"`
	K string `json:"k"`
	T string `json:"t,omitempty"`
	I string `json:"i,omitempty"`
	F string `json:"f,omitempty"`
	S string `json:"s,omitempty"`
}

func errBadCursor() error { return trove.Errorf(trove.EINVALID, "invalid page cursor") }

func encodeCursor(c cursorJSON) string {
	c.V = cursorVersion
	b, err := json.Marshal(c)
	if err != nil { // cannot happen for this type
		panic(err)
	}
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, kind string) (cursorJSON, error) {
	var c cursorJSON
	raw, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok || len(raw) > 4096 {
		return c, errBadCursor()
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(raw, "="))
	if err != nil {
		return c, errBadCursor()
	}
	if err := json.Unmarshal(b, &c); err != nil || c.V != cursorVersion || c.K != kind {
		return c, errBadCursor()
	}
	return c, nil
}

// encodePosition returns the cursor of a (CreatedAt, ID) keyset position.
func encodePosition(at time.Time, id string) string {
	return encodeCursor(cursorJSON{K: kindPosition, T: at.UTC().Format(time.RFC3339Nano), I: id})
}

// decodePosition returns the position of a cursor, nil for "", or EINVALID.
func decodePosition(s string) (*storage.Position, error) {
	if s == "" {
		return nil, nil
	}
	c, err := decodeCursor(s, kindPosition)
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, c.T)
	if err != nil || c.I == "" {
		return nil, errBadCursor()
	}
	return &storage.Position{CreatedAt: t.UTC(), ID: c.I}, nil
}

// encodeMemoryFrom returns the cursor of a memory listing resuming at the
// inclusive lower bound from.
func encodeMemoryFrom(from string) string {
	return encodeCursor(cursorJSON{K: kindMemoryFrom, F: from})
}

// decodeMemoryFrom returns the From of a memory cursor, "" for "", or
// EINVALID.
func decodeMemoryFrom(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	c, err := decodeCursor(s, kindMemoryFrom)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(c.F, "/") {
		return "", errBadCursor()
	}
	return c.F, nil
}

// positionPage turns rows fetched with limit+1 into a page: the first limit
// rows, each passed through conv, and, when there was one more row, a cursor
// positioned at the last row returned (its (created_at, id) from pos).
func positionPage[T any](rows []T, limit int, conv func(*T) *T, pos func(*T) (time.Time, string)) *trove.Page[T] {
	page := &trove.Page[T]{Data: make([]T, 0, min(len(rows), limit))}
	for i := range rows {
		if i == limit {
			page.NextPage = encodePosition(pos(&page.Data[limit-1]))
			break
		}
		page.Data = append(page.Data, *conv(&rows[i]))
	}
	return page
}
