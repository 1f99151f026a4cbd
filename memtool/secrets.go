package memtool

import "regexp"

// secretPatterns are checked in order; the first match names the kind.
// They target credentials with a recognisable shape, so that ordinary
// prose is never refused.
var secretPatterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"a PEM private key", regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----`)},
	{"an AWS access key ID", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"an Anthropic API key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`)},
	{"an OpenAI API key", regexp.MustCompile(`\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`)},
	{"a GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`)},
	{"a Slack token", regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{10,}`)},
	{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
}

// DetectSecret is the default write filter. It reports the kind of the first
// obvious secret in text ("an AWS access key ID", ...) or "" if none: PEM
// private keys, AWS access key IDs (AKIA/ASIA), Anthropic keys (sk-ant-),
// OpenAI keys (sk-, sk-proj-), GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_,
// github_pat_), Slack tokens (xox?-) and Google API keys (AIza).
func DetectSecret(text string) string {
	for _, p := range secretPatterns {
		if p.re.MatchString(text) {
			return p.kind
		}
	}
	return ""
}
