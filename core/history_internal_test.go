package core

import (
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
