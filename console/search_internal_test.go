package console

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

func TestSegments(t *testing.T) {
	r := func(a, b int) trove.TextRange { return trove.TextRange{Start: a, End: b} }
	for _, c := range []struct {
		name string
		s    string
		rs   []trove.TextRange
		want []segment
	}{
		{"none", "a <b>", nil, []segment{{Text: "a <b>"}}},
		{"empty", "", nil, nil},
		{"middle", "x <i>kube</i> y", []trove.TextRange{r(5, 9)}, []segment{{Text: "x <i>"}, {Text: "kube", Mark: true}, {Text: "</i> y"}}},
		{"ends", "ab cd", []trove.TextRange{r(0, 2), r(3, 5)}, []segment{{Text: "ab", Mark: true}, {Text: " "}, {Text: "cd", Mark: true}}},
		{"out of bounds stops marking", "ab cd", []trove.TextRange{r(0, 2), r(3, 9)}, []segment{{Text: "ab", Mark: true}, {Text: " cd"}}},
		{"overlap stops marking", "ab cd", []trove.TextRange{r(0, 3), r(2, 5)}, []segment{{Text: "ab ", Mark: true}, {Text: "cd"}}},
		{"empty range stops marking", "ab", []trove.TextRange{r(1, 1)}, []segment{{Text: "ab"}}},
		{"inside a character stops marking", "é x", []trove.TextRange{r(1, 3)}, []segment{{Text: "é x"}}},
		{"multibyte", "é kube", []trove.TextRange{r(3, 7)}, []segment{{Text: "é "}, {Text: "kube", Mark: true}}},
	} {
		if diff := cmp.Diff(c.want, segments(c.s, c.rs)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, diff)
		}
	}
}

func TestParseAt(t *testing.T) {
	now := time.Date(2026, 12, 2, 4, 52, 50, 0, time.UTC)
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"12", "12", true},
		{"memver_abc", "memver_abc", true},
		{"2026-01-02T15:04:05Z", "2026-01-02T15:04:05Z", true},
		{"2026-01-02T15:04", "2026-01-02T15:04:00Z", true}, // a datetime-local value, UTC
		{"2026-01-02 15:04:05", "2026-01-02T15:04:05Z", true},
		{"2026-01-02T15:04+01:00", "2026-01-02T14:04:00Z", true}, // an explicit offset
		{"2026-01-02", "2026-01-02T00:00:00Z", true},
		{"2h", "2026-12-02T02:52:50Z", true}, // ago, by the server's clock
		{"3d ago", "2026-11-29T04:52:50Z", true},
		{"yesterday", "", false},
		{"-3", "", false},
	} {
		m, err := parseAt(c.in, now)
		if (err == nil) != c.ok {
			t.Errorf("parseAt(%q): error %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if err == nil && m.String() != c.want {
			t.Errorf("parseAt(%q) = %q, want %q", c.in, m.String(), c.want)
		}
		if err != nil && trove.ErrorCode(err) != trove.EINVALID {
			t.Errorf("parseAt(%q): %v, want EINVALID", c.in, err)
		}
	}
}
