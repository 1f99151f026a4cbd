package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decodeOptions make request bodies strict: member names match the Go
// struct's tags exactly (case-sensitively), and unknown or duplicate
// members, invalid UTF-8 and trailing data are errors (the last three are
// go-json-experiment's defaults, stated here so they do not drift).
var decodeOptions = json.JoinOptions(
	json.RejectUnknownMembers(true),
	json.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// decodeBody reads the JSON object in r's body into dst strictly: anything
// but one JSON object (null included), member names that differ from the
// API's in any way (case included), unknown or duplicate members, wrong
// types, invalid JSON or invalid UTF-8 are EINVALID; an empty body is
// EINVALID unless allowEmpty. A body declared (Content-Length) over the
// server's limit is ETOOLARGE before any of it is read, one that turns out
// over it is ETOOLARGE as soon as the limit is passed, and one that does
// not arrive within Timeouts.Body is a 408.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) error {
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 1<<20 {
			bodyBufs.Put(buf)
		}
	}()
	if r.ContentLength > s.maxBody {
		refuseBody(w, r)
		return tooLarge(s.maxBody)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			refuseBody(w, r)
			return tooLarge(s.maxBody)
		case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
			return &statusRefusal{status: http.StatusRequestTimeout, typ: "timeout_error", retry: "true",
				msg: fmt.Sprintf("the request body did not arrive within %s", s.limits.Body)}
		}
		return trove.Errorf(trove.EINVALID, "reading the request body failed")
	}
	// The body is in: lift its deadline (see ServeHTTP), and start the
	// request's own (Timeouts.Request).
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	s.narrowDeadline(r)
	body := buf.Bytes()
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		if allowEmpty {
			return nil
		}
		return trove.Errorf(trove.EINVALID, "a JSON request body is required")
	}
	if !utf8.Valid(body) {
		return trove.Errorf(trove.EINVALID, "the request body must be valid UTF-8")
	}
	if trimmed[0] != '{' {
		if k := jsontext.Value(trimmed).Kind(); k != jsontext.KindInvalid && jsontext.Value(trimmed).IsValid() {
			return trove.Errorf(trove.EINVALID, "the request body must be a JSON object, not %s", kindName(k))
		}
	}
	if err := json.Unmarshal(body, dst, decodeOptions); err != nil {
		return jsonError(err)
	}
	return nil
}

func tooLarge(limit int64) error {
	return trove.Errorf(trove.ETOOLARGE, "the request body exceeds the limit of %d bytes", limit)
}

// jsonError turns a decoding error into a precise EINVALID, naming the
// member at fault by its JSON pointer.
func jsonError(err error) error {
	var se *jsontext.SyntacticError
	var me *json.SemanticError
	switch {
	case errors.As(err, &se):
		switch {
		case errors.Is(se.Err, jsontext.ErrDuplicateName):
			return trove.Errorf(trove.EINVALID, "duplicate field %s in the request body", memberName(se.JSONPointer))
		case errors.Is(se.Err, io.ErrUnexpectedEOF):
			return trove.Errorf(trove.EINVALID, "the request body is not valid JSON: unexpected end of input")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return trove.Errorf(trove.EINVALID, "the request body is not valid JSON: unexpected end of input")
		}
		msg := strings.TrimPrefix(se.Err.Error(), "jsontext: ")
		if strings.Contains(msg, "after top-level value") {
			return trove.Errorf(trove.EINVALID, "the request body must hold a single JSON object")
		}
		return trove.Errorf(trove.EINVALID, "the request body is not valid JSON: %s (at byte %d)", msg, se.ByteOffset)
	case errors.As(err, &me):
		if errors.Is(me.Err, json.ErrUnknownName) {
			return trove.Errorf(trove.EINVALID, "unknown field %s in the request body", memberName(me.JSONPointer))
		}
		if me.JSONPointer == "" {
			return trove.Errorf(trove.EINVALID, "the request body must be a JSON object, not %s", kindName(me.JSONKind))
		}
		if me.GoType != nil {
			return trove.Errorf(trove.EINVALID, "field %s must be %s, not %s", memberName(me.JSONPointer), jsonTypeName(me.GoType.Kind().String()), kindName(me.JSONKind))
		}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return trove.Errorf(trove.EINVALID, "the request body is not valid JSON: unexpected end of input")
	}
	return trove.Errorf(trove.EINVALID, "the request body is not valid: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// memberName renders a JSON pointer into the request body as the error
// messages name fields: "name", or "precondition.type" for a nested one.
func memberName(p jsontext.Pointer) string {
	var parts []string
	for tok := range p.Tokens() {
		parts = append(parts, tok)
	}
	return strconv.Quote(truncate(strings.Join(parts, "."), 80))
}

// kindName is how the error messages name a JSON value's kind.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "invalid JSON"
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "map", "struct", "ptr":
		return "an object or null"
	case "slice":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// metadataPatch decodes an update's metadata member: a string sets a key,
// null deletes it (a nil value), anything else is EINVALID naming the key.
func metadataPatch(m map[string]jsontext.Value) (map[string]*string, error) {
	md := make(map[string]*string, len(m))
	for k, v := range m {
		if v.Kind() == 'n' {
			md[k] = nil
			continue
		}
		var sv string
		if err := json.Unmarshal(v, &sv); err != nil {
			return nil, trove.Errorf(trove.EINVALID, "metadata values must be strings or null (key %q)", k)
		}
		md[k] = &sv
	}
	return md, nil
}

// Query parameters. Unknown ones are ignored; bad values of known ones are
// EINVALID.

// queryLimit parses limit: 0 when it is absent (the service's default),
// otherwise a positive integer. The range and the view=full cap are core's
// rules and are applied there.
func queryLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, trove.Errorf(trove.EINVALID, "limit must be a positive integer, got %q", v)
	}
	return n, nil
}

func queryBool(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	switch v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, trove.Errorf(trove.EINVALID, "%s must be true or false, got %q", name, v)
}

func queryTimeRange(q url.Values) (trove.TimeRange, error) {
	var tr trove.TimeRange
	for _, b := range []struct {
		name string
		dst  **time.Time
	}{{"created_at[gte]", &tr.GTE}, {"created_at[lte]", &tr.LTE}} {
		v := q.Get(b.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return tr, trove.Errorf(trove.EINVALID, "%s must be an RFC 3339 timestamp, got %q", b.name, v)
		}
		t = t.UTC()
		*b.dst = &t
	}
	return tr, nil
}

// queryDepth parses the depth query parameter (absent: 0). Only the
// syntax is checked here: core refuses integers other than 0 and 1.
func queryDepth(q url.Values) (int, error) {
	v := q.Get("depth")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, trove.Errorf(trove.EINVALID, "depth must be 0 or 1, got %q", v)
	}
	return n, nil
}

func queryOperation(q url.Values) (trove.Operation, error) {
	v := q.Get("operation")
	switch trove.Operation(v) {
	case "", trove.OpCreated, trove.OpModified, trove.OpDeleted:
		return trove.Operation(v), nil
	}
	return "", trove.Errorf(trove.EINVALID, "operation must be created, modified or deleted, got %q", v)
}

// validSHA256 reports whether h is 64 lowercase hex digits.
func validSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func shaError(field, v string) error {
	return trove.Errorf(trove.EINVALID, "%s must be 64 lowercase hexadecimal characters, got %s", field, fmt.Sprintf("%q", truncate(v, 80)))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
