package trove

import (
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove/internal/pathrune"
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
		{"/my notes.md", true},
		{"/my\u00a0notes.md", false},      // no-break space looks like a space
		{"/my\u3000notes.md", false},      // ideographic space
		{"/notes.md\u034f", false},        // combining grapheme joiner: invisible
		{"/notes.md\ufe0f", false},        // variation selector: invisible
		{"/\u202egnp.exe", false},         // right-to-left override
		{"/a\u2066b\u2069", false},        // bidi isolate
		{"/\u3164.md", false},             // hangul filler renders blank
		{"/caf\u00e9 \u00e0 la.md", true}, // accented letters and U+0020 are fine
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

// FuzzValidatePath checks that every path ValidatePath accepts really
// follows the rules, so a bad path can never reach a driver.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/a", "/notes/todo.md", "/a//b", "/a/../b", "/café", "/cafe\u0301", "/a\x00", "/\u2028", "/%2e%2e/x", "/a/", "/notes.md\u034f", "/my\u00a0notes.md", "/a\ufe0f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidatePath(p, 1024, 20)
		if err != nil {
			if ErrorCode(err) != EINVALID || ErrorMessage(err) == "" {
				t.Fatalf("ValidatePath(%q) = %v: want an EINVALID with a message", p, err)
			}
			return
		}
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || len(p) > 1024 || !utf8.ValidString(p) {
			t.Fatalf("accepted %q", p)
		}
		for _, seg := range strings.Split(p[1:], "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", p, seg)
			}
		}
		for _, r := range p {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || pathrune.Hidden(r) {
				t.Fatalf("accepted %q with U+%04X", p, r)
			}
		}
		if !PathsOverlap(p, p) || PathsOverlap(p, p+"x") == PathsOverlap(p, p+"/x") {
			t.Fatalf("overlap rules broken for %q", p)
		}
	})
}

func TestActorIDRoundTrip(t *testing.T) {
	for _, typ := range []ActorType{ActorAPI, ActorSession, ActorUser, ActorServiceAccount} {
		a := NewActor(typ, "id_1")
		id, ok := a.ID()
		if !ok || id != "id_1" {
			t.Errorf("NewActor(%s).ID() = %q, %v", typ, id, ok)
		}
		if n := len(a.APIKeyID + a.SessionID + a.UserID + a.ServiceAccountID); n != len("id_1") {
			t.Errorf("NewActor(%s) set %d ID bytes, want only its own field", typ, n)
		}
	}
	if id, ok := NewActor("robot_actor", "x").ID(); ok || id != "" {
		t.Errorf("unknown type: ID() = %q, %v", id, ok)
	}
}

// Store.Clone shares nothing with the original and never has nil Metadata.
func TestStoreClone(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Store{ID: "memstore_1", Name: "n", Metadata: map[string]string{"k": "v"}, ArchivedAt: &at}
	c := s.Clone()
	if c == s || c.ID != s.ID || c.Name != s.Name || c.Metadata["k"] != "v" || !c.ArchivedAt.Equal(at) {
		t.Fatalf("Clone = %+v, want a copy of %+v", c, s)
	}
	c.Metadata["k"] = "changed"
	*c.ArchivedAt = at.Add(time.Hour)
	if s.Metadata["k"] != "v" || !s.ArchivedAt.Equal(at) {
		t.Errorf("changing the clone changed the original: %v %v", s.Metadata, s.ArchivedAt)
	}
	if m := (&Store{}).Clone().Metadata; m == nil {
		t.Error("Clone of a store with nil Metadata has nil Metadata")
	}
}
