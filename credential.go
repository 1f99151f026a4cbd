package trove

import (
	"context"
	"errors"
	"time"
)

// The rule for long-lived work: every stream, long poll and background job
// acting for a principal re-checks, at least every few seconds, that the
// credential it acts with (API key, session token, console session, or the
// key of the user a job runs for) is still valid, and stops with that
// credential's error when it is not. WatchCredential is the one mechanism;
// httpapi's long-lived handlers and the dream runner use it.

// DefaultCredentialCheck is how often long-lived work re-checks its
// credential unless configured otherwise. With a credential cache of TTL
// in front of the check (core's Options.AuthCacheTTL), a revocation made
// by another process stops the work within DefaultCredentialCheck + TTL.
const DefaultCredentialCheck = time.Second

// credentialLost is the cancellation cause WatchCredential sets.
type credentialLost struct{ err error }

func (c *credentialLost) Error() string { return c.err.Error() }
func (c *credentialLost) Unwrap() error { return c.err }

// WatchCredential returns a context derived from ctx that WatchCredential
// cancels, with the check's error as its cause, as soon as check reports
// that the credential is no longer valid: an error with code
// EUNAUTHENTICATED or EFORBIDDEN. check runs every `every` (0 or less:
// DefaultCredentialCheck), first one interval after the call (the caller
// has just authenticated), never concurrently with itself, and gets the
// returned context; any other error from it (the database is unreachable)
// is transient: the work goes on and the next tick checks again.
//
// Long-lived work waits on the returned context and, when it ends, asks
// CredentialLost whether that was the reason (then it stops with that
// error, in its interface's convention) or something else (the client
// left, shutdown). cancel releases the watcher; call it when the work ends.
func WatchCredential(ctx context.Context, every time.Duration, check func(context.Context) error) (_ context.Context, cancel context.CancelFunc) {
	if every <= 0 {
		every = DefaultCredentialCheck
	}
	wctx, cancelCause := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			err := check(wctx)
			switch ErrorCode(err) {
			case EUNAUTHENTICATED, EFORBIDDEN:
				cancelCause(&credentialLost{err})
				return
			}
		}
	}()
	return wctx, func() { cancelCause(context.Canceled) }
}

// CredentialLost returns the credential's error (EUNAUTHENTICATED or
// EFORBIDDEN) when ctx, or a context it derives from, was ended by
// WatchCredential because the credential stopped being valid; nil
// otherwise (ctx still live, or ended for another reason).
func CredentialLost(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	var cl *credentialLost
	if errors.As(context.Cause(ctx), &cl) {
		return cl.err
	}
	return nil
}
