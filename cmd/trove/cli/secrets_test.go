package cli

import (
	"net/url"
	"strings"
	"testing"

	"github.com/trovehq/trove/internal/pgtest"
)

// TestDatabasePasswordNeverPrinted runs the real commands that print or log
// where the database is (status, serve's start-up lines and logs, the
// errors of a malformed --database) with a password planted in every form a
// user may write it (URL user information, ?password= in the query, a
// keyword DSN) and greps all their output for it.
func TestDatabasePasswordNeverPrinted(t *testing.T) {
	const planted = "Pl4ntedS3cret"
	base := pgtest.SchemaURL(t) // the test server trusts loopback: a password is accepted and ignored
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	withUserinfo := *u
	withUserinfo.User = url.UserPassword(u.User.Username(), planted)
	withQuery := *u
	q := withQuery.Query()
	q.Set("password", planted)
	withQuery.RawQuery = q.Encode()
	keyword := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() + " dbname=" + strings.TrimPrefix(u.Path, "/") + " password=" + planted

	check := func(t *testing.T, what string, outputs ...string) {
		t.Helper()
		for _, o := range outputs {
			if strings.Contains(o, planted) {
				t.Errorf("%s printed the password:\n%s", what, o)
			}
		}
	}
	for _, tc := range []struct{ name, dsn string }{
		{"userinfo", withUserinfo.String()},
		{"query", withQuery.String()},
		{"keyword", keyword},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TROVE_URL", "")
			t.Setenv("TROVE_API_KEY", "")
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			code, out, errOut := runTrove(t, "status", "--database", tc.dsn)
			check(t, "trove status", out, errOut)
			if tc.name != "keyword" && (code != 0 || !strings.Contains(out, "xxxxx")) {
				t.Errorf("status = %d, want 0 and the redacted URL:\n%s%s", code, out, errOut)
			}
			code, out, errOut = runTrove(t, "keys", "create", "--database", tc.dsn, "--workspace", "wrkspc_secrets")
			check(t, "trove keys create", out, errOut)
			if tc.name == "keyword" {
				// Not a URL: refused, saying what it got without the password.
				if code == 0 || !strings.Contains(errOut, "password=xxxxx") {
					t.Errorf("keys create with a keyword DSN = %d, want an error quoting it redacted:\n%s%s", code, out, errOut)
				}
				return
			}
			if code != 0 {
				t.Fatalf("keys create = %d:\n%s%s", code, out, errOut)
			}
			s := startServe(t, "--database", tc.dsn, "--data", t.TempDir())
			s.stop(t)
			check(t, "trove serve", s.stdout, s.stderr.String())
			if !strings.Contains(s.stdout, "xxxxx") {
				t.Errorf("serve's start-up line does not name the redacted database:\n%s", s.stdout)
			}
		})
	}
}
