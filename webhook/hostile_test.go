package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/webhook"
)

func send(url string) *core.WebhookSend {
	return &core.WebhookSend{URL: url, Secret: "whsec_c2VjcmV0Cg==", Delivery: trove.WebhookDelivery{EventID: "whe_1", Payload: []byte(`{}`)}}
}

// TestHostileEndpoints: what an endpoint answers or does cannot hold the
// sender or steer it elsewhere: redirects are not followed, a huge body is
// not read, a silent endpoint times out, and without AllowPrivate no
// connection reaches a loopback address; none of it leaks the URL's query.
func TestHostileEndpoints(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(target.Close)
	var written atomic.Int64
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, target.URL+"/x", http.StatusFound)
		case "/huge":
			w.WriteHeader(http.StatusOK)
			buf := make([]byte, 64<<10)
			for range 1 << 10 { // up to 64 MiB
				n, err := w.Write(buf)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		case "/silent":
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		case "/ok":
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	open := webhook.New(webhook.Config{AllowPrivate: true, AllowHTTP: true, Timeout: 500 * time.Millisecond})
	strict := webhook.New(webhook.Config{AllowHTTP: true, Timeout: 500 * time.Millisecond})
	httpsOnly := webhook.New(webhook.Config{AllowPrivate: true, Timeout: 500 * time.Millisecond})
	tests := []struct {
		name       string
		s          *webhook.Sender
		path       string
		wantStatus int
		wantErr    string // substring; "" for success
	}{
		{"success", open, "/ok", 202, ""},
		{"redirect not followed", open, "/redirect", 302, "redirect, not followed"},
		{"huge body not read", open, "/huge", 200, ""},
		{"silent endpoint times out", open, "/silent", 0, "no answer within 500ms"},
		{"loopback refused at dial time", strict, "/ok", 0, "private, loopback or link-local"},
		{"http refused", httpsOnly, "/ok", 0, "not an https URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.s.Attempt(context.Background(), send(srv.URL+tc.path+"?token=SECRET-TOKEN"))
			if a.Status != tc.wantStatus || (tc.wantErr == "") != (a.Err == "") || !strings.Contains(a.Err, tc.wantErr) {
				t.Errorf("attempt = %+v, want status %d and error containing %q", a, tc.wantStatus, tc.wantErr)
			}
			if strings.Contains(a.Err, "SECRET-TOKEN") || strings.Contains(a.Err, "whsec_") {
				t.Errorf("the error leaks the URL or the secret: %q", a.Err)
			}
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
	if n := written.Load(); n >= 64<<20 {
		t.Errorf("the huge body was read whole (%d bytes)", n)
	}
}

// TestURLRules: without --webhook-allow-http/-private an endpoint must be
// an https URL of a public host; refusals say why.
func TestURLRules(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		svc := core.New(e.open(), core.Options{Now: e.clk.Now})
		tests := []struct{ url, want string }{
			{"https://example.com/hook", ""},
			{"https://hooks.example.com:8443/a?b=c", ""},
			{"http://example.com/hook", "must use https"},
			{"https://127.0.0.1/hook", "private"},
			{"https://localhost:9000/hook", "private"},
			{"https://[::1]/hook", "private"},
			{"https://10.1.2.3/hook", "private"},
			{"https://169.254.169.254/latest", "private"},
			{"https://[::ffff:192.168.0.1]/", "private"},
			{"https://user:pw@example.com/", "credentials"},
			{"ftp://example.com/", "must use https"},
			{"/relative", "absolute"},
			{"", "url is required"},
			{"https://example.com/#frag", "fragment"},
		}
		for _, tc := range tests {
			_, _, err := svc.CreateWebhook(e.ctx, trove.CreateWebhookParams{URL: tc.url, EnabledEvents: []string{"memory_store.created"}})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%q refused: %v", tc.url, err)
			case tc.want != "" && (trove.ErrorCode(err) != trove.EINVALID || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%q: %v, want EINVALID saying %q", tc.url, err, tc.want)
			}
		}
		for _, ev := range [][]string{nil, {"memory_store.exploded"}} {
			if _, _, err := svc.CreateWebhook(e.ctx, trove.CreateWebhookParams{URL: "https://example.com/", EnabledEvents: ev}); trove.ErrorCode(err) != trove.EINVALID {
				t.Errorf("events %v: %v, want EINVALID", ev, err)
			}
		}
	})
}

// TestDeleteAndRekey: a regenerated secret signs every later attempt (the
// receiver verifies with the new one); a deleted endpoint gets nothing
// more, even what was queued for it.
func TestDeleteAndRekey(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		r := newReceiver(t)
		h := e.hook(r, trove.HookMemoryStoreCreated)
		secret, err := e.svc.RegenerateWebhookSecret(e.ctx, h.ID)
		if err != nil || !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("RegenerateWebhookSecret = %q, %v", secret, err)
		}
		r.set(func(r *receiver) { r.secret = secret })
		if _, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "a"}); err != nil {
			t.Fatal(err)
		}
		s := newSender(e.svc, "n1")
		drain(t, s)
		if len(r.types()) != 1 {
			t.Fatalf("received %v, want the one event signed with the new secret", r.types())
		}
		r.set(func(r *receiver) { r.down = true })
		if _, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "b"}); err != nil {
			t.Fatal(err)
		}
		drain(t, s) // fails, waits for its retry
		if err := e.svc.DeleteWebhook(e.ctx, h.ID); err != nil {
			t.Fatal(err)
		}
		r.set(func(r *receiver) { r.down = false })
		e.clk.Add(time.Hour)
		drain(t, s)
		if len(r.types()) != 1 {
			t.Fatalf("a deleted endpoint received %v", r.types())
		}
		if _, err := e.svc.GetWebhook(e.ctx, h.ID); trove.ErrorCode(err) != trove.ENOTFOUND {
			t.Errorf("get after delete: %v", err)
		}
	})
}

// TestDeleteMidAttempt: an endpoint deleted while an attempt is in flight
// ends its sender's claim quietly, and nothing more is sent to it.
func TestDeleteMidAttempt(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		r := newReceiver(t)
		h := e.hook(r, trove.HookMemoryStoreCreated)
		for range 2 {
			if _, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "a"}); err != nil {
				t.Fatal(err)
			}
		}
		release, held := make(chan struct{}), make(chan string, 1)
		r.set(func(r *receiver) { r.hold, r.held = release, held })
		s := newSender(e.svc, "n1")
		done := make(chan error, 1)
		go func() {
			_, err := s.RunOnce(context.Background())
			done <- err
		}()
		<-held
		if err := e.svc.DeleteWebhook(e.ctx, h.ID); err != nil {
			t.Fatal(err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("the sender's claim ended with %v", err)
		}
		drain(t, s)
		if r.posts != 1 {
			t.Errorf("%d posts; want only the one in flight at the delete", r.posts)
		}
	})
}
