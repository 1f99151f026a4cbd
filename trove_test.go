package trove

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func TestValidatePath(t *testing.T) {
	long := "/" + strings.Repeat("a", 1024)
	tests := []struct {
		path string
		ok   bool
	}{
		{"/a", true},
		{"/notes/todo.md", true},
		{"/café.md", true},
		{"/cafe\u0301.md", false}, // NFD
		{"/", false},
		{"", false},
		{"a/b", false},
		{"/a/", false},
		{"/a//b", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a\x00b", false},
		{"/a\nb", false},
		{"/a\u200bb", false}, // Cf: zero width space
		{"/a\u2028b", false},
		{"/\xff", false},
		{long, false},
		{"/" + strings.Repeat("a/", 20) + "b", false},
		{"/" + strings.Repeat("a/", 19) + "b", true},
	}
	for _, tt := range tests {
		err := ValidatePath(tt.path, 1024, 20)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", tt.path, err, tt.ok)
		}
		if err != nil && ErrorCode(err) != EINVALID {
			t.Errorf("ValidatePath(%q) code = %s", tt.path, ErrorCode(err))
		}
	}
}

func TestPathsOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/a", "/a", true},
		{"/a", "/a/b", true},
		{"/a/b", "/a", true},
		{"/a", "/ab", false},
		{"/notes", "/notes-archive/x", false},
		{"/a/b", "/a/c", false},
	}
	for _, tt := range tests {
		if got := PathsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("PathsOverlap(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func TestSlug(t *testing.T) {
	tests := map[string]string{
		"Demo Memory":       "demo-memory",
		"User Preferences!": "user-preferences",
		"  --x__Y--  ":      "x-y",
		"日本語":               "store",
		"a1 B2":             "a1-b2",
	}
	for in, want := range tests {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewIDSortsByTime(t *testing.T) {
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 1000 {
		ids = append(ids, NewID(PrefixMemory, base.Add(time.Duration(i/10)*time.Millisecond)))
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("IDs do not sort in creation order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("duplicate ID %s", id)
		}
		seen[id] = true
		if len(id) != len(PrefixMemory)+idLen {
			t.Fatalf("ID %s has length %d", id, len(id))
		}
	}
	later := NewID(PrefixMemory, base.Add(time.Hour))
	if later <= ids[len(ids)-1] {
		t.Fatal("a later ID sorts before an earlier one")
	}
}
