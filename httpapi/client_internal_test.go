package httpapi

import (
	"net/http"
	"testing"
)

// TestClientKeepsIdleConns checks that the default HTTP client keeps enough
// idle connections for concurrent callers: with net/http's default of two,
// an MCP server running 16 tool calls at once opened a new connection for
// most requests (140 connects for 1,100 tool calls in BenchmarkMCPEdits).
func TestClientKeepsIdleConns(t *testing.T) {
	t.Parallel()
	c := NewClient("http://127.0.0.1:1", "key")
	tr, ok := c.http.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("default transport is %T, want *http.Transport", c.http.Transport)
	}
	if tr.MaxIdleConnsPerHost != MaxIdleConnsPerHost || MaxIdleConnsPerHost < 16 {
		t.Errorf("MaxIdleConnsPerHost = %d (const %d), want the const, at least 16", tr.MaxIdleConnsPerHost, MaxIdleConnsPerHost)
	}
	if tr.Proxy == nil || tr.TLSHandshakeTimeout == 0 {
		t.Error("the transport lost net/http's defaults (proxy from the environment, TLS handshake timeout)")
	}
}
