package syncer

import (
	"strconv"
	"strings"
	"testing"
)

func TestMerge3(t *testing.T) {
	tests := []struct {
		name         string
		base, a, b   string
		want         string
		wantConflict bool
	}{
		{name: "only a changed", base: "1\n2\n3\n", a: "1\nX\n3\n", b: "1\n2\n3\n", want: "1\nX\n3\n"},
		{name: "only b changed", base: "1\n2\n3\n", a: "1\n2\n3\n", b: "1\n2\nY\n", want: "1\n2\nY\n"},
		{name: "disjoint edits", base: "1\n2\n3\n4\n5\n", a: "A\n2\n3\n4\n5\n", b: "1\n2\n3\n4\nB\n", want: "A\n2\n3\n4\nB\n"},
		{name: "insert in different places", base: "h1\nx\nh2\ny\n", a: "h1\nx\nnew-a\nh2\ny\n", b: "h1\nx\nh2\ny\nnew-b\n", want: "h1\nx\nnew-a\nh2\ny\nnew-b\n"},
		{name: "same change both sides", base: "1\n2\n3\n", a: "1\nZ\n3\n", b: "1\nZ\n3\n", want: "1\nZ\n3\n"},
		{name: "same change plus another", base: "1\n2\n3\n4\n", a: "1\nZ\n3\n4\n", b: "1\nZ\n3\nW\n", want: "1\nZ\n3\nW\n"},
		{name: "delete vs edit elsewhere", base: "1\n2\n3\n4\n", a: "1\n3\n4\n", b: "1\n2\n3\nW\n", want: "1\n3\nW\n"},
		{name: "overlapping edits conflict", base: "1\n2\n3\n", a: "1\nA\n3\n", b: "1\nB\n3\n", wantConflict: true},
		{name: "both append at end conflict", base: "1\n", a: "1\na\n", b: "1\nb\n", wantConflict: true},
		{name: "missing final newline is a change", base: "1\n2", a: "1\n2\n", b: "0\n1\n2", want: "0\n1\n2\n"},
		{name: "empty base two-way", base: "", a: "x\n", b: "y\n", wantConflict: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Merge3([]byte(tc.base), []byte(tc.a), []byte(tc.b))
			if ok == tc.wantConflict {
				t.Fatalf("clean = %v, want %v (got %q)", ok, !tc.wantConflict, got)
			}
			if ok && string(got) != tc.want {
				t.Errorf("merge = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMerge3Symmetric: merging (a, b) and (b, a) agree on cleanliness and,
// for clean merges, on the result.
func TestMerge3Symmetric(t *testing.T) {
	base := strings.Repeat("line\n", 50)
	a := strings.Replace(base, "line\n", "first\n", 1)
	b := base + "tail\n"
	x, ok1 := Merge3([]byte(base), []byte(a), []byte(b))
	y, ok2 := Merge3([]byte(base), []byte(b), []byte(a))
	if !ok1 || !ok2 || string(x) != string(y) {
		t.Fatalf("asymmetric merge: %v %v\n%q\n%q", ok1, ok2, x, y)
	}
	if !strings.HasPrefix(string(x), "first\n") || !strings.HasSuffix(string(x), "tail\n") {
		t.Fatalf("merge lost a change: %q", x)
	}
}

func TestMerge3TooLarge(t *testing.T) {
	var a, b strings.Builder
	for i := range 3000 {
		a.WriteString("a" + string(rune('0'+i%10)) + "\n")
		b.WriteString("b" + string(rune('0'+i%7)) + "\n")
	}
	if _, ok := Merge3([]byte("base\n"), []byte(a.String()), []byte(b.String())); ok {
		t.Fatal("an unmergeable large input merged cleanly")
	}
}

func FuzzMerge3(f *testing.F) {
	f.Add("1\n2\n3\n", "1\nA\n3\n", "1\n2\nB\n")
	f.Fuzz(func(t *testing.T, base, a, b string) {
		m, ok := Merge3([]byte(base), []byte(a), []byte(b))
		if !ok {
			return
		}
		// A clean merge equals a side whenever the other side is unchanged.
		if a == base && string(m) != b || b == base && string(m) != a {
			t.Fatalf("merge(%q,%q,%q) = %q", base, a, b, m)
		}
	})
}

// TestMerge3Large: edits far apart in a long text merge cleanly (a
// quadratic LCS table for a's span from line 100 to 4900 would be 23
// million cells).
func TestMerge3Large(t *testing.T) {
	lines := make([]string, 5000)
	for i := range lines {
		lines[i] = "line " + strconv.Itoa(i) + "\n"
	}
	base := strings.Join(lines, "")
	// a changes both ends, b the middle.
	a := strings.Replace(base, "line 100\n", "line one hundred\n", 1)
	a = strings.Replace(a, "line 4900\n", "line 4900 changed\n", 1)
	b := strings.Replace(base, "line 2500\n", "line 2500 changed\n", 1)
	want := strings.Replace(a, "line 2500\n", "line 2500 changed\n", 1)
	got, ok := Merge3([]byte(base), []byte(a), []byte(b))
	if !ok || string(got) != want {
		t.Fatalf("clean = %v; merge differs from both edits applied", ok)
	}
}
