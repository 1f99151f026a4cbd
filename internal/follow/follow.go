// Package follow is the one follow-and-reconnect loop of a feed: items in
// Seq order, read over connections that can drop. Its users are a store's
// change feed (storetree over a trove.ChangeService, httpapi.Client's
// server-sent events) and a session's event stream
// (httpapi.Client.FollowEvents). A transport supplies one connection's
// worth of items, a Conn; Run connects again after a failure, with a
// growing pause, from the last Seq delivered, so that every item is
// delivered once and in order.
package follow

import (
	"context"
	"errors"
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

// ErrEnded is what a Conn returns (as is or wrapped) when the feed itself
// has ended, not only its connection (a session's event stream, closed by
// the server once the session ended): there is nothing more to follow,
// and Run returns nil.
var ErrEnded = errors.New("follow: the feed ended")

// A Conn reads one connection of a feed: it connects after f.After(),
// calls f.Live once the connection is up, hands every item it reads to
// f.Deliver in Seq order (and f.Advance when its cursor moves past Seqs
// without an item), and returns when the connection ends, with why: nil
// counts as a dropped connection, ErrEnded as the end of the feed. It must
// return once f.Deliver returns an error, and when ctx ends.
type Conn[T any] func(ctx context.Context, f *Feed[T]) error

// Feed is a follow's state, handed to each Conn.
type Feed[T any] struct {
	after     int64
	fn        func(T) error
	fnErr     error
	live      bool
	connected func(bool)
}

// After returns the Seq to connect after: the last item delivered, or the
// cursor Advance moved to. It is below 0 only while the after Run was
// given is and nothing moved it: what that means (FollowEvents: from
// wherever the stream starts) is the Conn's to know.
func (f *Feed[T]) After() int64 { return f.after }

// Live reports that the connection is up (once or more per connection):
// the first call of a connection tells connected(true).
func (f *Feed[T]) Live() {
	if !f.live {
		f.live = true
		f.connected(true)
	}
}

// Deliver calls fn with v, the item at Seq seq, unless seq is not after
// After (a connection that repeats what was delivered), then advances
// After to seq. It returns fn's error, and the same error again without
// calling fn once fn failed: the Conn then returns, and Run returns that
// error as is.
func (f *Feed[T]) Deliver(seq int64, v T) error {
	if f.fnErr != nil {
		return f.fnErr
	}
	if seq <= f.after {
		return nil
	}
	if err := f.fn(v); err != nil {
		f.fnErr = err
		return err
	}
	f.after = seq
	return nil
}

// Advance moves After up to seq (a page's cursor past Seqs that carried no
// item, a stream's starting position); it never moves it back.
func (f *Feed[T]) Advance(seq int64) { f.after = max(f.after, seq) }

// Run calls fn with every item after Seq `after`, in Seq order, each once,
// reading the feed through conn, until ctx ends (ctx's error), fn fails
// (its error, as is), the feed ends (a connection returned ErrEnded: nil)
// or a connection ends with an error that reconnecting cannot change:
// ENOTFOUND (errors.ErrUnsupported with it when there is no feed),
// EUNAUTHENTICATED, EFORBIDDEN, EINVALID. Any other end is followed by a
// pause (MinBackoff to MaxBackoff) and a new connection after the last Seq
// delivered. connected, when not nil, is called with true when a
// connection goes live and with false when a live connection ends.
func Run[T any](ctx context.Context, after int64, conn Conn[T], fn func(T) error, connected func(bool)) error {
	return run(ctx, after, conn, fn, connected, sleep)
}

// run is Run with the pause injected: wait returns after d, or ctx's
// error when ctx ends first.
func run[T any](ctx context.Context, after int64, conn Conn[T], fn func(T) error, connected func(bool), wait func(context.Context, time.Duration) error) error {
	if connected == nil {
		connected = func(bool) {}
	}
	f := &Feed[T]{after: after, fn: fn, connected: connected}
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
		if errors.Is(err, ErrEnded) {
			return nil
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
