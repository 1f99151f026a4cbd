package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

// signalAuth is the server's Authenticator with a signal: authed receives
// each secret once it has been authenticated successfully.
type signalAuth struct {
	trove.Authenticator
	mu     sync.Mutex
	authed map[string]chan struct{}
}

func (a *signalAuth) wait(secret string) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.authed[secret] == nil {
		a.authed[secret] = make(chan struct{})
	}
	return a.authed[secret]
}

func (a *signalAuth) Authenticate(ctx context.Context, secret string) (*trove.Principal, error) {
	p, err := a.Authenticator.Authenticate(ctx, secret)
	if err == nil {
		ch := a.wait(secret)
		a.mu.Lock()
		select {
		case <-ch:
		default:
			close(ch)
		}
		a.mu.Unlock()
	}
	return p, err
}

// TestLiveRequestsEndWithTheirCredential (issue 22 item 1): a change
// stream (server-sent events) and a change long poll stop within seconds
// once their credential stops being valid: a session ended through the
// API, or an API key revoked by another process over the same database
// (what trove keys revoke does). The stream ends with an error event
// carrying the authentication_error envelope, the long poll with 401.
func TestLiveRequestsEndWithTheirCredential(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"stream", "long poll"} {
		for _, how := range []string{"session ended", "key revoked by another process"} {
			t.Run(form+"/"+how, func(t *testing.T) {
				t.Parallel()
				path := sqlitetest.Path(t)
				db, err := sqlite.Open(context.Background(), path, sqlite.Options{AutoMigrate: true})
				if err != nil {
					t.Fatal(err)
				}
				auth := &signalAuth{authed: map[string]chan struct{}{}}
				e := serveOn(t, netHTTP, db, func(c *httpapi.Config) {
					auth.Authenticator = c.Auth
					c.Auth = auth
					c.CredentialCheck = 20 * time.Millisecond // injected: the default is trove.DefaultCredentialCheck
				})
				st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s"})
				if err != nil {
					t.Fatal(err)
				}
				secret := e.key
				var sessionID string
				if how == "session ended" {
					se, token, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID, Access: trove.AccessReadOnly}}})
					if err != nil {
						t.Fatal(err)
					}
					secret, sessionID = token, se.ID
				}
				revoke := func() {
					if sessionID != "" {
						code, body := e.rawDo(t, "POST", "/trove/v1/sessions/"+sessionID+"/end", "")
						if code != 200 {
							t.Errorf("ending the session: %d %s", code, body)
						}
						return
					}
					other, err := sqlite.Open(context.Background(), path, sqlite.Options{})
					if err != nil {
						t.Error(err)
						return
					}
					defer other.Close()
					if err := core.New(other, core.Options{}).RevokeKey(context.Background(), e.keyID); err != nil {
						t.Errorf("revoking the key from another process: %v", err)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				type result struct{ err error }
				done := make(chan result, 1)
				c := e.clientFor(secret)
				go func() {
					if form == "stream" {
						err := c.FollowChanges(ctx, st.ID, 0, func(ch trove.Change) error { return nil }, nil)
						done <- result{err}
						return
					}
					req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/trove/v1/memory_stores/"+st.ID+"/changes?wait=4m", nil)
					req.Header.Set("Authorization", "Bearer "+secret)
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						done <- result{err}
						return
					}
					defer res.Body.Close()
					var b bytes.Buffer
					_, _ = b.ReadFrom(res.Body)
					if res.StatusCode != 401 || !strings.Contains(b.String(), "authentication_error") {
						done <- result{trove.Errorf(trove.EINTERNAL, "long poll answered %d %s", res.StatusCode, b.String())}
						return
					}
					done <- result{trove.Errorf(trove.EUNAUTHENTICATED, "%s", b.String())}
				}()
				select {
				case <-auth.wait(secret): // the request is in, authenticated
				case <-ctx.Done():
					t.Fatal("the request was never authenticated")
				}
				revoked := time.Now()
				revoke()
				var r result
				select {
				case r = <-done:
				case <-ctx.Done():
					t.Fatalf("%s still open %s after its credential ended", form, time.Since(revoked).Round(time.Millisecond))
				}
				if trove.ErrorCode(r.err) != trove.EUNAUTHENTICATED {
					t.Fatalf("%s ended with %v, want EUNAUTHENTICATED", form, r.err)
				}
				if took := time.Since(revoked); took > 5*time.Second {
					t.Fatalf("%s ended %s after its credential, want within seconds", form, took)
				}
			})
		}
	}
}
