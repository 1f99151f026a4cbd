// Package follow is the one follow-and-reconnect loop of a store's change
// feed. A transport (storetree over a trove.ChangeService, httpapi.Client
// over server-sent events) supplies one connection's worth of changes, a
// Conn; Run connects again after a failure, with a growing pause, from the
// last Seq delivered, so that every change is delivered once and in order.
package follow

import (
	"context"
	"time"

	"github.com/trovehq/trove"
)

// The pause before a reconnect starts at MinBackoff after a connection
// that was live, doubles after each connection that failed before going
// live, and stays at MaxBackoff at most.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 5 * time.Second
)

// A Conn reads one connection of a feed: it connects after f.After(),
// calls f.Live once the connection is up, hands every change it reads to
// f.Deliver in Seq order (and f.Advance when its cursor moves past Seqs
// without a change), and returns when the connection ends, with why (nil
// counts as a dropped connection). It must return once f.Deliver returns
// an error, and when ctx ends.
type Conn func(ctx context.Context, f *Feed) error

// Feed is a follow's state, handed to each Conn.
type Feed struct {
	after     int64
	fn        func(trove.Change) error
	fnErr     error
	live      bool
	connected func(bool)
}

// After returns the Seq to connect after: the last change delivered, or
// the cursor Advance moved to.
func (f *Feed) After() int64 { return f.after }

// Live reports that the connection is up (once or more per connection):
// the first call of a connection tells connected(true).
func (f *Feed) Live() {
	if !f.live {
		f.live = true
		f.connected(true)
	}
}

// Deliver calls fn with c unless c is not after After (a connection that
// repeats what was delivered), then advances After to c.Seq. It returns
// fn's error, and the same error again without calling fn once fn failed:
// the Conn then returns, and Run returns that error as is.
func (f *Feed) Deliver(c trove.Change) error {
	if f.fnErr != nil {
		return f.fnErr
	}
	if c.Seq <= f.after {
		return nil
	}
	if err := f.fn(c); err != nil {
		f.fnErr = err
		return err
	}
	f.after = c.Seq
	return nil
}

// Advance moves After up to seq (a page's cursor past Seqs that carried no
// change); it never moves it back.
func (f *Feed) Advance(seq int64) { f.after = max(f.after, seq) }

// Run calls fn with every change after `after`, in Seq order, each once,
// reading the feed through conn, until ctx ends (ctx's error), fn fails
// (its error, as is) or a connection ends with an error that reconnecting
// cannot change: ENOTFOUND (errors.ErrUnsupported with it when there is no
// feed), EUNAUTHENTICATED, EFORBIDDEN, EINVALID. Any other end is followed
// by a pause (MinBackoff to MaxBackoff) and a new connection after the
// last Seq delivered. connected, when not nil, is called with true when a
// connection goes live and with false when a live connection ends.
func Run(ctx context.Context, after int64, conn Conn, fn func(trove.Change) error, connected func(bool)) error {
	return run(ctx, after, conn, fn, connected, sleep)
}

// run is Run with the pause injected: wait returns after d, or ctx's
// error when ctx ends first.
func run(ctx context.Context, after int64, conn Conn, fn func(trove.Change) error, connected func(bool), wait func(context.Context, time.Duration) error) error {
	if connected == nil {
		connected = func(bool) {}
	}
	f := &Feed{after: after, fn: fn, connected: connected}
	backoff := MinBackoff
	for {
		err := conn(ctx, f)
		wasLive := f.live
		if f.live {
			f.live = false
			f.connected(false)
		}
		if f.fnErr != nil {
			return f.fnErr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch trove.ErrorCode(err) {
		case trove.ENOTFOUND, trove.EUNAUTHENTICATED, trove.EFORBIDDEN, trove.EINVALID:
			return err
		}
		if wasLive {
			backoff = MinBackoff
		}
		if err := wait(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
