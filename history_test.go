package trove_test

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use (TZ=Europe/Paris), wherever they run

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

func TestParseExactMoment(t *testing.T) {
	t.Parallel()
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
		// The forms that depend on the reader's clock or zone are not
		// exact.
		{"2026-11-30", trove.Moment{}, trove.EINVALID},
		{"5m", trove.Moment{}, trove.EINVALID},
		{"2026-11-30 12:00:00", trove.Moment{}, trove.EINVALID},
	} {
		got, err := trove.ParseExactMoment(c.in)
		if trove.ErrorCode(err) != c.code || (c.code == "" && !cmp.Equal(got, c.want)) {
			t.Errorf("ParseExactMoment(%q) = %+v, %v; want %+v, code %q", c.in, got, err, c.want, c.code)
		}
	}
}

func TestParseMoment(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 4, 52, 50, 123456000, time.UTC)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	// A zone one hour ahead of UTC in December, without the tz database.
	plus1 := time.FixedZone("UTC+1", 3600)
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) *time.Time {
		t := time.Date(y, mo, d, h, mi, s, ns, time.UTC)
		return &t
	}
	for _, c := range []struct {
		name string
		in   string
		loc  *time.Location
		want trove.Moment
		code string
	}{
		{"empty is now", "", plus1, trove.Moment{}, ""},
		{"now", " now ", plus1, trove.Moment{}, ""},
		{"version number", "42", plus1, trove.Moment{Seq: 42}, ""},
		{"version ID", "memver_0356YAWpGbgOrMwfrHacZ1", plus1, trove.Moment{VersionID: "memver_0356YAWpGbgOrMwfrHacZ1"}, ""},
		{"RFC 3339 ignores the zone", "2026-12-02T03:52:50Z", plus1, trove.Moment{Time: utc(2026, 12, 2, 3, 52, 50, 0)}, ""},
		{"RFC 3339 with an offset", "2026-12-02T03:52:50+02:00", plus1, trove.Moment{Time: utc(2026, 12, 2, 1, 52, 50, 0)}, ""},
		{"RFC 3339 with a space", "2026-12-02 03:52:50Z", plus1, trove.Moment{Time: utc(2026, 12, 2, 3, 52, 50, 0)}, ""},
		{"offset without seconds", "2026-12-02T03:52+01:00", time.UTC, trove.Moment{Time: utc(2026, 12, 2, 2, 52, 0, 0)}, ""},
		{"minutes ago", "5m", plus1, trove.Moment{Time: utc(2026, 12, 2, 4, 47, 50, 123456000)}, ""},
		{"hours ago", "2h", plus1, trove.Moment{Time: utc(2026, 12, 2, 2, 52, 50, 123456000)}, ""},
		{"hours ago, said so", "2h ago", plus1, trove.Moment{Time: utc(2026, 12, 2, 2, 52, 50, 123456000)}, ""},
		{"days ago", "3d", plus1, trove.Moment{Time: utc(2026, 11, 29, 4, 52, 50, 123456000)}, ""},
		{"a week ago", "1w ago", plus1, trove.Moment{Time: utc(2026, 11, 25, 4, 52, 50, 123456000)}, ""},
		{"compound", "1d12h30m5s", plus1, trove.Moment{Time: utc(2026, 11, 30, 16, 22, 45, 123456000)}, ""},
		{"zero ago is now's time", "0s", plus1, trove.Moment{Time: utc(2026, 12, 2, 4, 52, 50, 123456000)}, ""},
		{"date: start of the day in the zone", "2026-12-02", plus1, trove.Moment{Time: utc(2026, 12, 1, 23, 0, 0, 0)}, ""},
		{"date in UTC", "2026-12-02", time.UTC, trove.Moment{Time: utc(2026, 12, 2, 0, 0, 0, 0)}, ""},
		{"date, nil zone is UTC", "2026-12-02", nil, trove.Moment{Time: utc(2026, 12, 2, 0, 0, 0, 0)}, ""},
		{"local date-time", "2026-12-02 03:52:50", plus1, trove.Moment{Time: utc(2026, 12, 2, 2, 52, 50, 0)}, ""},
		{"local date-time with T", "2026-12-02T03:52", plus1, trove.Moment{Time: utc(2026, 12, 2, 2, 52, 0, 0)}, ""},
		{"local date-time, fraction", "2026-12-02T03:52:50.25", plus1, trove.Moment{Time: utc(2026, 12, 2, 2, 52, 50, 250000000)}, ""},
		{"local date-time in summer time", "2026-07-01 12:00", paris, trove.Moment{Time: utc(2026, 7, 1, 10, 0, 0, 0)}, ""},
		{"zero version number", "0", plus1, trove.Moment{}, trove.EINVALID},
		{"negative", "-3", plus1, trove.Moment{}, trove.EINVALID},
		{"a word", "yesterday", plus1, trove.Moment{}, trove.EINVALID},
		{"unknown unit", "5y", plus1, trove.Moment{}, trove.EINVALID},
		{"number then nothing", "5m3", plus1, trove.Moment{}, trove.EINVALID},
		{"ago alone", "ago", plus1, trove.Moment{}, trove.EINVALID},
		{"too far back", "3651d", plus1, trove.Moment{}, trove.EINVALID},
		{"too far back, added up", "3650d1s", plus1, trove.Moment{}, trove.EINVALID},
		{"overflowing number", "99999999999999999999h", plus1, trove.Moment{}, trove.EINVALID},
		{"bad date", "2026-13-02", plus1, trove.Moment{}, trove.EINVALID},
		{"bad time", "2026-12-02 25:00", plus1, trove.Moment{}, trove.EINVALID},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := trove.ParseMoment(c.in, now, c.loc)
			if trove.ErrorCode(err) != c.code || (c.code == "" && !cmp.Equal(got, c.want)) {
				t.Errorf("ParseMoment(%q) = %+v, %v; want %+v, code %q", c.in, got, err, c.want, c.code)
			}
			if got.Time != nil && got.Time.Location() != time.UTC {
				t.Errorf("ParseMoment(%q): time in %v, want UTC", c.in, got.Time.Location())
			}
		})
	}
}

