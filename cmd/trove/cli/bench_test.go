package cli

import (
	"fmt"
	"regexp"
	"testing"
)

// TestBench runs a tiny trove bench with both load generators and both
// cache settings: every line is there, with no errors, a ratio and, for
// the get, its floor (a bare HTTP handler) and the driver's point read,
// the ratio by CPU time per operation.
func TestBench(t *testing.T) {
	code, out, errOut := runTrove(t, "bench", "--n", "20", "--concurrency", "1,2", "--rounds", "2",
		"--client", "lean,net/http", "--auth-cache", "0s,2s", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("bench = %d: %s%s", code, out, errOut)
	}
	var want []string
	for _, c := range []int{1, 2} {
		want = append(want, fmt.Sprintf(`raw write \(1 txn/write\) +%d +\d+ +\S+ +\d+–\d+ *\n`, c), fmt.Sprintf(`raw point read +%d +\d+ +\S+ +\d+–\d+ *\n`, c))
	}
	for _, cl := range []string{"lean", "net/http"} {
		for _, cache := range []string{"auth cache 0s, " + cl, cl} {
			for _, c := range []int{1, 2} {
				perCommit := `1\.0` // one writer: one write per commit
				if c > 1 {
					perCommit = `[12]\.\d`
				}
				for _, op := range []string{"create", "update"} {
					want = append(want, fmt.Sprintf(`http %s \(%s\) +%d +\d+ +\S+ +\S+ +\S+ +%s +0 +\d+\.\d\d× raw write +\d+\.\d\d×–\d+\.\d\d×`, op, regexp.QuoteMeta(cache), c, perCommit))
				}
				for _, op := range []string{"http get", "http floor", "driver point read"} {
					want = append(want, fmt.Sprintf(`%s \(%s\) +%d +\d+ +\S+ +\S+ +\S+ +0 +\d+%% raw read +\d+%%–\d+%% +\d+%% *\n`, op, regexp.QuoteMeta(cache), c))
				}
				want = append(want,
					fmt.Sprintf(`http list \(%s\) +%d +\d+ +\S+ +\S+ +\S+ +0 *\n`, regexp.QuoteMeta(cache), c))
			}
		}
	}
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("bench output lacks a line matching %s", w)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
	for _, args := range [][]string{
		{"--client", "curl"}, {"--rounds", "0"}, {"--n", "0"}, {"--concurrency", "0"}, {"--auth-cache", "-1s"},
	} {
		if code, _, errOut := runTrove(t, append([]string{"bench"}, args...)...); code == 0 || errOut == "" {
			t.Errorf("bench %v = %d %q, want a usage error", args, code, errOut)
		}
	}
}

// TestMemberID: the lean client's ID extraction finds the top-level "id" of
// a memory as the server encodes it, and nothing where there is none.
func TestMemberID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"memory","id":"mem_0ABC","memory_store_id":"memstore_1","memory_version_id":"memver_2"}`, "mem_0ABC"},
		{`{"type":"memory","memory_store_id":"memstore_1"}`, ""},
		{`{"id":"mem_unterminated`, ""},
		{``, ""},
	} {
		if got := memberID([]byte(c.in)); got != c.want {
			t.Errorf("memberID(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}
