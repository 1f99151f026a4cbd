package trove

import (
	"net/url"
	"strconv"
	"strings"
)

// ParseQuery parses a URL's raw query string whole, by the one rule every
// Trove edge that reads query strings uses (the HTTP API and the console):
//
//   - a pair that does not decode (a bad %-escape, a ";" separator, an
//     empty name) is EINVALID naming the parameter: the whole query is
//     refused, never a part of it ignored;
//   - a parameter given twice is EINVALID naming it, unless repeatable
//     (may be nil) says it is a list;
//   - an empty value ("?limit=") is kept as an empty value: what it means
//     is the reader's to say (url.Values.Get cannot tell it from absent).
//
// Unlike url.ParseQuery, it never drops a pair it cannot read.
func ParseQuery(raw string, repeatable func(name string) bool) (url.Values, error) {
	q := url.Values{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawKey, rawVal, _ := strings.Cut(pair, "=")
		key, kerr := url.QueryUnescape(rawKey)
		if kerr != nil {
			key = rawKey
		}
		name := quoteParam(key)
		switch {
		case kerr != nil:
			return nil, Errorf(EINVALID, "malformed query string: parameter name %s is not validly %%-encoded", name)
		case key == "":
			return nil, Errorf(EINVALID, "malformed query string: a parameter has no name (%s)", quoteParam(pair))
		case strings.Contains(pair, ";"):
			return nil, Errorf(EINVALID, "malformed query string: parameter %s contains \";\"; separate parameters with \"&\" and %%-encode \";\" in values as %%3B", name)
		}
		val, err := url.QueryUnescape(rawVal)
		if err != nil {
			return nil, Errorf(EINVALID, "malformed query string: the value of parameter %s is not validly %%-encoded", name)
		}
		if _, dup := q[key]; dup && (repeatable == nil || !repeatable(key)) {
			return nil, Errorf(EINVALID, "query parameter %s is given more than once; give it once", name)
		}
		q[key] = append(q[key], val)
	}
	return q, nil
}

// quoteParam quotes a parameter name or pair for an error message, cut to
// 80 bytes.
func quoteParam(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}
