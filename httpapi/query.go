package httpapi

import (
	"net/http"
	"net/url"

	"github.com/trovehq/trove"
)

// Query strings. Every request's query is parsed whole, once, by
// parseQuery (dispatch does it before any handler runs, for every route),
// and handlers read the result through queryOf: no handler calls
// r.URL.Query, which treats an empty value as absent and silently drops
// pairs it cannot parse.
//
// The rules, the same on every endpoint:
//   - a pair that does not decode (a bad %-escape, a ";" separator, an
//     empty name) is EINVALID naming the parameter: the whole request is
//     refused, never a part of its query ignored;
//   - a parameter given twice is EINVALID naming it, except the few that
//     are lists by design (repeatableParams);
//   - an empty value ("?limit=") means the same as leaving the parameter
//     out, except for preconditions (queryPrecondition): a client that
//     sends one must get it applied or refused, never dropped;
//   - parameters an endpoint does not know are ignored (the official SDKs
//     may add some), except where an endpoint refuses them itself.

// repeatableParams are the query parameters that are lists: they may be
// given several times. Every other one at most once.
var repeatableParams = map[string]bool{
	"store_id":   true, // /trove/v1/search: several stores
	"statuses[]": true, // /v1/dreams: the SDK's bracketed list
	"statuses":   true,
	"types[]":    true, // /v1/sessions/{id}/events: the SDK's bracketed list of event types
	"types":      true,
}

// parseQuery parses raw (a URL's RawQuery) by the rules above
// (trove.ParseQuery, the console's rule too).
func parseQuery(raw string) (url.Values, error) {
	return trove.ParseQuery(raw, func(name string) bool { return repeatableParams[name] })
}

// emptyQuery is the parsed value of an absent query; never written to.
var emptyQuery = url.Values{}

// queryOf returns r's query as dispatch parsed it (parseQuery). Outside
// dispatch (a handler called directly) it parses r's query itself; a
// malformed query then reads as empty, which only dispatch may allow
// itself after checking it.
func queryOf(w http.ResponseWriter, r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return emptyQuery
	}
	if rec, ok := w.(*recorder); ok && rec.query != nil {
		return rec.query
	}
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return emptyQuery
	}
	return q
}

// queryPrecondition reads a precondition parameter that must be a SHA-256
// (64 lowercase hexadecimal digits) when present: "" when absent, and
// EINVALID when present with any other value, empty included. A
// precondition is never dropped: a client that sends one and got an
// unconditional change would lose data.
func queryPrecondition(q url.Values, name string) (string, error) {
	vs, ok := q[name]
	if !ok {
		return "", nil
	}
	v := vs[0]
	if !validSHA256(v) {
		if v == "" {
			return "", trove.Errorf(trove.EINVALID, "%s is empty: give the 64 lowercase hexadecimal characters of the expected SHA-256, or leave the parameter out for an unconditional request", name)
		}
		return "", shaError(name, v)
	}
	return v, nil
}
