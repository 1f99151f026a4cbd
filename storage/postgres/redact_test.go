package postgres

import (
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"userinfo", "postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"no password", "postgres://postgres@127.0.0.1/test", "postgres://postgres@127.0.0.1/test"},
		{"no user", "postgresql://h/db", "postgresql://h/db"},
		{"query password", "postgres://u@h/db?password=secret", "postgres://u@h/db?password=xxxxx"},
		{"query password among others", "postgres://u@h/db?sslmode=disable&password=secret&x=1", "postgres://u@h/db?sslmode=disable&password=xxxxx&x=1"},
		{"query upper case", "postgres://u@h/db?PASSWORD=secret", "postgres://u@h/db?PASSWORD=xxxxx"},
		{"query sslpassword", "postgres://u@h/db?sslpassword=secret", "postgres://u@h/db?sslpassword=xxxxx"},
		{"both", "postgres://u:secret@h/db?password=secret", "postgres://u:xxxxx@h/db?password=xxxxx"},
		{"at in password", "postgres://u:se@cret@h/db", "postgres://u:xxxxx@h/db"},
		{"keyword", "host=h user=u password=secret dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"keyword spaced", "host=h password = secret dbname=db", "host=h password = xxxxx dbname=db"},
		{"keyword quoted", `host=h password='se cr\'et' dbname=db`, "host=h password=xxxxx dbname=db"},
		{"keyword unterminated quote", `host=h password='secret`, "host=h password=xxxxx"},
		{"nothing secret", "host=h dbname=db", "host=h dbname=db"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RedactDSN(tc.in)
			if got != tc.want {
				t.Errorf("RedactDSN(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if strings.Contains(got, "secret") || strings.Contains(got, "cret") {
				t.Errorf("RedactDSN(%q) = %q still holds the password", tc.in, got)
			}
		})
	}
}

func FuzzRedactDSN(f *testing.F) {
	f.Add("postgres://u:p@h/db?password=q")
	f.Add("host=h password='a b'")
	f.Fuzz(func(t *testing.T, s string) {
		// Redacting twice changes nothing more: the output holds no
		// password left to hide.
		once := RedactDSN(s)
		if twice := RedactDSN(once); twice != once {
			t.Errorf("RedactDSN not idempotent: %q → %q → %q", s, once, twice)
		}
	})
}
