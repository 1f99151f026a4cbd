package core

import (
	"context"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ trove.ChangeService = (*Service)(nil)

// DefaultChangePoll is how often WaitChanges re-reads a store's newest Seq
// when Options.ChangePoll is 0: the bound on how late it notices a commit
// nothing told it about (another process on the same SQLite file; another
// node when the driver is no storage.VersionNotifier or its notification
// was lost).
const DefaultChangePoll = time.Second

// ListChanges returns a store's changes after p.After in Seq order (see
// trove.ChangeService). EINVALID for a negative After or a limit outside
// 1..MaxPageSize; ENOTFOUND for a store the caller cannot read.
func (s *Service) ListChanges(ctx context.Context, storeID string, p trove.ListChangesParams) (*trove.ChangeBatch, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if p.After < 0 {
		return nil, trove.Errorf(trove.EINVALID, "after must be a sequence number >= 0, got %d", p.After)
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	var head int64
	var rows []trove.MemoryVersion
	err = s.read(ctx, "ListChanges", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		if head, err = tx.StoreSeq(ctx, storeID); err != nil {
			return err
		}
		if head <= p.After {
			return nil
		}
		rows, err = tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID, AfterSeq: p.After, UpToSeq: head, Limit: limit + 1})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &trove.ChangeBatch{Changes: make([]trove.Change, 0, min(len(rows), limit)), Cursor: max(head, p.After), Head: head}
	if len(rows) > limit {
		rows = rows[:limit]
		out.More = true
		out.Cursor = rows[limit-1].Seq
	}
	for i := range rows {
		out.Changes = append(out.Changes, trove.ChangeFromVersion(&rows[i]))
	}
	return out, nil
}

// WaitChanges blocks until the store's newest Seq is above after and
// returns it (see trove.ChangeService). A write through this Service wakes
// it as soon as it commits; a commit by another node of a driver that is a
// storage.VersionNotifier, at its notification; any other commit at the
// next poll (Options.ChangePoll). ctx's own error when ctx ends first;
// EINVALID for a negative after; ENOTFOUND for a store the caller cannot
// read or that is deleted meanwhile.
func (s *Service) WaitChanges(ctx context.Context, storeID string, after int64) (int64, error) {
	pr, err := principal(ctx)
	if err != nil {
		return 0, err
	}
	if after < 0 {
		return 0, trove.Errorf(trove.EINVALID, "after must be a sequence number >= 0, got %d", after)
	}
	var timer *time.Timer
	for {
		// Take the wake-up channel before reading, so a commit between
		// the read and the select still wakes this waiter.
		wake := s.feed.wait(storeID)
		var head int64
		err := s.read(ctx, "WaitChanges", func(tx storage.Tx) error {
			if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
				return err
			}
			head, err = tx.StoreSeq(ctx, storeID)
			return err
		})
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err != nil {
			return 0, err
		}
		if head > after {
			return head, nil
		}
		if timer == nil {
			timer = time.NewTimer(s.changePoll)
			defer timer.Stop()
		} else {
			timer.Reset(s.changePoll)
		}
		select {
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// writeStore is write for a mutation of storeID's memories (or the store
// itself): once it has committed, the change feed's waiters on storeID
// are woken.
func (s *Service) writeStore(ctx context.Context, op, storeID string, fn func(storage.Tx) error) error {
	err := s.write(storage.WithWriteStore(ctx, storeID), op, fn)
	if err == nil {
		s.feed.notify(storeID)
	}
	return err
}

// feedHub wakes WaitChanges callers: one channel per store with waiters,
// closed (and forgotten) when the store changes.
type feedHub struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
	any   chan struct{} // closed at every notify (waitAny)
}

// waitAny returns a channel closed at the next notify of any key.
func (h *feedHub) waitAny() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.any == nil {
		h.any = make(chan struct{})
	}
	return h.any
}

// wait returns a channel closed at the next notify of storeID (or "").
func (h *feedHub) wait(storeID string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chans == nil {
		h.chans = map[string]chan struct{}{}
	}
	ch := h.chans[storeID]
	if ch == nil {
		ch = make(chan struct{})
		h.chans[storeID] = ch
	}
	return ch
}

// notify wakes storeID's waiters; "" wakes every waiter.
func (h *feedHub) notify(storeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.any != nil {
		close(h.any)
		h.any = nil
	}
	if storeID == "" {
		for id, ch := range h.chans {
			close(ch)
			delete(h.chans, id)
		}
		return
	}
	if ch := h.chans[storeID]; ch != nil {
		close(ch)
		delete(h.chans, storeID)
	}
}
