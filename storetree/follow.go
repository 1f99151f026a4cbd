package storetree

import (
	"context"
	"errors"
	"time"

	"github.com/trovehq/trove"
)

// ChangeFollower is implemented by change services that can stream a
// store's changes themselves (httpapi.Client: server-sent events that
// reconnect from the last Seq); Follow prefers it.
type ChangeFollower interface {
	FollowChanges(ctx context.Context, storeID string, after int64, fn func(trove.Change) error, connected func(bool)) error
}

// FeedHead returns the store's newest Seq: following after it yields only
// what comes next.
func FeedHead(ctx context.Context, cs trove.ChangeService, storeID string) (int64, error) {
	b, err := cs.ListChanges(ctx, storeID, trove.ListChangesParams{Limit: 1})
	if err != nil {
		return 0, err
	}
	return b.Head, nil
}

// Follow calls fn with every change of storeID after `after`, in Seq
// order, each once, until ctx ends (ctx's error), fn fails (its error) or
// the feed answers something waiting cannot change (ENOTFOUND, with
// errors.ErrUnsupported when the service offers no feed;
// EUNAUTHENTICATED; EFORBIDDEN; EINVALID). Other failures (a server
// unreachable for a while) are retried from the last delivered Seq, after
// a pause growing from 100 ms to 5 s. connected, when not nil, is told
// when the feed is live (true) and when it is lost (false). It uses the
// service's own stream when it is a ChangeFollower, else WaitChanges and
// ListChanges.
func Follow(ctx context.Context, cs trove.ChangeService, storeID string, after int64, fn func(trove.Change) error, connected func(bool)) error {
	if f, ok := cs.(ChangeFollower); ok {
		return f.FollowChanges(ctx, storeID, after, fn, connected)
	}
	if connected == nil {
		connected = func(bool) {}
	}
	up := false
	set := func(v bool) {
		if v != up {
			up = v
			connected(v)
		}
	}
	defer set(false)
	backoff := 100 * time.Millisecond
	for {
		err := followOnce(ctx, cs, storeID, &after, fn, set)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fe *fnError
		if errors.As(err, &fe) {
			return fe.err
		}
		switch trove.ErrorCode(err) {
		case trove.ENOTFOUND, trove.EUNAUTHENTICATED, trove.EFORBIDDEN, trove.EINVALID:
			return err
		}
		set(false)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }

func followOnce(ctx context.Context, cs trove.ChangeService, storeID string, after *int64, fn func(trove.Change) error, set func(bool)) error {
	for {
		b, err := cs.ListChanges(ctx, storeID, trove.ListChangesParams{After: *after, Limit: 100})
		if err != nil {
			return err
		}
		set(true)
		for _, c := range b.Changes {
			if c.Seq <= *after {
				continue
			}
			if err := fn(c); err != nil {
				return &fnError{err}
			}
			*after = c.Seq
		}
		*after = max(*after, b.Cursor)
		if b.More {
			continue
		}
		if _, err := cs.WaitChanges(ctx, storeID, *after); err != nil {
			return err
		}
	}
}
