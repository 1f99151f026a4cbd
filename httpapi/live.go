package httpapi

import (
	"context"
	"net/http"

	"github.com/trovehq/trove"
)

// Long-lived requests (server-sent event streams, long polls) act for
// their credential for as long as they last, so they re-check it: see
// trove.WatchCredential for the rule. Every such handler does
//
//	ctx, done := s.liveCredential(r)
//	defer done()
//	… wait on ctx (never on r.Context()) …
//	if err := trove.CredentialLost(ctx); err != nil {
//		// before the response started: return err (the 401 envelope);
//		// in a stream: s.sendStreamError(send, w, r, err) and return.
//	}
//
// The check is the request's own authentication again (its Authorization
// or x-api-key header through Config.Auth), every Config.CredentialCheck:
// a revoked API key, an ended session or an expired console session ends
// the request within that interval plus the authenticator's cache TTL
// (core's Options.AuthCacheTTL; trove serve's --auth-cache).

// liveCredential returns r's context, ended with the credential's error
// as its cause (trove.CredentialLost) as soon as a re-check of r's
// credential fails; done releases the watcher. For a request without a
// principal (a public route) it returns r's context as is.
func (s *Server) liveCredential(r *http.Request) (ctx context.Context, done context.CancelFunc) {
	if trove.PrincipalFrom(r.Context()) == nil || s.auth == nil {
		return context.WithCancel(r.Context())
	}
	return trove.WatchCredential(r.Context(), s.credCheck, func(ctx context.Context) error {
		_, err := s.authenticate(r.WithContext(ctx))
		return err
	})
}
