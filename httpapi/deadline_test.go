package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// stallServices waits, in GetMemory, for the request's context to end and
// returns its error as is (a layer that does not translate it); in
// CreateMemory it records how much time the request had left.
type stallServices struct {
	trove.Services
	left chan time.Duration
}

func (s stallServices) GetMemory(ctx context.Context, _, _ string, _ trove.View) (*trove.Memory, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s stallServices) CreateMemory(ctx context.Context, _ string, _ trove.CreateMemoryParams) (*trove.Memory, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		s.left <- -1
	} else {
		s.left <- time.Until(dl)
	}
	return nil, trove.Errorf(trove.EINVALID, "recorded")
}

// TestRequestDeadline: every request's context carries Timeouts.Request;
// a request still working at its deadline is answered with the retryable
// 503 envelope, even when the layer that gave up returned the context's
// error as is; for a request with a body the deadline counts from when the
// body has arrived, not from the request's start.
func TestRequestDeadline(t *testing.T) {
	t.Parallel()
	const rt = 2 * time.Second
	left := make(chan time.Duration, 1)
	e := newEnv(t, netHTTP, func(c *httpapi.Config) {
		c.Services = stallServices{Services: c.Services, left: left}
		c.Timeouts.Request = rt
	})
	do := func(method, path string, body io.Reader) (*http.Response, string, time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, e.url+path, body)
		req.Header.Set("Authorization", "Bearer "+e.key)
		req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
		start := time.Now()
		resp, err := e.client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v after %v", method, path, err, time.Since(start))
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b), time.Since(start)
	}

	resp, body, took := do("GET", "/v1/memory_stores/memstore_x/memories/mem_x", nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Should-Retry") != "true" || !strings.Contains(body, "deadline") {
		t.Errorf("a request working past its deadline = %d (x-should-retry %q) %s, want 503 with x-should-retry: true", resp.StatusCode, resp.Header.Get("X-Should-Retry"), body)
	}
	if took < rt || took > rt+time.Second {
		t.Errorf("answered after %v, want at the %v deadline", took, rt)
	}

	// A body that takes longer than the deadline to arrive: the handler
	// still gets (nearly) the whole deadline once it is in.
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(rt + 500*time.Millisecond) // the client is slow to send
		_, _ = pw.Write([]byte(`{"path":"/a","content":"x"}`))
		pw.Close()
	}()
	resp, body, _ = do("POST", "/v1/memory_stores/memstore_x/memories", pr)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("create = %d %s, want the stub's 400", resp.StatusCode, body)
	}
	if got := <-left; got < rt/2 || got > rt {
		t.Errorf("a request whose body arrived slowly had %v left when it reached the service, want about %v", got, rt)
	}
}
