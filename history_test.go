package trove_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

func TestParseMoment(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 500, time.UTC)
	for _, c := range []struct {
		in   string
		want trove.Moment
		code string
	}{
		{"", trove.Moment{}, ""},
		{"now", trove.Moment{}, ""},
		{" 12 ", trove.Moment{Seq: 12}, ""},
		{"memver_0356YAWpGbgOrMwfrHacZ1", trove.Moment{VersionID: "memver_0356YAWpGbgOrMwfrHacZ1"}, ""},
		{"2026-11-30T12:00:00.0000005Z", trove.Moment{Time: &at}, ""},
		{"2026-11-30T13:00:00.0000005+01:00", trove.Moment{Time: &at}, ""},
		{"0", trove.Moment{}, trove.EINVALID},
		{"-3", trove.Moment{}, trove.EINVALID},
		{"yesterday", trove.Moment{}, trove.EINVALID},
		{"2026-11-30", trove.Moment{}, trove.EINVALID},
	} {
		got, err := trove.ParseMoment(c.in)
		if trove.ErrorCode(err) != c.code || (c.code == "" && !cmp.Equal(got, c.want)) {
			t.Errorf("ParseMoment(%q) = %+v, %v; want %+v, code %q", c.in, got, err, c.want, c.code)
		}
	}
}

// FuzzParseMoment: a moment that parses prints (String) to a text that
// parses to the same moment, and bad input is EINVALID, never a panic.
func FuzzParseMoment(f *testing.F) {
	for _, s := range []string{"", "now", "7", "memver_x", "2026-11-30T12:00:00Z", "2026-11-30T12:00:00.123456789+05:30", "-1", "1e3", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := trove.ParseMoment(s)
		if err != nil {
			if trove.ErrorCode(err) != trove.EINVALID {
				t.Fatalf("ParseMoment(%q): %v, want EINVALID", s, err)
			}
			return
		}
		back, err := trove.ParseMoment(m.String())
		if err != nil || !cmp.Equal(back, m) {
			t.Fatalf("ParseMoment(%q) = %+v; its String %q parses to %+v, %v", s, m, m.String(), back, err)
		}
	})
}
