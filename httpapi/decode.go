package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
)

var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decodeBody reads the JSON object in r's body into dst strictly: unknown
// fields, trailing data, wrong types, invalid JSON or invalid UTF-8 are
// EINVALID; an empty body is EINVALID unless allowEmpty; a body over the
// server's limit is ETOOLARGE.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) error {
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 1<<20 {
			bodyBufs.Put(buf)
		}
	}()
	if r.ContentLength > s.maxBody {
		return tooLarge(s.maxBody)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(s.maxBody)
		}
		return trove.Errorf(trove.EINVALID, "reading the request body failed")
	}
	body := buf.Bytes()
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return trove.Errorf(trove.EINVALID, "a JSON request body is required")
	}
	if !utf8.Valid(body) {
		return trove.Errorf(trove.EINVALID, "the request body must be valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return trove.Errorf(trove.EINVALID, "the request body must hold a single JSON object")
	}
	return nil
}

func tooLarge(limit int64) error {
	return trove.Errorf(trove.ETOOLARGE, "the request body exceeds the limit of %d bytes", limit)
}

// jsonError turns a decoding error into a precise EINVALID.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return trove.Errorf(trove.EINVALID, "the request body is not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	case errors.As(err, &te):
		if te.Field == "" {
			return trove.Errorf(trove.EINVALID, "the request body must be a JSON object, not %s", te.Value)
		}
		return trove.Errorf(trove.EINVALID, "field %q must be %s, not %s", te.Field, jsonTypeName(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return trove.Errorf(trove.EINVALID, "the request body is not valid JSON: unexpected end of input")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return trove.Errorf(trove.EINVALID, "unknown field %s in the request body", f)
	}
	return trove.Errorf(trove.EINVALID, "the request body is not valid: %s", strings.TrimPrefix(msg, "json: "))
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
