package trove_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// TestWatchCredential: a transient check error keeps the work going; the
// first EUNAUTHENTICATED ends the context with that error as the cause,
// which CredentialLost returns; a context ended otherwise reports no loss.
func TestWatchCredential(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	revoked := trove.Errorf(trove.EUNAUTHENTICATED, "API key k is revoked")
	ctx, cancel := trove.WatchCredential(context.Background(), time.Millisecond, func(context.Context) error {
		switch calls.Add(1) {
		case 1, 2:
			return trove.Errorf(trove.EUNAVAILABLE, "database unreachable")
		case 3:
			return nil
		}
		return revoked
	})
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch never ended the context")
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("ended after %d checks, want 4 (two transient errors and one success do not end it)", n)
	}
	if err := trove.CredentialLost(ctx); !errors.Is(err, revoked) {
		t.Fatalf("CredentialLost = %v, want %v", err, revoked)
	}
	// A context derived from the watched one reports the loss too.
	sub, subCancel := context.WithTimeout(ctx, time.Hour)
	defer subCancel()
	if err := trove.CredentialLost(sub); !errors.Is(err, revoked) {
		t.Fatalf("CredentialLost(derived) = %v", err)
	}

	// Cancelled by its owner or its parent: no loss.
	parent, parentCancel := context.WithCancel(context.Background())
	ctx2, cancel2 := trove.WatchCredential(parent, time.Hour, func(context.Context) error { return revoked })
	defer cancel2()
	if trove.CredentialLost(ctx2) != nil {
		t.Fatal("a live context reports a loss")
	}
	parentCancel()
	<-ctx2.Done()
	if err := trove.CredentialLost(ctx2); err != nil {
		t.Fatalf("parent cancelled: CredentialLost = %v", err)
	}
}
