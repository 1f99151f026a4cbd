package storage_test

import (
	"fmt"
	"testing"

	"github.com/trovehq/trove/storage"
)

// TestVersionAsOfWalk: the drivers walk a page when the other plan would
// read more than WalkRecentPerRow versions per row after a recent moment,
// or WalkOldPerRow before an older one; never without a limit or for one
// memory.
func TestVersionAsOfWalk(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seq, head int64
		limit     int
		memory    string
		want      bool
	}{
		{seq: 990, head: 1000, limit: 10, want: false},              // 10 after, recent: 1 per row
		{seq: 959, head: 1000, limit: 10, want: true},               // 41 after > 4 × 10
		{seq: 960, head: 1000, limit: 10, want: false},              // 40 after: not more than 4 × 10
		{seq: 320, head: 1000, limit: 10, want: false},              // older half, 320 up to S: not more than 32 × 10
		{seq: 321, head: 1000, limit: 10, want: true},               // 321 > 32 × 10
		{seq: 500, head: 1000, limit: 10, want: true},               // the middle counts as recent: 500 after > 40
		{seq: 500, head: 1000, limit: 0, want: false},               // no limit: the direct plans
		{seq: 500, head: 1000, limit: 10, memory: "m", want: false}, // one memory: a probe
		{seq: 0, head: 1000, limit: 1, want: false},                 // before the first version
		{seq: 1000, head: 1000, limit: 1, want: false},              // now
	} {
		t.Run(fmt.Sprintf("S%d-head%d-limit%d%s", c.seq, c.head, c.limit, c.memory), func(t *testing.T) {
			p := storage.VersionAsOfParams{Seq: c.seq, Limit: c.limit, MemoryID: c.memory}
			if got := p.Walk(c.head); got != c.want {
				t.Fatalf("Walk = %v, want %v", got, c.want)
			}
		})
	}
}
