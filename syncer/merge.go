package syncer

import (
	"bytes"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// Merge3 is a line-based three-way merge (diff3) of two descendants a and b
// of base. It returns the merged bytes and true when every change of a and b
// falls in a region the other side left untouched, or when both sides made
// the same change; it returns nil and false when the sides changed the same
// region differently (a conflict). Lines keep their terminators, so a
// missing final newline is a change like any other. The line matching of
// each side against base comes from go-udiff's line diff (lcs.DiffLines),
// whose search is bounded: on very different inputs it may match fewer
// lines than it could, which can only turn a clean merge into a conflict
// (both sides kept), never merge wrongly.
func Merge3(base, a, b []byte) ([]byte, bool) {
	switch {
	case bytes.Equal(a, b):
		return a, true
	case bytes.Equal(base, a):
		return b, true
	case bytes.Equal(base, b):
		return a, true
	}
	o, x, y := splitLines(base), splitLines(a), splitLines(b)
	ids := map[string]int{}
	intern := func(ls []string) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	oi, xi, yi := intern(o), intern(x), intern(y)
	ma, mb := matchLines(o, x), matchLines(o, y)
	var out bytes.Buffer
	emit := func(ls []string) {
		for _, l := range ls {
			out.WriteString(l)
		}
	}
	i, ia, ib := 0, 0, 0
	for {
		// Stable run: base lines matched in both sides at the current positions.
		for i < len(o) && ma[i] == ia && mb[i] == ib {
			out.WriteString(o[i])
			i, ia, ib = i+1, ia+1, ib+1
		}
		if i == len(o) && ia == len(x) && ib == len(y) {
			return out.Bytes(), true
		}
		// Unstable chunk up to the next base line matched in both sides.
		j := i
		for j < len(o) && (ma[j] < 0 || mb[j] < 0) {
			j++
		}
		ea, eb := len(x), len(y)
		if j < len(o) {
			ea, eb = ma[j], mb[j]
		}
		oc, ac, bc := oi[i:j], xi[ia:ea], yi[ib:eb]
		switch {
		case equalInts(ac, oc):
			emit(y[ib:eb])
		case equalInts(bc, oc):
			emit(x[ia:ea])
		case equalInts(ac, bc):
			emit(x[ia:ea])
		default:
			return nil, false
		}
		i, ia, ib = j, ea, eb
	}
}

// splitLines splits s after every '\n'; the last line may lack one.
func splitLines(s []byte) []string {
	var out []string
	for len(s) > 0 {
		k := bytes.IndexByte(s, '\n')
		if k < 0 {
			out = append(out, string(s))
			break
		}
		out = append(out, string(s[:k+1]))
		s = s[k+1:]
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// matchLines returns, for each line of o, the index of the line of x it is
// matched to in the common subsequence of o and x that go-udiff's line diff
// finds, or -1 for a line x deleted or replaced.
func matchLines(o, x []string) []int {
	m := make([]int, len(o))
	i, j := 0, 0
	for _, d := range lcs.DiffLines(o, x) {
		for ; i < d.Start; i, j = i+1, j+1 {
			m[i] = j
		}
		for ; i < d.End; i++ {
			m[i] = -1
		}
		j = d.ReplEnd
	}
	for ; i < len(o); i, j = i+1, j+1 {
		m[i] = j
	}
	return m
}
