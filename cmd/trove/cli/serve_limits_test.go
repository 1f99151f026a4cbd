package cli

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// TestServeStoreLimits: serve's --max-stores-per-workspace,
// --max-store-bytes and --max-versions-per-store (and their environment
// variables) reach the running server, and each limit answers the
// official Go SDK with the hosted API's 400 invalid_request_error.
func TestServeStoreLimits(t *testing.T) {
	t.Setenv("TROVE_MAX_VERSIONS_PER_STORE", "4")
	data := t.TempDir()
	s := startServe(t, "--data", data, "--max-stores-per-workspace", "2", "--max-store-bytes", "10")
	b, _ := os.ReadFile(filepath.Join(data, "api_key"))
	ctx := context.Background()
	c := anthropic.NewClient(option.WithBaseURL(s.url), option.WithAPIKey(strings.TrimSpace(string(b))), option.WithMaxRetries(0))
	want400 := func(what string, err error, words string) {
		t.Helper()
		var apierr *anthropic.Error
		if !errors.As(err, &apierr) || apierr.StatusCode != http.StatusBadRequest || apierr.Type() != "invalid_request_error" || !strings.Contains(apierr.Message, words) {
			t.Errorf("%s = %v, want a 400 invalid_request_error saying %q", what, err, words)
		}
	}
	st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "two"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "three"})
	want400("the third store", err, "limit of 2 memory stores")

	m, err := c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/a", Content: anthropic.String("123456")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/b", Content: anthropic.String("12345")})
	want400("content past 10 bytes", err, "limit of 10 bytes")
	for _, content := range []string{"1234567890", "1"} {
		if _, err := c.Beta.MemoryStores.Memories.Update(ctx, m.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: st.ID, Content: anthropic.String(content)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/b", Content: anthropic.String("b")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Beta.MemoryStores.Memories.Update(ctx, m.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: st.ID, Content: anthropic.String("2")})
	want400("a fifth version", err, "limit of 4 memory versions")
}
