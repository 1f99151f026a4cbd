package syncer

import "bytes"

// maxMergeCells bounds the LCS table of one merge (after trimming the common
// prefix and suffix). Larger inputs are reported as not mergeable, which makes
// the engine keep both sides as a conflict copy: slower merges are never
// worth risking a wrong one.
const maxMergeCells = 4 << 20

// Merge3 is a line-based three-way merge (diff3) of two descendants a and b
// of base. It returns the merged bytes and true when every change of a and b
// falls in a region the other side left untouched, or when both sides made
// the same change; it returns nil and false when the sides changed the same
// region differently (a conflict) or when the inputs are too large to diff
// cheaply. Lines keep their terminators, so a missing final newline is a
// change like any other.
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
	ma, ok1 := matchLines(oi, xi)
	mb, ok2 := matchLines(oi, yi)
	if !ok1 || !ok2 {
		return nil, false
	}
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
// matched to in a longest common subsequence, or -1. It returns false when
// the middle part (after trimming the common prefix and suffix) is too large.
func matchLines(o, x []int) ([]int, bool) {
	m := make([]int, len(o))
	for i := range m {
		m[i] = -1
	}
	pre := 0
	for pre < len(o) && pre < len(x) && o[pre] == x[pre] {
		m[pre] = pre
		pre++
	}
	suf := 0
	for suf < len(o)-pre && suf < len(x)-pre && o[len(o)-1-suf] == x[len(x)-1-suf] {
		m[len(o)-1-suf] = len(x) - 1 - suf
		suf++
	}
	a, b := o[pre:len(o)-suf], x[pre:len(x)-suf]
	n, k := len(a), len(b)
	if n == 0 || k == 0 {
		return m, true
	}
	if (n+1)*(k+1) > maxMergeCells {
		return nil, false
	}
	// dp[i][j] = LCS length of a[i:], b[j:].
	w := k + 1
	dp := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := k - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i*w+j] = dp[(i+1)*w+j+1] + 1
			} else if dp[(i+1)*w+j] >= dp[i*w+j+1] {
				dp[i*w+j] = dp[(i+1)*w+j]
			} else {
				dp[i*w+j] = dp[i*w+j+1]
			}
		}
	}
	for i, j := 0, 0; i < n && j < k; {
		switch {
		case a[i] == b[j]:
			m[pre+i] = pre + j
			i, j = i+1, j+1
		case dp[(i+1)*w+j] >= dp[i*w+j+1]:
			i++
		default:
			j++
		}
	}
	return m, true
}
