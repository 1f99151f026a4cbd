package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
)

// TestLongWebhooksSurviveKill9: kill -9 of a real trove serve while it is
// delivering a webhook (the receiver holds the request); after a restart
// over the same data, every event arrives, in order, each verified by the
// official SDK's Unwrap and once by webhook-id (the interrupted one is
// sent again with the same ID), including those made after the restart.
func TestLongWebhooksSurviveKill9(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	bin := buildTrove(t)
	data := t.TempDir()

	var mu sync.Mutex
	var secret string
	var ids, stores []string
	seen := map[string]bool{}
	posts := 0
	reached, hold := make(chan struct{}), make(chan struct{})
	holdNext := false
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		wait := holdNext
		holdNext = false
		key := secret
		mu.Unlock()
		if wait {
			close(reached)
			<-hold
			return // the sender is dead by now
		}
		client := anthropic.NewClient(option.WithWebhookKey(key), option.WithAPIKey("unused"))
		ev, err := client.Beta.Webhooks.Unwrap(body, r.Header)
		if err != nil {
			t.Errorf("Unwrap: %v", err)
			w.WriteHeader(400)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		posts++
		if !seen[ev.ID] {
			seen[ev.ID] = true
			ids = append(ids, ev.ID)
			stores = append(stores, ev.Data.ID)
		}
	}))
	defer recv.Close()
	defer func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	}()

	flags := []string{"--webhook-allow-http", "--webhook-allow-private", "--webhook-lease", "2s", "--webhook-timeout", "1s"}
	cmd, url := startServeProcess(t, bin, data, flags...)
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	b, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	ctx := context.Background()
	sdk := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey(key))
	h, err := sdk.Beta.Organization.Webhooks.New(ctx, anthropic.BetaOrganizationWebhookNewParams{
		URL: recv.URL + "/hook", EnabledEvents: []string{"memory_store.created"}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	secret = h.SigningSecret
	mu.Unlock()
	var want []string
	mkStore := func(c anthropic.Client) {
		st, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, st.ID)
	}
	mkStore(sdk)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(ids) == 1 })
	mu.Lock()
	holdNext = true
	mu.Unlock()
	for range 4 {
		mkStore(sdk)
	}
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the second delivery never reached the receiver")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	close(hold)

	cmd2, url2 := startServeProcess(t, bin, data, flags...)
	defer func() { cmd2.Process.Kill(); cmd2.Wait() }()
	sdk2 := anthropic.NewClient(option.WithBaseURL(url2), option.WithAPIKey(key))
	mkStore(sdk2)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(ids) == len(want) })
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, stores); diff != "" {
		t.Fatalf("stores announced (-want +got):\n%s", diff)
	}
	if posts != len(want) {
		t.Errorf("%d verified posts for %d events", posts, len(want))
	}
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
