package core

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ trove.EventWaiter = (*Service)(nil)

// notifiedEventPoll is how often WaitEvents re-reads a session when the
// driver is a storage.EventNotifier: only a safety net, since every commit
// on any node is notified.
const notifiedEventPoll = 30 * time.Second

// WaitEvents blocks until the session's transcript holds an event with Seq
// > after, or the session has ended, and returns the newest Seq (see
// trove.EventWaiter). An append through this Service wakes it as soon as it
// commits; a commit by another node of a driver that is a
// storage.EventNotifier, at its notification; any other commit at the next
// poll (Options.ChangePoll; with a notifier, only every 30 s as a safety
// net). A waiter costs one channel in a map while it waits: no goroutine
// and no database read until something happens. Each poll is jittered by
// ±25 %, so that many waiters that started together (a thousand streams
// opened at once) do not all read at the same instant.
// ENOTFOUND once the session is deleted.
func (s *Service) WaitEvents(ctx context.Context, sessionID string, after int64) (int64, error) {
	pr, err := principal(ctx)
	if err != nil {
		return 0, err
	}
	if pr.Session != nil && pr.Session.SessionID != sessionID {
		return 0, trove.Errorf(trove.EFORBIDDEN, "a session credential can only read its own session's events")
	}
	if after < 0 {
		return 0, trove.Errorf(trove.EINVALID, "after must be a sequence number >= 0, got %d", after)
	}
	var timer *time.Timer
	for {
		// Take the wake-up channel before reading, so a commit between the
		// read and the select still wakes this waiter.
		wake := s.events.wait(sessionID)
		var head int64
		var ended bool
		err := s.read(ctx, "WaitEvents", func(tx storage.Tx) error {
			se, err := tx.SessionGet(ctx, pr.WorkspaceID, sessionID)
			if err != nil {
				return err
			}
			ended = se.EndedAt != nil
			last, err := tx.EventList(ctx, storage.EventListParams{SessionID: sessionID, Desc: true, Limit: 1})
			if err != nil {
				return err
			}
			if len(last) > 0 {
				head = last[0].Seq
			}
			return nil
		})
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err != nil {
			return 0, err
		}
		if head > after || ended {
			return head, nil
		}
		if timer == nil {
			timer = time.NewTimer(jitter(s.eventPoll))
			defer timer.Stop()
		} else {
			timer.Reset(jitter(s.eventPoll))
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// jitter returns d ± 25 %, at random.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}