// FuzzParseMoment: a moment that parses prints (String) to a text that
// parses to the same moment, exactly and whatever the clock and zone; the
// exact forms mean the same to ParseMoment in any zone; bad input is
// EINVALID, never a panic.
func FuzzParseMoment(f *testing.F) {
	for _, s := range []string{"", "now", "7", "memver_x", "2026-11-30T12:00:00Z", "2026-11-30T12:00:00.123456789+05:30", "-1", "1e3", "99999999999999999999",
		"5m", "2h ago", "3d", "1w2d3h4m5s", "2026-12-02", "2026-12-02 03:52:50", "2026-12-02T03:52", "2026-12-02 03:52:50Z"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 4, 52, 50, 0, time.UTC)
	plus1 := time.FixedZone("UTC+1", 3600)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := trove.ParseMoment(s, now, plus1)
		if err != nil {
			if trove.ErrorCode(err) != trove.EINVALID {
				t.Fatalf("ParseMoment(%q): %v, want EINVALID", s, err)
			}
			if _, err := trove.ParseExactMoment(s); err == nil {
				t.Fatalf("ParseExactMoment(%q) reads what ParseMoment refuses", s)
			}
			return
		}
		for _, parse := range []func(string) (trove.Moment, error){
			trove.ParseExactMoment,
			func(s string) (trove.Moment, error) { return trove.ParseMoment(s, now.Add(time.Hour), time.UTC) },
		} {
			back, err := parse(m.String())
			if err != nil || !cmp.Equal(back, m) {
				t.Fatalf("ParseMoment(%q) = %+v; its String %q parses to %+v, %v", s, m, m.String(), back, err)
			}
		}
		if exact, err := trove.ParseExactMoment(s); err == nil && !cmp.Equal(exact, m) {
			t.Fatalf("ParseExactMoment(%q) = %+v, ParseMoment = %+v", s, exact, m)
		}
	})
}
