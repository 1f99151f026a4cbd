package core

import (
	"fmt"
	"testing"

	"github.com/trovehq/trove"
)

// TestAuditGapsCapped: a report lists the first trove.MaxAuditGaps gaps
// and counts them all, so its size does not grow with the history.
func TestAuditGapsCapped(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, trove.MaxAuditGaps, trove.MaxAuditGaps + 1, 3 * trove.MaxAuditGaps} {
		out := &trove.AuditReport{}
		for i := range n {
			addGap(out, int64(3*i+1), int64(3*i+2))
		}
		if out.GapsTotal != n || len(out.Gaps) != min(n, trove.MaxAuditGaps) {
			t.Fatalf("%d gaps: %d listed, total %d; want %d listed, total %d", n, len(out.Gaps), out.GapsTotal, min(n, trove.MaxAuditGaps), n)
		}
		if n > 0 && (out.Gaps[0] != [2]int64{1, 2} || out.Gaps[len(out.Gaps)-1] != [2]int64{int64(3*(len(out.Gaps)-1) + 1), int64(3*(len(out.Gaps)-1) + 2)}) {
			t.Fatalf("%d gaps: listed %v … %v, want the first ones in order", n, out.Gaps[0], out.Gaps[len(out.Gaps)-1])
		}
	}
}

// TestParseDiffMoments: a diff cursor's moments and ended sides read back
// as written, and anything else is an invalid cursor.
func TestParseDiffMoments(t *testing.T) {
	for _, c := range []struct {
		s        string
		from, to int64
		ended    sidesEnded
		ok       bool
	}{
		{"3:9", 3, 9, sidesEnded{}, true},
		{"0:12:f", 0, 12, sidesEnded{from: true}, true},
		{"12:0:t", 12, 0, sidesEnded{to: true}, true},
		{"5:6:ft", 5, 6, sidesEnded{true, true}, true},
		{"5", 0, 0, sidesEnded{}, false},
		{"5:6:x", 0, 0, sidesEnded{}, false},
		{"5:6:f:t", 0, 0, sidesEnded{}, false},
		{"-1:6", 0, 0, sidesEnded{}, false},
		{"5:6z", 0, 0, sidesEnded{}, false},
		{"", 0, 0, sidesEnded{}, false},
	} {
		t.Run(c.s, func(t *testing.T) {
			from, to, ended, err := parseDiffMoments(c.s)
			if (err == nil) != c.ok {
				t.Fatalf("parseDiffMoments(%q) error %v, want ok %v", c.s, err, c.ok)
			}
			if c.ok && (from != c.from || to != c.to || ended != c.ended) {
				t.Fatalf("parseDiffMoments(%q) = %d, %d, %+v; want %d, %d, %+v", c.s, from, to, ended, c.from, c.to, c.ended)
			}
			if c.ok && fmt.Sprintf("%d:%d", from, to)+ended.suffix() != c.s {
				t.Fatalf("%q does not read back: %q", c.s, fmt.Sprintf("%d:%d", from, to)+ended.suffix())
			}
		})
	}
}
