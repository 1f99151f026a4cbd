package postgres

import (
	"regexp"
	"strings"
)

// redacted replaces every secret RedactDSN removes.
const redacted = "xxxxx"

// secretParam matches a secret parameter in a URL query (password=X,
// &sslpassword=X) or in a keyword DSN (password=X, password = 'a b\'c'),
// whatever the case of its name; bytes glued to the end of a quoted value
// are hidden with it, so that redacting twice gives what redacting once did.
var secretParam = regexp.MustCompile(`(?i)\b((?:ssl)?password)(\s*=\s*)('(?:[^'\\]|\\.)*'?[^\s&]*|[^\s&]*)`)

// RedactDSN returns a PostgreSQL connection string (a postgres:// or
// postgresql:// URL, a keyword DSN "host=… password=…", or anything a user
// passed as one) with every password replaced by "xxxxx": the password of a
// URL's user information, and the value of password and sslpassword
// parameters in a URL's query or in keyword form. It errs on the side of
// hiding too much: it never parses, so a malformed string is redacted too.
// Every place that prints or logs a database URL or DSN passes it through
// this function.
func RedactDSN(dsn string) string {
	out := dsn
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		// The user information ends at the last "@": a password may hold
		// an "@" that was not percent-encoded. Everything after the first
		// ":" before it is hidden.
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user := rest[:at]
			if name, _, hasPw := strings.Cut(user, ":"); hasPw {
				user = name + ":" + redacted
			}
			out = scheme + "://" + user + rest[at:]
		}
	}
	return secretParam.ReplaceAllString(out, "${1}${2}"+redacted)
}
