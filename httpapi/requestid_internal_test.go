package httpapi

import (
	"regexp"
	"testing"
	"time"
)

// TestNewRequestID: "req_" and 22 base62 characters, distinct, sorting by
// time across milliseconds.
func TestNewRequestID(t *testing.T) {
	re := regexp.MustCompile(`^req_[0-9A-Za-z]{22}$`)
	base := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	prev := ""
	for i := range 3000 {
		id := newRequestID(base.Add(time.Duration(i/3) * time.Millisecond))
		if !re.MatchString(id) {
			t.Fatalf("request id %q: want req_ and 22 base62 characters", id)
		}
		if seen[id] {
			t.Fatalf("request id %q made twice", id)
		}
		seen[id] = true
		if i%3 == 0 && id <= prev {
			t.Fatalf("request id %q of a later millisecond sorts before %q", id, prev)
		}
		prev = id
	}
	// The largest millisecond the 48 bits hold still fits the 9 digits.
	if id := newRequestID(time.UnixMilli(1<<48 - 1)); !re.MatchString(id) {
		t.Fatalf("request id %q at the end of the 48-bit range", id)
	}
}
