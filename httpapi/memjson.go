package httpapi

import (
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
)

// appendMemoryJSON appends m as the memory object, byte for byte what
// writeJSON's encoder makes of memoryToWire(m) (encoding/json without HTML
// escaping, then a newline; FuzzMemoryJSON checks), without reflection or a
// wireMemory value: the get's hot path.
func appendMemoryJSON(dst []byte, m *trove.Memory) []byte {
	dst = append(dst, `{"type":"memory","id":`...)
	dst = appendJSONString(dst, m.ID)
	dst = append(dst, `,"memory_store_id":`...)
	dst = appendJSONString(dst, m.StoreID)
	dst = append(dst, `,"path":`...)
	dst = appendJSONString(dst, m.Path)
	dst = append(dst, `,"content":`...)
	if m.Content == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendJSONString(dst, *m.Content)
	}
	dst = append(dst, `,"content_size_bytes":`...)
	dst = strconv.AppendInt(dst, int64(m.SizeBytes), 10)
	dst = append(dst, `,"content_sha256":`...)
	dst = appendJSONString(dst, m.SHA256)
	dst = append(dst, `,"memory_version_id":`...)
	dst = appendJSONString(dst, m.VersionID)
	dst = append(dst, `,"created_at":"`...)
	dst = m.CreatedAt.UTC().AppendFormat(dst, time.RFC3339Nano) // digits, letters, '-', ':', '.', '+': nothing to escape
	dst = append(dst, `","updated_at":"`...)
	dst = m.UpdatedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, "\"}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json does
// with HTML escaping off: '"' and '\\' escaped, control characters as \b,
// \f, \n, \r, \t or \u00XX, invalid UTF-8 bytes as \ufffd, U+2028 and
// U+2029 as \u2028 and \u2029.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// writeMemory sends m as a 200 memory object (what s.ok(w,
// memoryToWire(m)) sends, without the reflective encoder).
func (s *Server) writeMemory(w http.ResponseWriter, m *trove.Memory) error {
	b := jsonBufs.Get().(*jsonBuf)
	b.buf.Reset()
	b.buf.Write(appendMemoryJSON(b.buf.AvailableBuffer(), m))
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	if rec, ok := w.(*recorder); ok {
		rec.length[0] = strconv.Itoa(b.buf.Len())
		h["Content-Length"] = rec.length[:]
	} else {
		h["Content-Length"] = []string{strconv.Itoa(b.buf.Len())}
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.buf.Bytes())
	if b.buf.Cap() <= 1<<20 {
		jsonBufs.Put(b)
	}
	return nil
}
