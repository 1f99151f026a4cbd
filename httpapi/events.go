package httpapi

import (
	"bytes"
	stdjson "encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// Session transcripts: /trove/v1/sessions/{session_id}/events. An event is
// a JSON object in the Managed Agents session event shape ("type" plus the
// type's members); the server sets "id" and "processed_at".

type wireAppendEvents struct {
	Events []jsontext.Value `json:"events"`
}

// eventToWire renders e as its JSON object: the stored members plus id,
// type and processed_at.
func eventToWire(e *trove.SessionEvent) map[string]stdjson.RawMessage {
	m := map[string]stdjson.RawMessage{}
	_ = stdjson.Unmarshal([]byte(e.Body), &m) // core stored a JSON object
	if m == nil {
		m = map[string]stdjson.RawMessage{}
	}
	put := func(k, v string) {
		b, _ := stdjson.Marshal(v)
		m[k] = b
	}
	put("id", e.ID)
	put("type", e.Type)
	put("processed_at", formatTime(e.ProcessedAt))
	return m
}

func (s *Server) appendEvents(w http.ResponseWriter, r *http.Request) error {
	var body wireAppendEvents
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.Events == nil {
		return trove.Errorf(trove.EINVALID, "events is required")
	}
	evs := make([]trove.NewSessionEvent, len(body.Events))
	for i, raw := range body.Events {
		if raw.Kind() != '{' {
			return trove.Errorf(trove.EINVALID, "events[%d] must be a JSON object", i)
		}
		typ, err := decodeEventHead(i, raw)
		if err != nil {
			return err
		}
		evs[i] = trove.NewSessionEvent{Type: typ, Body: string(raw)}
	}
	out, err := s.events.AppendEvents(r.Context(), r.PathValue("session_id"), evs)
	if err != nil {
		return err
	}
	data := make([]map[string]stdjson.RawMessage, len(out))
	for i := range out {
		data[i] = eventToWire(&out[i])
	}
	return s.ok(w, map[string]any{"data": data})
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	p, err := eventListQuery(q, "after_seq")
	if err != nil {
		return err
	}
	if p.AfterSeq, err = parseSeq("after_seq", q.Get("after_seq")); err != nil {
		return err
	}
	page, err := s.events.ListEvents(r.Context(), r.PathValue("session_id"), p)
	if err != nil {
		return err
	}
	out := wirePage[map[string]stdjson.RawMessage]{Data: make([]map[string]stdjson.RawMessage, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = eventToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

// serverEventMembers are the members of an event the server sets or reads
// itself; a member whose name differs from one of them only in case is
// refused, as every body's member names are matched case-sensitively.
var serverEventMembers = []string{"type", "id", "processed_at"}

// decodeEventHead reads events[i]'s type with the same strict decoder
// options as every request body (decodeOptions: case-sensitive names, no
// duplicates, valid UTF-8), and refuses members that differ from the
// server's (serverEventMembers) only in case, so that {"TYPE": …} is
// neither taken for "type" nor kept beside it. Other members are the
// event's own shape and pass unread.
func decodeEventHead(i int, raw jsontext.Value) (string, error) {
	bad := func() error { return trove.Errorf(trove.EINVALID, "events[%d] must be a JSON object", i) }
	dec := jsontext.NewDecoder(bytes.NewReader(raw), decodeOptions)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", bad()
	}
	var typ *string
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return "", trove.Errorf(trove.EINVALID, "events[%d]: %s", i, trove.ErrorMessage(jsonError(err)))
		}
		name := tok.String()
		for _, m := range serverEventMembers {
			if name != m && strings.EqualFold(name, m) {
				return "", trove.Errorf(trove.EINVALID, "events[%d]: unknown member %s; member names are case-sensitive (did you mean %q?)", i, strconv.Quote(truncate(name, 80)), m)
			}
		}
		if name != "type" {
			if err := dec.SkipValue(); err != nil {
				return "", trove.Errorf(trove.EINVALID, "events[%d]: %s", i, trove.ErrorMessage(jsonError(err)))
			}
			continue
		}
		var v string
		if err := json.UnmarshalDecode(dec, &v, decodeOptions); err != nil {
			return "", trove.Errorf(trove.EINVALID, "events[%d].type is required and must be a string", i)
		}
		typ = &v
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return "", trove.Errorf(trove.EINVALID, "events[%d]: %s", i, trove.ErrorMessage(jsonError(err)))
	}
	if typ == nil {
		return "", trove.Errorf(trove.EINVALID, "events[%d].type is required and must be a string", i)
	}
	return *typ, nil
}
