package storetree

import (
	"context"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/follow"
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
// ListChanges; either way the loop is internal/follow's.
func Follow(ctx context.Context, cs trove.ChangeService, storeID string, after int64, fn func(trove.Change) error, connected func(bool)) error {
	if f, ok := cs.(ChangeFollower); ok {
		return f.FollowChanges(ctx, storeID, after, fn, connected)
	}
	return follow.Run(ctx, after, func(ctx context.Context, f *follow.Feed[trove.Change]) error {
		return pollOnce(ctx, cs, storeID, f)
	}, fn, connected)
}

// pollOnce is one connection of a feed read with ListChanges and
// WaitChanges: it is live once a page is read, and lasts until a call
// fails.
func pollOnce(ctx context.Context, cs trove.ChangeService, storeID string, f *follow.Feed[trove.Change]) error {
	for {
		b, err := cs.ListChanges(ctx, storeID, trove.ListChangesParams{After: f.After(), Limit: 100})
		if err != nil {
			return err
		}
		f.Live()
		for _, c := range b.Changes {
			if err := f.Deliver(c.Seq, c); err != nil {
				return err
			}
		}
		f.Advance(b.Cursor)
		if b.More {
			continue
		}
		if _, err := cs.WaitChanges(ctx, storeID, f.After()); err != nil {
			return err
		}
	}
}
