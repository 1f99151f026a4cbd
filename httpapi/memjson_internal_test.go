package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// encodeReflect is what writeJSON sends for v: encoding/json without HTML
// escaping, newline-terminated.
func encodeReflect(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMemoryJSON: the hand-written memory encoder sends the same bytes as
// the reflective one for the strings JSON treats specially.
func TestMemoryJSON(t *testing.T) {
	content := "line\n\t\"quoted\" \\ <html> & \x00\x1f\x7f é 😀 \u2028\u2029 \xff\xfe bad"
	at := time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.FixedZone("X", 3600))
	for _, m := range []*trove.Memory{
		{ID: "mem_1", StoreID: "memstore_1", Path: "/a.md", Content: &content, SizeBytes: len(content), SHA256: "ab", VersionID: "memver_1", CreatedAt: at, UpdatedAt: at.Add(time.Second)},
		{ID: "mem_2", StoreID: "memstore_1", Path: "/\u00e9/b<>.md", SizeBytes: 3, CreatedAt: at.Truncate(time.Second), UpdatedAt: time.Time{}},
		{},
	} {
		got := appendMemoryJSON(nil, m)
		if want := encodeReflect(t, memoryToWire(m)); !bytes.Equal(got, want) {
			t.Errorf("appendMemoryJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// FuzzMemoryJSON: for any strings, sizes and times the hand-written memory
// encoder matches the reflective one byte for byte.
func FuzzMemoryJSON(f *testing.F) {
	f.Add("/a.md", "hello\n", "mem_1", int64(0), int64(1), 5, true)
	f.Add("/\u2028\xff.md", "\x00\"\\\x7f\u2029", "<&>", int64(1764612000123456789), int64(-1), -1, false)
	f.Fuzz(func(t *testing.T, path, content, id string, created, updated int64, size int, hasContent bool) {
		m := &trove.Memory{ID: id, StoreID: content, Path: path, SizeBytes: size, SHA256: path + content,
			VersionID: id, CreatedAt: time.Unix(0, created), UpdatedAt: time.Unix(updated, 0)}
		if hasContent {
			m.Content = &content
		}
		got := appendMemoryJSON(nil, m)
		if want := encodeReflect(t, memoryToWire(m)); !bytes.Equal(got, want) {
			t.Errorf("appendMemoryJSON:\n got %q\nwant %q", got, want)
		}
	})
}
